"""A run's life, outside pytest: one :class:`RunSession` per run, whichever entry point runs it.

A run (``conformance run``'s pytest session, ``conformance semantic``, ``conformance explore``, the suites
``conformance certify`` runs) has one session. The session owns:

- the run's plugins (:class:`~conformance.extension.Extensions`), made once, and what they give: the
  components the suites load with, the target kinds, the outputs' sinks (opened with the run's options);
- the one verdict decision (:meth:`RunSession.verdict`, :class:`~conformance.results.Verdict`);
- recording a result (:meth:`RunSession.record`): its results line (:func:`result_line`) goes to every sink in
  order (the JSONL results file first) and then to the ``conformance_result_recorded`` hook;
- the run's end (:meth:`RunSession.finish`: the sinks' ``finish``, then ``conformance_session_finished``) and its
  summary read back from the results (:meth:`RunSession.summary`).

The pytest plugin (:mod:`conformance.pytest_plugin`) adapts pytest to a session: it makes one (or takes the one
an entry point handed to ``pytest.main`` as a plugin object: :func:`handed_in`), records each item through it and
raises the verdict it decides. Nothing here imports pytest.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from . import ledger
from .extension import Extensions
from .report.sinks import RunEnd, Sink, SinkContext
from .results.record import Outcome, ResultRecord, Verdict
from .results.store import new_run_id, read_records
from .results import provenance

if TYPE_CHECKING:
    from .suite.components import Components
    from .suite.model import CaseResult
    from .targets.pool import TargetPool


class RunSession:
    """One run: its plugins, results file, sinks, verdict rule and summary (see the module's docstring)."""

    def __init__(self, results_path: str | Path, *, run_id: str | None = None, strict: bool = False,
                 transcripts: str = "failures", extensions: Extensions | None = None,
                 harness_version: str | None = None, options: Mapping[str, Any] | None = None):
        """``extensions`` are the run's plugins (made here when not given: the installed ones); ``transcripts``
        says which items keep their exchanges in the results (failures, all or none); ``options`` are the
        command's, by destination name, which the outputs read (``--junit``, ``--sarif``)."""
        self.extensions = extensions if extensions is not None else Extensions.for_run()
        self.results_path = Path(results_path)
        self.run_id = run_id or new_run_id()
        self.strict = strict
        self.transcripts = transcripts
        self.options = dict(options or {})
        self.harness_version = harness_version if harness_version is not None else provenance().harness_version
        self.sinks: list[Sink] | None = None  # made by :meth:`open` (or the first record)
        self.recorded: set[str] = set()  # node ids with a result line from this process
        self.pool: TargetPool | None = None  # the run's targets, once :meth:`targets` made them
        self._components: Components | None = None
        self._read_back: tuple[tuple[int, int], list[ResultRecord]] | None = None  # (file size and time, records)

    # ------------------------------------------------------------------------------ what the plugins give
    @property
    def components(self) -> Components:
        """The codec, step kinds and matchers the suites of this run load and run with (asked of the plugins once)."""
        if self._components is None:
            self._components = self.extensions.components()
        return self._components

    def targets(self, specs: Iterable[str]) -> TargetPool:
        """The run's target pool over ``specs`` (kinds from the run's plugins); ValueError for an unknown spec."""
        from .targets.pool import TargetPool

        self.pool = TargetPool(list(specs), self.extensions.target_kinds())
        return self.pool

    def open(self, options: Mapping[str, Any] | None = None) -> None:
        """Makes the run's sinks from its outputs; ``options`` are pytest's under pytest (the session's own, given
        when it was made, take precedence)."""
        if self.sinks is None:
            self.sinks = self.extensions.sinks(SinkContext(results_path=self.results_path, run_id=self.run_id,
                                                           options={**(options or {}), **self.options}))

    # ------------------------------------------------------------------------------ results
    def verdict(self, result: CaseResult) -> Verdict:
        """The one rule that turns an outcome into a verdict (:meth:`Verdict.of`), under this run's strictness."""
        return Verdict.of(result.outcome, result.requirement, strict=self.strict)

    def record(self, result: CaseResult, *, nodeid: str) -> dict:
        """Records one item's result: its line to every sink in order, then the ``conformance_result_recorded``
        hook. Returns the line."""
        self.open()
        line = result_line(result, nodeid=nodeid, verdict=self.verdict(result), strict=self.strict,
                           harness_version=self.harness_version, transcripts=self.transcripts)
        for sink in self.sinks or ():
            sink.record(result, line)
        self.recorded.add(nodeid)
        self.extensions.result_recorded(result)
        return line

    def records(self) -> list[ResultRecord]:
        """This run's records, read back from its results file (every process's, under pytest-xdist). Read once for
        as long as the file stays as it is: a run's end asks for its summary and its environment, and with
        ``--transcripts all`` the lines are long."""
        try:
            stat = self.results_path.stat()
        except OSError:
            return []
        version = (stat.st_size, stat.st_mtime_ns)
        if self._read_back is None or self._read_back[0] != version:
            self._read_back = (version, read_records(self.results_path, run_id=self.run_id))
        return self._read_back[1]

    def summary(self) -> dict[str, Counter[str]]:
        """How many items of each outcome each target had in this run: target spec -> outcome -> count."""
        counts: dict[str, Counter[str]] = {}
        for record in self.records():
            counts.setdefault(record.target, Counter())[record.outcome] += 1
        return counts

    def environment(self, *, specs: Iterable[str] = (), **more: object) -> dict[str, object]:
        """The run's description for reports (Allure's environment): ids, versions, and each target's version as
        its results say (read back, so targets started by xdist workers are described too)."""
        versions = {record.target: record.target_version for record in self.records()}
        properties: dict[str, object] = {"run_id": self.run_id, "harness": self.harness_version,
                                         "python": platform.python_version(), **more}
        properties.setdefault("strict", self.strict)
        for spec in specs:
            properties[f"target.{spec}"] = versions.get(spec) or "not started"
        return properties

    def finish(self, environment: Callable[[], dict[str, object]] | None = None) -> None:
        """The run's end: every sink's ``finish``, then the ``conformance_session_finished`` hook."""
        self.open()
        end = RunEnd(results_path=self.results_path, run_id=self.run_id,
                     environment=environment or (lambda: self.environment(
                         specs=self.pool.specs if self.pool is not None else ())), records=self.records)
        for sink in self.sinks or ():
            sink.finish(end)
        self.extensions.session_finished(str(self.results_path))


def handed_in(plugins: Iterable[object]) -> RunSession | None:
    """The session an entry point handed to ``pytest.main(..., plugins=[session])``, if any: the pytest plugin
    then runs that session (its plugins, run id and results file) rather than making its own."""
    return next((plugin for plugin in plugins if isinstance(plugin, RunSession)), None)


def result_line(result: CaseResult, *, nodeid: str, strict: bool, harness_version: str,
                transcripts: str = "failures", verdict: Verdict | None = None) -> dict:
    """The results file's line for one item (the suites', the exactly-once tier's and exploration's alike): the
    result's :class:`~conformance.results.ResultRecord` with what the run knows about it."""
    decided = verdict or Verdict.of(result.outcome, result.requirement, strict=strict)
    record = result.record(nodeid=nodeid, verdict=decided.value, strict=strict,
                           harness_version=harness_version, worker=os.environ.get("PYTEST_XDIST_WORKER", "main"),
                           recorded_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    bug = ledger.known_bug({"outcome": record.outcome, "suite": record.suite, "case": record.case,
                            "target": record.target, "target_version": record.target_version}) or result.known_bug
    if bug:
        record = dataclasses.replace(record, known_bug=bug)
    if not keeps_transcript(transcripts, result.outcome):
        # a thousand passing items would otherwise repeat ApiVersions bodies
        record = dataclasses.replace(record, transcript=[])
    return record.to_line()


def keeps_transcript(mode: str, outcome: Outcome) -> bool:
    """``failures`` keeps the transcripts of every item that is not a pass, unsupported or skipped."""
    if mode == "all":
        return True
    if mode == "none":
        return False
    return not outcome.uneventful
