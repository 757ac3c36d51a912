"""The interop site's Kafka releases page: releases × KIP and × known-bugs ledger entry (no Spark: the model
and the template, on cells made by hand)."""

from __future__ import annotations

from types import SimpleNamespace

from conformance import pages
from conformance.analysis.interop import model


def _cell(target, version, case, outcome, api_version=3, suite="kip890.transaction-v2", kip="KIP-890"):
    return SimpleNamespace(target=target, target_version=version, suite=suite, case=case, kip=kip, outcome=outcome,
                           api_version=api_version, run_id="r1", item=f"{suite}::{case}@v{api_version}")


def _column(target, version):
    return {"target": target, "version": version, "label": f"{target} {version}"}


def test_each_release_shows_its_departures_with_the_bug_behind_them_and_the_ledger_where_it_lives():
    cells = [_cell("kafka:3.5.2", "3.5.2", "produce-to-partition-not-added", "failed"),
             _cell("kafka:3.5.2", "3.5.2", "end-txn-v5-bumps-epoch", "unsupported"),
             _cell("kafka:3.6.0", "3.6.0", "produce-to-partition-not-added", "passed"),
             _cell("tansu", "0.6.0", "produce-to-partition-not-added", "failed")]
    columns = [_column("tansu", "0.6.0"), _column("kafka:3.6.0", "3.6.0"), _column("kafka:3.5.2", "3.5.2")]
    evidence = {"r1|kafka:3.5.2|kip890.transaction-v2::produce-to-partition-not-added@v3": {}}
    shown = model.releases(cells, columns, evidence)
    assert [column["release"] for column in shown["columns"]] == ["3.5.2", "3.6.0"]  # Kafka only, oldest first
    old, new = shown["rows"][0]["cells"]
    assert (old["passed"], old["judged"]) == (0, 1) and (new["passed"], new["judged"]) == (1, 1)
    assert old["departures"] == [{"case": "kip890.transaction-v2::produce-to-partition-not-added", "outcome": "failed",
                                  "versions": "v3", "evidence": next(iter(evidence)),
                                  "bug": "KAFKA-14402, fixed in 3.6.0",
                                  "jira": "https://issues.apache.org/jira/browse/KAFKA-14402"}]
    hanging = next(bug for bug in shown["bugs"] if bug["key"] == "KAFKA-14402")
    assert hanging["states"] == ["found", "passes"]
    page = pages.render("site_releases.html.j2", title="Apache Kafka releases", current="releases.html", data="",
                        generated="", labels={}, releases=shown)
    assert "matrix.html#evidence=r1%7Ckafka%3A3.5.2%7Ckip890.transaction-v2%3A%3Aproduce-to-partition-not-added%40v3" in page
    assert "href='https://issues.apache.org/jira/browse/KAFKA-14402'>KAFKA-14402, fixed in 3.6.0</a>" in page
    assert "<td class='bug-found'>found</td><td class='bug-passes'>passes</td>" in page


def test_without_a_kafka_release_the_page_says_how_to_get_one():
    page = pages.render("site_releases.html.j2", title="t", current="releases.html", data="", generated="",
                        labels={}, releases=model.releases([], [_column("tansu", "0.6.0")], {}))
    assert "conformance releases" in page
