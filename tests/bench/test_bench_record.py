"""A benchmark run leaves a record (what it printed, with the machine, load, commit and date), and the benchmarks
page is rendered from the records kept in the repository."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

from conformance.bench import __main__ as dispatcher
from conformance.bench.page import benchmarks_markdown, page_from
from conformance.bench.record import BenchmarkRecord, Machine, recorded, write_record

ROOT = Path(__file__).resolve().parents[2]


def _benchmark() -> int:
    print("ours: 2.00x kio on encode")
    print("ours: 0.50x kio on decode")
    return 3


def test_a_run_keeps_what_it_printed_with_the_machine_load_commit_and_date(tmp_path):
    shown = io.StringIO()
    status, record = recorded("codec", ["--repeats", "1"], _benchmark, stream=shown)
    assert status == 3 and record.exit_status == 3
    assert shown.getvalue().splitlines() == record.output == ["ours: 2.00x kio on encode", "ours: 0.50x kio on decode"]
    assert record.machine.cores == os.cpu_count() and record.machine.python
    assert len(record.load_before) == len(record.load_after) == 3
    assert record.commit and record.date.endswith("Z") and record.command == "python -m conformance.bench codec --repeats 1"
    path = write_record(record, tmp_path / "records")
    assert BenchmarkRecord.from_json(path.read_text()) == record


def test_the_dispatcher_writes_the_record_where_it_is_told(tmp_path, monkeypatch, capsys):
    module = type(sys)("fake")
    module.main = lambda options: _benchmark() if options == ["--fast"] else 9
    monkeypatch.setattr(dispatcher, "import_module", lambda name: module)
    assert dispatcher.main(["--record", str(tmp_path), "codec", "--fast"]) == 3
    [path] = tmp_path.glob("codec-*.json")
    assert json.loads(path.read_text())["arguments"] == ["--fast"]
    assert f"record: {path}" in capsys.readouterr().out


def test_the_page_shows_each_figure_with_its_machine_and_load(tmp_path):
    record = BenchmarkRecord(benchmark="codec", arguments=[], date="2026-12-07T20:51:00Z", commit="abc123",
                             machine=Machine(cores=2, memory_gib=24.0, processor="Some CPU", system="Linux 6 x86_64",
                                             python="3.11.7"),
                             load_before=[29.97, 41.62, 27.31], load_after=[12.0, 30.0, 25.0], seconds=61.2,
                             exit_status=0, output=["ours: 2.00x kio on encode"])
    page = benchmarks_markdown([record], [{"what": "a run", "figure": "19 s", "when": "2026-11-27", "machine": "2 cores"}])
    assert "### 2026-12-07T20:51:00Z at `abc123`" in page
    assert "2 cores, 24 GiB, Some CPU, Linux 6 x86_64, Python 3.11.7" in page
    assert "29.97 / 41.62 / 27.31 before, 12 / 30 / 25 after" in page
    assert "ours: 2.00x kio on encode" in page and "| a run | 19 s | 2026-11-27 | 2 cores |" in page
    write_record(record, tmp_path)
    (tmp_path / "by-hand.json").write_text("[]")
    assert page_from(tmp_path) == benchmarks_markdown([record], [])


def test_the_records_kept_in_the_repository_are_on_the_page():
    folder = ROOT / "fixtures" / "benchmarks"
    page = page_from(folder)
    kept = [path for path in folder.glob("*.json") if path.name != "by-hand.json"]
    assert kept, "no benchmark record is kept"
    for path in kept:
        record = BenchmarkRecord.from_json(path.read_text())
        assert f"### {record.date} at `{record.commit}`" in page and record.machine.cores >= 1
