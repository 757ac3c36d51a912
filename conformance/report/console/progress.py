"""``conformance run``'s console: a progress line per target while it runs, compact entries at the end.

pytest's reporting of a conformance item is a letter while it runs and, for each one that fails,
its whole report at the end: with a transcript per item × version, a mock run printed megabytes.
The plugin registers :class:`ConsoleReporter` only when asked (``--conformance-console compact``,
which ``conformance run`` and ``conformance flaky`` pass) and the verbosity is at most 0, so
``python -m pytest --target ...`` and ``-v``/``-vv`` keep pytest's reports as they are. For the
conformance items (and only those) the reporter

- replaces pytest's letters with a line per target counting items per outcome, rewritten in place
  on a terminal and printed every :data:`PLAIN_EVERY_S` seconds otherwise (CI logs); a clock of its own
  (:meth:`ConsoleReporter.tick`, every :data:`TICK_S` on a terminal) keeps it going while pytest waits for an
  item's result, saying how long the run has taken, how many items ran, which are under way and how many
  crashes were attributed (``status``: the runners', read from the plugin's state);
- keeps their reports out of pytest's FAILURES and ERRORS sections and short summary (its last
  line still counts them; collection errors and other tests are reported as usual);
- prints one entry per departing case (:mod:`.compact`), read back from the results file, so
  pytest-xdist workers' items are there too.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Callable

import pytest

from ...results.record import OUTCOME_LABELS, OUTCOME_ORDER, Outcome
from . import compact
from ...results.store import read_records

PLAIN_EVERY_S = 30.0  # a console that is not a terminal gets one line per target this often
REDRAW_EVERY_S = 0.2  # a terminal's lines are rewritten at most this often
PLAIN_PREFIX = "progress: "
TICK_S = 1.0  # a terminal's line is redrawn at least this often while the run waits on an item
PLAIN_TICK_S = 30.0  # otherwise, a line at least this often while the run waits on an item
UNDER_WAY_SHOWN = 2  # items under way named on a line; the others counted


def status_text(elapsed_s: float, status: dict | None) -> str:
    """``; 1m05s; 1402 ran, 16 under way (kip848.x::y v3, ...); 2 crashes attributed``: what a progress line says
    beyond the counts while the run goes on (``status``: ``ran``, ``under_way`` labels, ``crashes``)."""
    minutes, seconds = divmod(int(elapsed_s), 60)
    parts = [f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"]
    if status:
        under_way = sorted(status.get("under_way") or [])
        shown = ", ".join(under_way[:UNDER_WAY_SHOWN]) + (", ..." if len(under_way) > UNDER_WAY_SHOWN else "")
        parts.append(f"{status.get('ran', 0)} ran" + (f", {len(under_way)} under way ({shown})" if under_way else ""))
        if status.get("crashes"):
            parts.append(f"{status['crashes']} crash{'' if status['crashes'] == 1 else 'es'} attributed")
    return "; " + "; ".join(parts)


def is_case_report(report) -> bool:
    """A report of a conformance item (they carry their KIP and target as user properties)."""
    names = {name for name, _ in getattr(report, "user_properties", ()) or ()}
    return {"kip", "target"} <= names


def _property(properties, name: str):
    """The last value of a user property (an item's outcome is appended once it is recorded)."""
    found = None
    for key, value in properties or ():
        if key == name:
            found = value
    return found


def outcome_category(report, category: str) -> str:
    """The category pytest's last line counts ``report`` under: a conformance item's outcome as the run's table
    names it (passed, failed, differs from Kafka, blocked, error, unsupported, skipped), where pytest's own
    ``category`` says otherwise (an item without a verdict is a pytest failure, a SHOULD not met an xfail, an
    unsupported version a skip). Setup and teardown reports that count nothing ("") and other reports keep theirs;
    so do deselected items, which sit in the stats too."""
    if not category or getattr(report, "when", None) not in ("setup", "call") or not is_case_report(report):
        return category
    outcome = _property(report.user_properties, "outcome")
    return OUTCOME_LABELS.get(outcome, category) if outcome else category


def count_as_outcomes(stats: dict[str, list]) -> None:
    """Regroups pytest's reports (``TerminalReporter.stats``) under :func:`outcome_category`, once every summary
    that reads pytest's categories is written."""
    regrouped: dict[str, list] = {}
    for key, reports in stats.items():
        for report in reports:
            regrouped.setdefault(outcome_category(report, key), []).append(report)
    stats.clear()
    stats.update({key: reports for key, reports in regrouped.items() if reports})


def progress_line(target: str, counts: Counter, total: int | None, *, zeros: bool = True) -> str:
    """``kafka: 215/371 items: 61 passed, 154 failed, ...``: every outcome, or (``zeros=False``) passed,
    failed and the others that are not 0."""
    done = sum(counts.values())
    shown = [outcome for outcome in OUTCOME_ORDER if zeros or counts.get(outcome) or outcome in (Outcome.PASSED, Outcome.FAILED)]
    return (f"{target}: {done}{f'/{total}' if total else ''} items: "  # no total under xdist: workers collect
            + ", ".join(f"{counts.get(outcome, 0)} {OUTCOME_LABELS[outcome]}" for outcome in shown))


class ConsoleReporter:
    """Registered by the plugin on the controller (never on an xdist worker) for one session."""

    def __init__(self, *, results_path: Path, run_id: str, default_results: str = "", clock=time.monotonic,
                 status=None):
        """``status()``: per target spec, what its runner says (:func:`status_text`); ``clock``: seconds."""
        self.results_path, self.run_id, self.default_results = results_path, run_id, default_results
        self.clock = clock
        self.status: Callable[[], dict] = status or (lambda: {})
        self.began: float | None = None
        self._drawing = threading.Lock()  # the ticker's thread and pytest's draw the same lines
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._going = False  # the lines drawn last say how the run goes on
        self.totals: dict[str, int] = {}
        self.counts: dict[str, Counter] = {}
        self.terminal = None
        self.config = None
        self.tty = False
        self.drawn = 0  # lines of progress on a terminal's screen, rewritten in place
        self.last_draw: float | None = None
        self.last_plain: tuple = ()  # what the last plain lines said: the final ones are not repeated

    # --------------------------------------------------------------------------- pytest hooks
    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.terminal = session.config.pluginmanager.get_plugin("terminalreporter")
        self.config = session.config
        if self.terminal is not None:
            self.terminal.showfspath = False  # no "suites/x.yaml" line per file: the progress line replaces it
            self.tty = bool(self.terminal.isatty())
        self.last_draw = self.began = self.clock()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            if is_case_report(item):
                target = _property(item.user_properties, "target")
                self.totals[target] = self.totals.get(target, 0) + 1
                self.counts.setdefault(target, Counter())

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(self, report, config):
        status = yield
        if status and is_case_report(report):
            # counted by pytest as the table counts it, written by nobody: the progress line says it
            return outcome_category(report, status[0]), "", ""
        return status

    def pytest_runtest_logreport(self, report) -> None:
        if report.when != "teardown" or not is_case_report(report):
            return  # every item has one teardown report, by then with the outcome it recorded
        target = _property(report.user_properties, "target")
        outcome = _property(report.user_properties, "outcome") or "error"
        self.counts.setdefault(target, Counter())[outcome] += 1
        self.show()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session):
        self.start_ticking()
        try:
            return (yield)
        finally:
            self.stop_ticking()
            self.show(final=True)

    # --------------------------------------------------------------------------- the clock of its own
    def start_ticking(self, wait=None) -> None:
        """A thread that calls :meth:`tick` every :data:`TICK_S` on a terminal (:data:`PLAIN_TICK_S` otherwise)
        until :meth:`stop_ticking`; ``wait(seconds)`` returns True once stopped (a test passes its own)."""
        if self.terminal is None:
            return
        wait = wait or self._stop.wait
        every = TICK_S if self.tty else PLAIN_TICK_S

        def ticking() -> None:
            while not wait(every):
                self.tick()

        self._ticker = threading.Thread(target=ticking, name="progress", daemon=True)
        self._ticker.start()

    def stop_ticking(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()

    def tick(self) -> None:
        """A line now if none was drawn for as long as the console's interval: the run waits on an item. While an
        item runs, pytest captures the process's output (file descriptor 1 included): the line is written with
        the capture suspended, else it went into the item's captured output and was never seen."""
        plugins = getattr(self.config, "pluginmanager", None)
        capture = plugins.getplugin("capturemanager") if plugins is not None else None
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            self.show(ticking=True)

    @pytest.hookimpl(specname="pytest_terminal_summary", wrapper=True, tryfirst=True)
    def pytest_terminal_summary_without_case_reports(self, terminalreporter):  # pytest reads pytest_* names only
        """pytest's FAILURES, ERRORS and short summary would repeat every item × version in full."""
        hidden = {}
        for key, reports in list(terminalreporter.stats.items()):
            kept = [report for report in reports if not is_case_report(report)]
            if len(kept) != len(reports):
                hidden[key] = reports
                terminalreporter.stats[key] = kept
        try:
            return (yield)
        finally:
            terminalreporter.stats.update(hidden)  # pytest's last line counts them all

    @pytest.hookimpl(tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter) -> None:
        records = read_records(self.results_path, run_id=self.run_id)
        found = compact.sections(records)
        for section in found:
            red = section.outcome in ("failed", "root_cause")
            terminalreporter.write_sep("-", section.title, red=red, yellow=not red)
            for line in section.lines():
                terminalreporter.write_line(line)
        if found:
            terminalreporter.write_line(compact.show_hint(records, self.results_path,
                                                          default_results=self.default_results))

    # --------------------------------------------------------------------------- drawing
    def lines(self, *, zeros: bool = True, going: bool = False) -> list[str]:
        """A line per target; ``going``: with how long the run has taken and its runner's status."""
        status: dict = self.status() if going else {}
        elapsed = self.clock() - (self.began or 0.0)
        return [progress_line(target, counts, self.totals.get(target), zeros=zeros)
                + (status_text(elapsed, status.get(target)) if going else "")
                for target, counts in self.counts.items()]

    def show(self, *, final: bool = False, ticking: bool = False) -> None:
        with self._drawing:
            self._show(final=final, ticking=ticking)

    def _show(self, *, final: bool, ticking: bool) -> None:
        if self.terminal is None or not self.counts:
            return
        now = self.clock()
        if ticking:
            every = TICK_S if self.tty else PLAIN_TICK_S
        else:
            every = REDRAW_EVERY_S if self.tty else PLAIN_EVERY_S
        if not final and self.last_draw is not None and now - self.last_draw < every:
            return
        self.last_draw = now
        going = not final and (self.tty or ticking)  # plain lines of items keep their counts only
        lines = self.lines(going=going)
        self._going = going
        if self.tty:
            self.draw_in_place(lines)
        elif tuple(lines) != self.last_plain:
            self.last_plain = tuple(lines)
            for line in lines:
                self.terminal.write_line(PLAIN_PREFIX + line)
            if hasattr(self.terminal, "flush"):  # a file or a pipe holds lines back until its buffer fills
                self.terminal.flush()

    def draw_in_place(self, lines: list[str]) -> None:
        """Rewrite the block of lines drawn last time (targets first seen since are added below it)."""
        width = max(self.config.get_terminal_writer().fullwidth - 1, 20)
        if any(len(line) > width for line in lines):
            lines = self.lines(zeros=False, going=self._going)  # a narrow terminal: the outcomes no item has yet are left out
        shown = [line if len(line) <= width else line[:width - 1] + "…" for line in lines]
        up = f"\x1b[{self.drawn - 1}F" if self.drawn > 1 else ""
        self.terminal.write("\r" + up + "\n".join(line + "\x1b[K" for line in shown), flush=True)
        self.drawn = len(shown)
