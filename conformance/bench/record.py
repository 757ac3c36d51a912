"""A benchmark run's record: what it printed, with the machine it ran on, the load around it, the commit and the date.

Rules: ``python -m conformance.bench NAME`` writes one JSON file per run into ``--record DIR`` (default
``reports/benchmarks``); the records kept in the repository (``fixtures/benchmarks/``) are the benchmarks page,
rendered by :mod:`.page`, so a figure on that page always comes with where and when it was measured. A figure is
only ever compared with figures of the same record: machines, and their loads, differ.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, TextIO

from .. import __version__, resources

DEFAULT_RECORDS = "reports/benchmarks"
FORMAT = 1


@dataclass(frozen=True)
class Machine:
    """What a figure depends on: the cores, the memory, the processor, the system and Python."""

    cores: int
    memory_gib: float | None
    processor: str
    system: str
    python: str

    @classmethod
    def here(cls) -> Machine:
        """This machine."""
        return cls(cores=os.cpu_count() or 0, memory_gib=_memory_gib(), processor=_processor(),
                   system=f"{platform.system()} {platform.release()} {platform.machine()}",
                   python=platform.python_version())


@dataclass(frozen=True)
class BenchmarkRecord:
    """One run of one benchmark, as its JSON file holds it."""

    benchmark: str
    arguments: list[str]
    date: str  # UTC, when it started
    commit: str  # the checkout's commit (with "+changes" where the tree differed), or the harness's version
    machine: Machine
    load_before: list[float]  # the 1, 5 and 15 minute load averages when it started and when it ended
    load_after: list[float]
    seconds: float
    exit_status: int
    output: list[str] = field(default_factory=list)  # what it printed, the figures among it
    format: int = FORMAT

    @property
    def command(self) -> str:
        return " ".join(["python -m conformance.bench", self.benchmark, *self.arguments])

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> BenchmarkRecord:
        data = json.loads(text)
        return cls(**{**data, "machine": Machine(**data["machine"])})

    def file_name(self) -> str:
        return f"{self.benchmark}-{re.sub(r'[^0-9T]', '', self.date)}.json"


def recorded(benchmark: str, arguments: list[str], run: Callable[[], int], *,
             stream: TextIO | None = None) -> tuple[int, BenchmarkRecord]:
    """Runs ``run`` (the benchmark's ``main``), its printed lines shown as they come and kept; its exit status and
    the record of the run."""
    shown = stream or sys.stdout
    kept = io.StringIO()
    date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load_before, started = _load(), time.perf_counter()
    status = 1
    try:
        with contextlib.redirect_stdout(_Tee(shown, kept)):
            status = int(run() or 0)
    finally:
        record = BenchmarkRecord(benchmark=benchmark, arguments=list(arguments), date=date, commit=_commit(),
                                 machine=Machine.here(), load_before=load_before, load_after=_load(),
                                 seconds=round(time.perf_counter() - started, 1), exit_status=status,
                                 output=kept.getvalue().rstrip("\n").splitlines())
    return status, record


def write_record(record: BenchmarkRecord, folder: str | Path) -> Path:
    """Writes ``record`` into ``folder`` (made where missing); its path."""
    path = Path(folder) / record.file_name()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(record.to_json(), encoding="utf-8")
    return path


class _Tee(io.TextIOBase):
    def __init__(self, *streams: TextIO):
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


def _load() -> list[float]:
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:  # not on every system
        return []


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def _processor() -> str:
    try:
        found = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.MULTILINE)
    except OSError:
        found = None
    return found.group(1).strip() if found else platform.processor() or platform.machine()


def _commit() -> str:
    """The commit of the checkout the harness runs from, marked where its files differ; else the version."""
    here = resources.source_tree()
    if here is None:  # an installed wheel: no checkout to ask
        return __version__
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=here, capture_output=True,
                                text=True, timeout=10)
        if commit.returncode != 0:
            return __version__
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                                 capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return __version__
    return commit.stdout.strip() + ("+changes" if changed else "")
