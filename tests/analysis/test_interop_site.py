"""``conformance analyze site`` on the small history of ``interop_history`` (made by hand): the pages' figures,
worked out there, from results files and from a warehouse."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree

import pytest

pytest.importorskip("pyspark")

from interop_history import RUN_2, RUN_3, write_history  # noqa: E402

from conformance.cli import main  # noqa: E402

pytestmark = [pytest.mark.broker, pytest.mark.spark]  # starts Spark's JVM

@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return write_history(tmp_path_factory.mktemp("site-results"))


@pytest.fixture(scope="module")
def spark():
    from conformance.analysis.spark_session import spark_session

    session = spark_session("local[2]")
    yield session
    session.stop()


def page_data(path) -> dict:
    """The JSON a page carries, read back as the browser's getAttribute would (entities decoded)."""
    from html import unescape

    found = re.search(r"data-site='([^']*)'", path.read_text(encoding="utf-8"))
    return json.loads(unescape(found.group(1)))


def cell(data: dict, case: str, column: str) -> list:
    labels = [entry["label"] for entry in data["columns"]]
    row = next(row for row in data["cases"] if row["case"] == case)
    return row["cells"][labels.index(column)]


def test_site_from_results_files(spark, results, tmp_path):
    out = tmp_path / "site"
    assert main(["analyze", "site", str(results), "--out", str(out)]) == 0
    assert sorted(path.name for path in out.iterdir()) == sorted(
        ["index.html", "matrix.html", "scores.html", "history.html", "compare.html", "releases.html", "matrix.svg",
         "history.svg", "certified"])  # certified/: where the register of certification bundles goes
    data = page_data(out / "matrix.html")
    assert [column["label"] for column in data["columns"]] == ["alpha 1.0", "alpha 2.0", "beta 1.0"]
    passed, failed, unsupported = (data["outcomes"].index(name) for name in ("passed", "failed", "unsupported"))
    # The column alpha 1.0 is its newest run at that version (run 2): c1@v0 failed there, with evidence.
    c1 = cell(data, "c1", "alpha 1.0")
    assert [entry[:2] for entry in c1] == [[0, failed], [1, passed]]
    evidence = data["evidence"][c1[0][2]]
    assert json.loads(evidence["expected"]) == {"error_code": "INVALID_TXN_STATE"}
    assert json.loads(evidence["observed"]) == {"error_code": 0}
    assert evidence["cites"] == "KIP-98: the coordinator MUST refuse it"
    assert evidence["step"] == "2 send EndTxn"
    assert [(shown["api"], json.loads(shown["request"])) for shown in evidence["exchanges"]] == [
        ("EndTxn", {"marker": "2 send EndTxn"})]  # the departing step's exchange, not the one before it
    assert evidence["reproduce"] == "conformance run --target alpha --item kip98.transactions::c1@v0"
    assert [entry[:2] for entry in cell(data, "c1", "beta 1.0")] == [[0, passed], [1, unsupported]]
    assert [entry[:3] for entry in cell(data, "c2", "alpha 2.0")][0][1] == failed
    # Passing cells carry no evidence: the page ships only what a click can open.
    assert all(entry[2] is None for entry in cell(data, "c3", "alpha 1.0"))

    scores = (out / "scores.html").read_text()
    assert re.search(r"<td>KIP-98</td>\s*<td><span class='share'>66.7%</span> <span class='count'>2/3</span>", scores)
    assert "graded with harness" in scores and "h1" in scores

    history = (out / "history.html").read_text()
    assert history.count("(broker changed)") == 1 and history.count("(harness changed)") == 1
    # run 2: c1@v0 regressed; run 3: it improved and c2@v0 regressed.
    assert re.search(rf"{RUN_2}</td>.*?<td class='regression'>1</td><td class='improvement'>0</td>", history, re.S)
    assert re.search(rf"{RUN_3}</td>.*?<td class='regression'>1</td><td class='improvement'>1</td>", history, re.S)
    assert re.search(r"<td>kip98.transactions::c1@v0</td><td>1.0</td><td>h1</td><td>2</td><td>1</td>", history)

    for picture in ("matrix.svg", "history.svg"):
        ElementTree.fromstring((out / picture).read_text())  # well-formed XML, served alone as image/svg+xml
    svg = (out / "history.svg").read_text()
    assert svg.count("class='broker-change'") == 1 and svg.count("class='harness-change'") == 1  # alpha's third run
    assert "<script" not in (out / "index.html").read_text()  # nothing to run on the overview


def test_site_from_a_warehouse_takes_the_evidence_from_its_exchanges(spark, results, tmp_path):
    warehouse = tmp_path / "warehouse"
    assert main(["analyze", "ingest", str(results), "--warehouse", str(warehouse)]) == 0
    out = tmp_path / "site"
    assert main(["analyze", "site", str(warehouse), "--out", str(out)]) == 0
    data = page_data(out / "compare.html")
    assert [column["label"] for column in data["columns"]] == ["alpha 1.0", "alpha 2.0", "beta 1.0"]
    evidence = data["evidence"][cell(data, "c1", "alpha 1.0")[0][2]]
    assert evidence["expected"] is None and evidence["cites"] == ""  # a warehouse keeps no bodies
    assert [(shown["api"], shown["step"]) for shown in evidence["exchanges"]] == [("EndTxn", "2 send EndTxn")]
    assert data["messages"][evidence["message"]].startswith("2 send EndTxn: expected INVALID_TXN_STATE")


def test_two_products_named_on_one_port_are_two_columns_and_an_older_warehouse_still_reads(spark, results, tmp_path):
    """Attached brokers named PRODUCT:VERSION@HOST:PORT: each product is its own column, named, its address beside
    it; a warehouse written before results carried target_name (its items table has no such column) still reads."""
    from interop_history import run
    from report_records import write_jsonl

    warehouse = tmp_path / "warehouse"
    assert main(["analyze", "ingest", str(results), "--warehouse", str(warehouse)]) == 0
    items = spark.read.parquet(str(warehouse / "items"))
    assert "target_name" in items.columns
    older = tmp_path / "older"
    items.drop("target_name").write.partitionBy("target", "date").parquet(str(older / "items"))
    (older / "exchanges").mkdir()
    outcomes = {("c1", 0): "passed", ("c2", 0): "failed", ("c3", 0): "passed"}
    rows = [{**row, "target_name": "acme"} for row in run("20261123T010000Z-eeeeee", "acme:2.1@127.0.0.1:19092",
                                                          "2.1", "h2", "2026-11-23", outcomes)]
    rows += [{**row, "target_name": "zeta"} for row in run("20261124T010000Z-ffffff", "zeta:7@127.0.0.1:19092",
                                                           "7", "h2", "2026-11-24", outcomes)]
    named = write_jsonl(tmp_path / "named.jsonl", rows)
    out = tmp_path / "site"
    assert main(["analyze", "site", str(older), str(named), "--out", str(out)]) == 0
    labels = [column["label"] for column in page_data(out / "matrix.html")["columns"]]
    assert labels == ["acme 2.1 (127.0.0.1:19092)", "alpha 1.0", "alpha 2.0", "beta 1.0", "zeta 7 (127.0.0.1:19092)"]
