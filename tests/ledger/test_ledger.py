"""The known-bugs ledger: its file is valid and true to the bundled suites, and reports name its bugs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conformance import ledger, resources
from conformance.report import gate, known_bugs
from conformance.report.console import compact
from conformance.report.documents import findings_markdown
from conformance.results.record import ResultRecord
from conformance.suite.loader import load_suites
from conformance.runner.steps import bundled
from conformance.targets.kafka import releases as kafka_releases


def _case_ids() -> set[str]:
    suites, errors = load_suites([resources.suites()], components=bundled())
    assert errors == []
    return {f"{suite.id}::{case.id}" for suite in suites for case in suite.cases}


def test_the_ledger_has_at_least_twelve_entries_each_with_cases_or_a_reason():
    bugs = ledger.bugs()
    assert len(bugs) >= 12
    for bug in bugs:
        assert bug.cases or bug.undetectable, bug.key
        assert bug.wire and bug.title and bug.affected


def test_every_case_the_ledger_names_is_a_bundled_case():
    known = _case_ids()
    missing = [(bug.key, case) for bug in ledger.bugs() for case in bug.cases if case not in known]
    assert missing == []


def test_every_release_the_ledger_names_is_a_kafka_release():
    for bug in ledger.bugs():
        named = [span.first for span in bug.affected] + [span.last for span in bug.affected]
        named += [bug.fixed_in] if bug.fixed_in else []
        named += [bug.verify[role] for role in bug.verify_roles()]
        assert set(named) <= set(kafka_releases.RELEASES), bug.key


@pytest.mark.parametrize("change, message", [
    (lambda data: data["bugs"][0].update(key="KAFKA-x"), "does not match"),
    (lambda data: data["bugs"][0].update(fixed_in="3.3.0"), "not after every affected release"),
    (lambda data: data["bugs"].append(dict(data["bugs"][0])), "listed twice"),
    (lambda data: data["bugs"][0].update(cases=[], undetectable=None), "says why"),
    (lambda data: data["bugs"][0].update(affected=["3.5.0..3.4.0"]), "ends before it begins"),
    (lambda data: data["bugs"][2].update(verify={"affected": "3.6.0", "fixed": "3.7.0"}), "not an affected release"),
    (lambda data: data["bugs"][2].update(verify={"affected": "3.5.2"}), "exactly when fixed_in does"),
    (lambda data: data["bugs"][0].pop("sources"), "'sources' is a required property"),
    (lambda data: data["bugs"][0].update(sources={"inferred": ["from dates"]}), "'established' is a required"),
])
def test_a_malformed_ledger_is_refused_naming_file_and_entry(tmp_path, change, message):
    data = yaml.safe_load(resources.known_bugs().read_text(encoding="utf-8"))
    change(data)
    path = tmp_path / "bugs.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(ledger.LedgerError, match=message) as raised:
        ledger.load(path)
    assert str(path) in str(raised.value)


def test_a_key_both_kept_out_and_an_entry_is_refused(tmp_path):
    data = yaml.safe_load(resources.known_bugs().read_text(encoding="utf-8"))
    data["kept_out"][0]["key"] = data["bugs"][0]["key"]
    path = tmp_path / "bugs.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(ledger.LedgerError, match=f"kept_out\\[0\\] \\({data['bugs'][0]['key']}\\): the key is an entry"):
        ledger.load_kept_out(path)


def test_every_entry_and_every_bug_kept_out_says_how_its_facts_are_known():
    for item in ledger.bugs() + ledger.kept_out():
        assert item.sources.established, item.key
    kept = {bug.key: bug for bug in ledger.kept_out()}
    # KAFKA-15784 affected no release (its fix shipped with the code it fixed, in 3.7.0); KAFKA-17754 is cited nowhere
    assert {"KAFKA-15784", "KAFKA-17754"} <= set(kept) and not set(kept) & {bug.key for bug in ledger.bugs()}


def test_the_4_4_0_failover_departures_name_the_last_epoch_bug_and_the_previous_id_bug_is_fixed():
    """InitProducerId retried across a failover after a rotation still fails on 4.4.0: the last epoch is not
    persisted (KAFKA-20357); the previous producer id is (KAFKA-20310), which the EndTxn retry shows."""
    for case in ("reinit-retry-after-coordinator-moved", "reinit-retry-after-coordinator-killed"):
        bug = ledger.match(f"cluster.epoch-rotation-failover::{case}", "4.4.0", "kafka:4.4.0,nodes=3")
        assert bug is not None and bug.label() == "KAFKA-20357, unfixed as of 4.4.0"
    assert ledger.match("cluster.epoch-rotation-failover::end-txn-retry-after-coordinator-moved", "4.4.0") is None
    fixed = next(bug for bug in ledger.bugs() if bug.key == "KAFKA-20310")
    assert not fixed.affects("4.4.0") and fixed.fixed_in


def _departure(release="3.5.2", case="produce-to-partition-not-added", target=None, outcome="failed"):
    return {"run_id": "r1", "target": target or f"kafka:{release}", "target_version": release,
            "suite": "kip890.transaction-v2", "case": case, "api_version": 3, "outcome": outcome,
            "requirement": "MUST", "message": "got NONE", "cites": "KIP-890", "nodeid": "x", "verdict": "failed"}


def test_a_departure_on_an_affected_release_names_the_bug_and_its_fix():
    assert ledger.known_bug(_departure()) == "KAFKA-14402, fixed in 3.6.0"
    assert ledger.known_bug(_departure(target="proxy+kafka:3.5.2")) == "KAFKA-14402, fixed in 3.6.0"
    assert ledger.jira_link("KAFKA-14402, fixed in 3.6.0") == "https://issues.apache.org/jira/browse/KAFKA-14402"


@pytest.mark.parametrize("record", [
    _departure(release="3.6.0"),  # the fixed release: a departure there is a finding of its own
    _departure(outcome="passed"),
    _departure(case="another-case"),
    _departure(target="tansu"),  # another implementation is never explained by Kafka's bugs
    _departure(target="127.0.0.1:9092"),
])
def test_anything_else_names_no_bug(record):
    assert ledger.known_bug(record) is None


def test_the_console_findings_and_gate_name_the_bug():
    record = _departure()
    read = ResultRecord.from_line(dict(record))
    assert "known bug: KAFKA-14402, fixed in 3.6.0" in compact.render([read])
    assert "[KAFKA-14402, fixed in 3.6.0](https://issues.apache.org/jira/browse/KAFKA-14402)" in findings_markdown([read])
    baseline = [ResultRecord.from_line(dict(record, outcome="passed", verdict="passed"))]
    report = gate.compare(baseline, [ResultRecord.from_line(dict(record))])
    assert "known bug: KAFKA-14402, fixed in 3.6.0" in gate.render(report, strict=False)
    assert gate.to_json(report, strict=False)["changes"][0]["known_bug"] == "KAFKA-14402, fixed in 3.6.0"


def test_the_matrix_is_the_latest_patch_of_each_minor_and_the_releases_the_bugs_are_checked_on():
    matrix = kafka_releases.matrix()
    assert kafka_releases.latest_patches() == ["3.3.2", "3.4.1", "3.5.2", "3.6.2", "3.7.2", "3.8.1", "3.9.2", "4.0.2",
                                               "4.1.2", "4.2.2", "4.3.1", "4.4.0"]
    for bug in ledger.bugs():
        for role in bug.verify_roles():
            assert any(why.startswith(f"{bug.key} {role}") for why in matrix[bug.verify[role]])
    assert list(matrix) == sorted(matrix, key=ledger.release_key)


def test_a_start_failure_becomes_one_line():
    message = ("target 'kafka:3.3.0' failed to start: BrokerStartFailed: Kafka 3.3.0 exited with status 1 while "
               "starting; last lines of its log:\n[x] INFO starting\n[y] ERROR Exiting Kafka due to fatal exception "
               "(kafka.Kafka$)\n[z] INFO shut down")
    line = kafka_releases.start_failure(message)
    assert "\n" not in line and "exited with status 1" in line and "fatal exception" in line


def test_the_known_bugs_page_shows_failed_and_passed_releases():
    bug = next(bug for bug in ledger.bugs() if bug.key == "KAFKA-14402")
    evidence = [dict(_departure(), known_bug=bug.label(), harness_version="0.1.0")]
    for case in bug.cases:
        suite, name = case.split("::")
        evidence += [dict(_departure(case=name), suite=suite, outcome="failed", harness_version="0.1.0"),
                     dict(_departure(release="3.6.0", case=name), suite=suite, outcome="passed", harness_version="0.1.0")]
    page = known_bugs.known_bugs_markdown(known_bugs.evidence_lines(evidence), (bug,))
    assert "**3.5.2** fails" in page and "**3.6.0** passes" in page
    half = [line for line in known_bugs.evidence_lines(evidence) if line["target_version"] == "3.5.2"][:1]
    assert "**3.5.2** DOES NOT FAIL" in known_bugs.known_bugs_markdown(
        [dict(line, outcome="passed") for line in half], (bug,))


def test_an_open_bug_fails_on_its_newest_affected_release_and_passes_nowhere():
    bug = next(bug for bug in ledger.bugs() if bug.key == "KAFKA-20357")
    assert bug.verify_roles() == ("affected",) and bug.verify_target("fixed") is None
    assert bug.verify_target("affected") == "kafka:4.4.0,nodes=3"
    evidence = []
    for case in bug.cases:
        suite, name = case.split("::")
        evidence.append(dict(_departure(release="4.4.0", case=name), suite=suite, target="kafka:4.4.0,nodes=3",
                             outcome="failed", harness_version="0.1.0"))
    page = known_bugs.known_bugs_markdown(known_bugs.evidence_lines(evidence), (bug,))
    row = next(line for line in page.splitlines() if line.startswith("| [KAFKA-20357]"))
    assert "**4.4.0** as kafka:4.4.0,nodes=3 fails (2 failed)" in row and row.endswith("| not fixed as of 4.4.0 |")
    assert "1 shown failing on the newest affected release and fixed in none" in page


def test_the_known_bugs_page_says_how_each_fact_is_known_and_lists_the_bugs_kept_out():
    page = known_bugs.known_bugs_markdown([])
    detail = page.split("### KAFKA-20310", 1)[1].split("###", 1)[0]
    assert "- **Established:** (1) ede0c94aaae3" in detail and "- **Inferred:** (1)" in detail
    kept = page.split("## Checked and kept out", 1)[1]
    assert "### [KAFKA-15784](https://issues.apache.org/jira/browse/KAFKA-15784)" in kept
    assert "- **Why kept out:** No release was affected." in kept
    assert "## Checked and kept out" not in known_bugs.known_bugs_markdown([], ledger.bugs()[:1])


def test_known_bugs_run_each_entry_on_the_target_its_cases_need():
    from conformance.cli.releases import known_bug_plan

    plan = known_bug_plan()
    assert list(plan) == sorted(plan, key=ledger.release_key)
    for bug in ledger.bugs():
        for role in bug.verify_roles():
            assert set(bug.cases) <= set(plan[bug.verify[role]][bug.verify_target(role)]), (bug.key, role)
    assert set(plan["4.4.0"]) == {"kafka:4.4.0,nodes=3", "kafka:4.4.0"}  # KAFKA-20357 needs three nodes, KAFKA-20890 one
    assert set(plan["3.9.2"]) == {"proxy+kafka:3.9.2", "kafka:3.9.2,consumer.groups=true"}


def test_known_bugs_with_releases_runs_those_releases_only():
    from conformance.cli.releases import known_bug_plan

    plan = known_bug_plan(["4.0.1", "3.5.2"])
    assert list(plan) == ["4.0.1", "3.5.2"]  # the order asked for
    assert plan["3.5.2"] == {"kafka:3.5.2": list(next(b for b in ledger.bugs() if b.key == "KAFKA-14402").cases)}
    # a release no entry is checked on runs every entry's cases, each on the target they need
    other = known_bug_plan(["3.8.1"])["3.8.1"]
    assert set(other) == {"kafka:3.8.1", "proxy+kafka:3.8.1", "kafka:3.8.1,nodes=3", "kafka:3.8.1,consumer.groups=true"}
    assert sorted(case for cases in other.values() for case in cases) == \
        sorted(case for bug in ledger.bugs() if bug.verify for case in bug.cases)


def test_the_known_bugs_command_with_releases_lists_only_those(capsys):
    from conformance.cli import main

    assert main(["releases", "--known-bugs", "--releases", "3.5.2,4.0.1", "--list"]) == 0
    listed = [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == ["3.5.2", "4.0.1"]


def test_the_evidence_file_holds_only_the_ledgers_cases_on_their_releases():
    path = Path(__file__).resolve().parents[2] / "fixtures" / "known-bugs" / "evidence.jsonl"
    if not path.is_file():
        pytest.skip("no evidence pinned yet (tools/pin_known_bugs.py)")
    import json

    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines == known_bugs.evidence_lines(lines)


def test_a_release_whose_broker_never_started_is_one_line():
    message = "target 'kafka:4.2.2' cannot run here: Kafka 4.2.2 was not ready after 60 s; last lines of its log:\n[t] INFO x"
    records = [ResultRecord.from_line(line) for line in (
        {"target": "kafka:4.2.2", "outcome": "error", "message": message},
        {"target": "kafka:4.2.2", "outcome": "skipped", "message": "needs a cluster"},
        {"target": "kafka:4.1.2", "outcome": "error", "message": "a case's own error"},
        {"target": "kafka:4.1.2", "outcome": "passed", "message": ""})]
    assert kafka_releases.not_started(records, "4.2.2") == ("target 'kafka:4.2.2' cannot run here: Kafka 4.2.2 was "
                                                             "not ready after 60 s")
    assert kafka_releases.not_started(records, "4.1.2") is None


def test_the_certification_page_names_the_bug(tmp_path):
    import json

    from conformance.cli import main

    record = dict(_departure(), path="suites/kip890/transaction-v2.yaml", kip="KIP-890", title="t", tags=[],
                  draft=False, transcript=[], schema_version=4)
    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps(record) + "\n", encoding="utf-8")
    main(["certify", "--results", str(results), "-o", str(tmp_path / "cert")])
    html = next((tmp_path / "cert").glob("*/index.html")).read_text(encoding="utf-8")
    assert "Known Apache Kafka bug: KAFKA-14402, fixed in 3.6.0" in html


def test_a_schema_error_names_the_line_of_the_field(tmp_path):
    path = tmp_path / "bugs.yaml"
    path.write_text("bugs:\n  - key: KAFKA-1\n    title: t\n  - key: KAFKA-x\n", encoding="utf-8")
    with pytest.raises(ledger.LedgerError) as raised:
        ledger.load(path)
    assert str(raised.value).startswith(f"{path}:2: bugs[0]: ")  # the first entry misses required fields
    path.write_text("bugs: [\n", encoding="utf-8")
    with pytest.raises(ledger.LedgerError, match=r":2: \(yaml\): "):
        ledger.load(path)


def test_evidence_keeps_the_latest_run_of_each_case_on_a_target():
    """A run of one entry's cases on a target shared with another entry leaves the other's evidence alone."""
    shared = [bug for bug in ledger.bugs() if bug.verify and bug.verify_target("affected") == "kafka:4.4.0,nodes=3"]
    assert len(shared) >= 2  # KAFKA-20357 and KAFKA-20734
    first, second = (bug.cases[0].split("::") for bug in shared[:2])

    def line(case, run):
        return {"suite": case[0], "case": case[1], "target": "kafka:4.4.0,nodes=3", "target_version": "4.4.0",
                "run_id": run, "outcome": "failed", "api_version": 5}

    kept = known_bugs.evidence_lines([line(first, "run-1"), line(first, "run-0"), line(second, "run-2")])
    assert sorted((item["case"], item["run_id"]) for item in kept) == sorted([(first[1], "run-1"), (second[1], "run-2")])
