"""The benchmarks page: the records of benchmark runs kept in the repository, each with the machine it ran on.

``tools/build_docs.py`` renders docs/generated/benchmarks.md from ``fixtures/benchmarks/*.json`` (records that
``python -m conformance.bench --record fixtures/benchmarks NAME`` wrote) and ``fixtures/benchmarks/by-hand.json``
(figures noted by hand before the benchmarks wrote records, each with the machine and load it was noted with).
Per benchmark, newest first: when, which commit, the machine, the load before and after, and what it printed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from . import BENCHMARKS
from .record import BenchmarkRecord

HEADER = ("<!-- Generated from fixtures/benchmarks/ by `python tools/build_docs.py`; a test keeps it fresh. Add a "
          "record with `python -m conformance.bench --record fixtures/benchmarks NAME`, not by editing this page. -->")


def benchmarks_markdown(records: Iterable[BenchmarkRecord], by_hand: list[dict[str, str]]) -> str:
    """The page: every record by benchmark (newest first), then the figures noted by hand."""
    by_benchmark: dict[str, list[BenchmarkRecord]] = {}
    for record in sorted(records, key=lambda record: record.date, reverse=True):
        by_benchmark.setdefault(record.benchmark, []).append(record)
    lines = [HEADER, "", "# Benchmark figures", "",
             "Each figure comes with the machine it was measured on and the load around it: compare a figure only "
             "with the others of the same run. How to run the benchmarks: [Run the benchmarks]"
             "(../how-to/benchmarks.md).", ""]
    if not by_benchmark:
        lines += ["No benchmark run is recorded yet.", ""]
    for name in sorted(by_benchmark):
        lines += [f"## `{name}`", "", f"{BENCHMARKS.get(name, '')}", ""]
        for record in by_benchmark[name]:
            lines += [f"### {record.date} at `{record.commit}`", "", f"- command: `{record.command}`",
                      f"- machine: {_machine(record)}",
                      f"- load (1, 5, 15 min): {_load(record.load_before)} before, {_load(record.load_after)} after",
                      f"- took {record.seconds:g} s, exit status {record.exit_status}", "", "```text",
                      *record.output, "```", ""]
    if by_hand:
        lines += ["## Noted by hand", "",
                  "Figures noted before the benchmarks wrote records, each with the machine and the load it was "
                  "noted with.", "", "| what | figure | when, how | machine |", "|---|---|---|---|"]
        lines += [f"| {row['what']} | {row['figure']} | {row['when']} | {row['machine']} |" for row in by_hand]
        lines.append("")
    return "\n".join(lines)


def page_from(folder: Path) -> str:
    """The page from the records in ``folder`` and its ``by-hand.json``."""
    hand = folder / "by-hand.json"
    records = [BenchmarkRecord.from_json(path.read_text(encoding="utf-8"))
               for path in sorted(folder.glob("*.json")) if path != hand]
    return benchmarks_markdown(records, json.loads(hand.read_text(encoding="utf-8")) if hand.is_file() else [])


def _machine(record: BenchmarkRecord) -> str:
    machine = record.machine
    memory = f", {machine.memory_gib:g} GiB" if machine.memory_gib else ""
    return f"{machine.cores} cores{memory}, {machine.processor}, {machine.system}, Python {machine.python}"


def _load(values: list[float]) -> str:
    return " / ".join(f"{value:g}" for value in values) if values else "unknown"
