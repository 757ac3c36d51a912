"""Explored departures in `conformance findings` and the interop site's rerun command: beside the suites' own,
reproduced by the case exploration wrote."""

from __future__ import annotations

from conformance.report.documents import findings_markdown, latest_runs
from conformance.report.itemref import reproduce
from conformance.results.record import ResultRecord


def row(run_id: str, suite: str, case: str, outcome: str, **more) -> ResultRecord:
    return ResultRecord.from_line({"run_id": run_id, "target": "tansu", "target_version": "0.6.0", "suite": suite,
                                   "case": case, "outcome": outcome, "api_version": more.pop("api_version", None),
                                   **more})


SUITE_ROW = row("20261128T090000Z-aaaaaa", "kip98.produce", "write-outside", "failed", api_version=9,
                nodeid="suites/kip98/produce.yaml::write-outside[tansu-v9]", expected={"error_code": "NONE"})
EXPLORED = row("20261128T100000Z-bbbbbb", "explore", "produce.sequence", "failed", api_version=9,
               artifacts={"case": "/tmp/cases/explore.tansu.produce-sequence.0a1b2c3d.yaml",
                          "history": "/tmp/cases/histories/x.json"}, message="a gap was accepted")


def test_an_explored_departure_is_reproduced_by_its_written_case():
    assert reproduce(EXPLORED) == "conformance run --target tansu /tmp/cases/explore.tansu.produce-sequence.0a1b2c3d.yaml"
    history_only = ResultRecord.from_line({**EXPLORED.evidence(), "artifacts": {"history": "/tmp/cases/histories/x.json"}})
    assert reproduce(history_only) == "no suite form: the explored history is in /tmp/cases/histories/x.json"
    assert reproduce(SUITE_ROW) == "conformance run --target tansu --item kip98.produce::write-outside@v9"


def test_a_later_exploration_does_not_hide_the_suites_run_of_the_same_target():
    older_suites = row("20261128T080000Z-cccccc", "kip98.produce", "write-outside", "passed", api_version=9)
    kept = latest_runs([older_suites, SUITE_ROW, EXPLORED])
    assert kept == [SUITE_ROW, EXPLORED]
    text = findings_markdown(kept)
    departures = text.split("## Departures", 1)[1].split("## Blocked", 1)[0]
    assert "write-outside" in departures  # the suites' departure and the explored one, in one table
    assert "explore.tansu.produce-sequence.0a1b2c3d.yaml" in departures  # the reproduce column names the case
