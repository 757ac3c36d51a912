"""Outputs: where a run's results go. The contract an output keeps, and the built-in live ones (the JSONL results
file, Allure); the formats written at the run's end (JUnit XML, SARIF) are :class:`FileOutput` subclasses in their
own modules.

Rules:

- An output is a class with a ``name``, the command-line ``options`` it takes (:class:`OutputOption`) and
  ``open(context)``, which returns the run's :class:`Sink` or None when the options do not ask for it.
- Every output reaches a run the same way, through ``conformance_register_outputs``
  (:mod:`conformance.extension.builtin` registers the built-in ones); its options are added to every command that
  runs suites (``conformance run``, ``semantic``, ``explore``) and to pytest, and reach it as
  ``SinkContext.options``, whichever entry point runs, pytest or not.
- The run's session (:class:`conformance.session.RunSession`) calls the sinks in registration order (the results
  file first, so an output written at the end reads every line back); a sink that raises fails the run as a
  results file that cannot be written would.
- What a result is to a CI system is :func:`conformance.report.ci.ci_result`, for every format.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Protocol

from . import allure as allure_report
from ..results.store import ResultsWriter

if TYPE_CHECKING:
    from ..results.record import ResultRecord
    from ..suite.model import CaseResult


@dataclass(frozen=True)
class SinkContext:
    """What an output's ``open`` may look at when a run starts."""

    results_path: Path
    run_id: str
    # the run's options by destination name, the same under pytest (its options, Allure's ``allure_report_dir``
    # included) and outside it (the command's): an output that is not asked for declines (``open`` returns None)
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunEnd:
    """What a sink's ``finish`` gets: ``environment()`` reads the run's description back from the results,
    ``records()`` the run's results (every process's, under pytest-xdist)."""

    results_path: Path
    run_id: str
    environment: Callable[[], dict[str, object]]
    records: Callable[[], list[ResultRecord]]


class Sink(Protocol):
    """Where results go; the run's session calls every sink of the run, in registration order."""

    def record(self, result: CaseResult, line: dict) -> None:
        """``line`` is the result's line in the results file (the JSONL sink writes it)."""

    def finish(self, end: RunEnd) -> None: ...


@dataclass(frozen=True)
class OutputOption:
    """One command-line option of an output: ``--sarif FILE``. Its value is ``context.options[dest]``."""

    flag: str
    help: str
    metavar: str = "FILE"

    @property
    def dest(self) -> str:
        """The option's name in ``context.options``: ``--sarif`` is ``sarif``, ``--outcome-counts`` ``outcome_counts``."""
        return self.flag.lstrip("-").replace("-", "_")


class Output:
    """The base of an output: a sink that records nothing and does nothing at the end, made whatever the options.
    A subclass names itself (``name``, a ``description``), declares its ``options`` (a tuple of
    :class:`OutputOption`), and overrides what it does: ``open(context)``, a class method, returns the run's sink
    or None; ``record`` and ``finish`` are the sink's."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    options: ClassVar[tuple[OutputOption, ...]] = ()

    def __init__(self, context: SinkContext):
        self.context = context

    @classmethod
    def open(cls, context: SinkContext) -> Sink | None:
        """This run's sink, or None when the run's options do not ask for this output."""
        return cls(context)

    def record(self, result: CaseResult, line: dict) -> None:
        """One final result and its results-file line, as the run goes: nothing here."""
        return None

    def finish(self, end: RunEnd) -> None:
        """The run's end: nothing here."""
        return None


class FileOutput(Output):
    """An output written once, when the run ends, from the run's records read back: its one option names the
    file (made only when given). A subclass says how: :meth:`write`."""

    def __init__(self, context: SinkContext, path: Path):
        super().__init__(context)
        self.path = path

    @classmethod
    def open(cls, context: SinkContext) -> Sink | None:
        """The output, where its option names a file; None otherwise."""
        given = context.options.get(cls.options[0].dest)
        return cls(context, Path(given)) if given else None

    def finish(self, end: RunEnd) -> None:
        """Writes the file from the run's records, its folder made where missing."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.write(end.records(), self.path)

    def write(self, records: list[ResultRecord], path: Path) -> object:
        """Writes ``records`` (this run's, read back from its results file) at ``path``: the format's own part
        (``write = staticmethod(write_my_format)`` where a function of those two arguments does it)."""
        raise NotImplementedError


def add_output_options(parser: Any, outputs: Iterable[type[Output]]) -> None:
    """Adds the outputs' options to ``parser``: an argparse parser or group, or a pytest option group. An option
    the command has already (a plugin's ``--results``) is left out with a warning: one plugin must not break every
    command."""
    add = parser.addoption if hasattr(parser, "addoption") else parser.add_argument
    for output in outputs:
        for option in output.options:
            try:
                add(option.flag, dest=option.dest, metavar=option.metavar, default=None, help=option.help)
            except (argparse.ArgumentError, ValueError) as error:  # argparse's conflict, pytest's
                warnings.warn(f"output {output.name!r}: {option.flag} left out: {error}", stacklevel=2)


def forwarded_output_options(arguments: argparse.Namespace, outputs: Iterable[type[Output]]) -> list[str]:
    """The outputs' options given on a command, as the arguments that give them to pytest (``--sarif=FILE``)."""
    return [f"{option.flag}={value}" for output in outputs for option in output.options
            if (value := getattr(arguments, option.dest, None))]


class JsonlSink(Output):
    """Appends each result's line to the results file (:mod:`conformance.results.store`)."""

    name = "jsonl"
    description = "the run's JSONL results file (--results)"

    def __init__(self, context: SinkContext):
        super().__init__(context)
        self.writer = ResultsWriter(context.results_path)

    def record(self, result: CaseResult, line: dict) -> None:
        self.writer.append(line)

    def finish(self, end: RunEnd) -> None:
        return None  # every line is on disk the moment it is recorded


class AllureSink(Output):
    """Attaches each result to its Allure test, and writes the run's environment and categories at the end. Its
    option is allure-pytest's own ``--alluredir``, so it works under pytest only."""

    name = "allure"
    description = "Allure results: each item's labels and attachments, the run's environment and categories"

    def __init__(self, context: SinkContext, directory: Path):
        super().__init__(context)
        self.directory = directory

    @classmethod
    def open(cls, context: SinkContext) -> AllureSink | None:
        directory = allure_report.directory_of(context.options)
        return cls(context, directory) if directory is not None else None

    def record(self, result: CaseResult, line: dict) -> None:
        # the items whose results line keeps its exchanges (--transcripts) keep them in Allure too
        allure_report.attach_result(result, transcript=bool(line.get("transcript")))

    def finish(self, end: RunEnd) -> None:
        allure_report.write_environment(self.directory, end.environment())
        allure_report.write_categories(self.directory)
