"""``certify reproduce`` on a scripted target: its runs replaced by hand-made records (no broker), written to the
record's runs file as a run writes them, so the record verifies as one made by a real run."""

from __future__ import annotations

import json

from conformance.cli import certify_reproduce
from conformance.report.certify import reproduction
from conformance.results.record import ResultRecord


def scripted_runs(monkeypatch, *runs: list[dict]) -> None:
    """Each ``runs`` entry is one run's results lines (report_records.record), in order."""

    def run_items(arguments, claimed, skipped, files, out, run_id, extensions):
        ids, made = [], []
        for number, rows in enumerate(runs, 1):
            this_run = f"{run_id}-run{number}"
            lines = [{**row, "run_id": this_run, "target": arguments.target} for row in rows]
            with open(out / reproduction.RUNS, "a", encoding="utf-8") as results:
                results.writelines(json.dumps(line) + "\n" for line in lines)
            ids.append(this_run)
            made.append([ResultRecord.from_line(line) for line in lines])
        return ids, made, None, ""

    monkeypatch.setattr(certify_reproduce, "run_items", run_items)


def record_folder(out) -> object:
    """The one reproduction record ``certify reproduce -o out`` wrote."""
    return next(path for path in out.iterdir() if (path / reproduction.RECORD).is_file())
