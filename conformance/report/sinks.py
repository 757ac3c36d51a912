"""Result sinks: the contract a sink keeps, and the built-in ones (the JSONL results file, Allure).

The built-in sinks reach a run the way a plugin's sink does, through ``conformance_register_sinks``
(:mod:`conformance.extension.builtin`); the run's session (:class:`conformance.session.RunSession`) only calls the
sinks the hook gave it, in their order, and a sink that raises fails the run as a results file that cannot be
written would.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Protocol

from . import allure as allure_report
from ..results.store import ResultsWriter

if TYPE_CHECKING:
    import pytest

    from ..suite.model import CaseResult


@dataclass(frozen=True)
class SinkContext:
    """What a sink factory may look at when a run starts."""

    # the run's pytest options (``config.getoption``), e.g. Allure's --alluredir; None for a run outside pytest
    # (``conformance semantic``, ``conformance explore``): a sink that needs options declines (returns None)
    config: pytest.Config | None
    results_path: Path
    run_id: str


@dataclass(frozen=True)
class RunEnd:
    """What a sink's ``finish`` gets: ``environment()`` reads the run's description back from the results."""

    results_path: Path
    run_id: str
    environment: Callable[[], dict[str, object]]


class Sink(Protocol):
    """Where results go; the run's session calls every sink of the run, in registration order."""

    def record(self, result: CaseResult, line: dict) -> None:
        """``line`` is the result's line in the results file (the JSONL sink writes it)."""

    def finish(self, end: RunEnd) -> None: ...


class JsonlSink:
    """Appends each result's line to the results file (:mod:`conformance.results.store`)."""

    def __init__(self, context: SinkContext):
        self.writer = ResultsWriter(context.results_path)

    def record(self, result: CaseResult, line: dict) -> None:
        self.writer.append(line)

    def finish(self, end: RunEnd) -> None:
        return None  # every line is on disk the moment it is recorded


class AllureSink:
    """Attaches each result to its Allure test, and writes the run's environment and categories at the end."""

    def __init__(self, context: SinkContext):
        self.directory = allure_report.results_directory(context.config)

    @classmethod
    def when_enabled(cls, context: SinkContext) -> AllureSink | None:
        return cls(context) if allure_report.enabled(context.config) else None

    def record(self, result: CaseResult, line: dict) -> None:
        # the items whose results line keeps its exchanges (--transcripts) keep them in Allure too
        allure_report.attach_result(result, transcript=bool(line.get("transcript")))

    def finish(self, end: RunEnd) -> None:
        if self.directory is None:  # enabled, yet no folder: nothing to write into
            return
        allure_report.write_environment(self.directory, end.environment())
        allure_report.write_categories(self.directory)
