"""The results store: a results file written and read back. One line per item, appended the moment the item
finishes; read back as :class:`~conformance.results.record.ResultRecord` (:func:`read_records`) or, where a line
must travel as it is (rewritten by the gate, loaded by Spark), as its upgraded JSON object (:func:`read_lines`).

Appending (never rewriting) means a run that is killed keeps every result it finished, and many
runs can share one file (each line carries its ``run_id``). Several writers may append at once
(pytest-xdist workers): each line goes out in one ``O_APPEND`` write under an exclusive ``flock``,
so lines never interleave however long a transcript makes them. Reading keeps every older line readable
(:mod:`.record`'s rules).
"""

from __future__ import annotations

import json
import os
import secrets
import time
import warnings
from pathlib import Path
from typing import Any

from .record import ResultRecord, upgrade

fcntl: Any
try:
    import fcntl
except ImportError:  # Windows: O_APPEND alone still keeps short lines whole
    fcntl = None


def new_run_id() -> str:
    """Sortable by start time (UTC, to the second) and unique enough for concurrent runs."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


class ResultsWriter:
    """Appends records to a JSONL file; ``fsync`` makes each line durable before ``append`` returns."""

    def __init__(self, path: str | Path, *, fsync: bool = False):
        self.path = Path(path)
        self.fsync = fsync

    def append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)  # here, so --collect-only creates nothing
        line = (json.dumps(record, separators=(",", ":"), default=str) + "\n").encode()
        descriptor = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if fcntl is not None:
                fcntl.flock(descriptor, fcntl.LOCK_EX)
            if _ends_mid_line(descriptor):
                # A killed writer left half a line; end it so this record is not glued onto it.
                line = b"\n" + line
            _write_all(descriptor, line)
            if self.fsync:
                os.fsync(descriptor)
        finally:
            os.close(descriptor)  # closing releases the lock


def _ends_mid_line(descriptor: int) -> bool:
    size = os.fstat(descriptor).st_size
    return size > 0 and os.pread(descriptor, 1, size - 1) != b"\n"


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(descriptor, view)
        view = view[written:]


def read_lines(path: str | Path, *, run_id: str | None = None) -> list[dict[str, Any]]:
    """Every complete record in the file (only those of ``run_id`` when given), its outcome named as
    the current schema names it (a version 2 IMPLEMENTATION item that departed reads ``differs``).

    A last line without its newline is a record a killed run was writing: dropped silently.
    Any other undecodable line is dropped with a warning: it is the same kind of half-written
    record, which a later run ended with a newline before appending its own.
    """
    path = Path(path)
    if not path.exists():
        return []
    records: list[dict[str, Any]] = []
    # A results file keeps every run's records (dozens a day): decoding only the lines that can be this run's
    # keeps a run's end as quick on the hundredth run as on the first.
    wanted = json.dumps(run_id)[1:-1].encode() if run_id is not None else b""  # as the writer spells it
    lines = path.read_bytes().split(b"\n")
    last = len(lines) - 1  # after the final "\n" split() leaves b"", or the unterminated tail
    for number, line in enumerate(lines):
        if not line.strip() or wanted not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            if number != last:
                warnings.warn(f"{path}:{number + 1}: incomplete record skipped (a run killed while writing?)",
                              stacklevel=2)
            continue
        if not isinstance(record, dict):
            continue
        if run_id is None or record.get("run_id") == run_id:
            records.append(upgrade(record))
    return records


def read_records(path: str | Path, *, run_id: str | None = None) -> list[ResultRecord]:
    """Every complete record in the file (only those of ``run_id`` when given) as a :class:`ResultRecord`, of any
    schema version (:meth:`ResultRecord.from_line`); the lines :func:`read_lines` drops are dropped the same way."""
    return [ResultRecord.from_line(line) for line in read_lines(path, run_id=run_id)]
