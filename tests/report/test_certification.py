"""Certification levels, fingerprint, page and badges, from hand-made records (no broker, no browser)."""

from __future__ import annotations

import json

import pytest
from report_records import crashed_run_records, result_record as record, write_jsonl

from conformance.cli import main
from conformance.report import known_failures
from conformance.report.certify import fingerprint, levels
from conformance.report.certify.levels import INCOMPLETE, MISSED, NOT_RUN, REACHED, Level, LevelsError, grade
from conformance.protocol.schema import VersionRange

IDEMPOTENT = Level(id="idem", name="Idempotent", summary="", suites=("kip98.idempotence",),
                   demands={"Produce": VersionRange(3, 11)}, allow_known_failures=True)
TXN = Level(id="txn", name="Transactions", summary="", suites=("kip98.transactions",), includes=("idem",),
            demands={"EndTxn": None}, features={"transaction.version": 0})
STRICT = Level(id="strict", name="Strict", summary="", requirements=("MUST", "SHOULD", "MAY"), includes=("txn",))
FEATURES = {"transaction.version": 2}


def produce(case, version, outcome, **extra):
    return record(case, version, outcome, suite="kip98.idempotence", api="Produce", **extra)


def statuses(grades):
    return {one.level.id: one.status for one in grades}


def test_every_must_item_passing_reaches_the_levels():
    rows = [produce("dup", 3, "passed"), produce("dup", 11, "passed"), record("commit", 3, "passed")]
    assert statuses(grade([IDEMPOTENT, TXN, STRICT], rows, FEATURES)) == {"idem": REACHED, "txn": REACHED,
                                                                         "strict": REACHED}


def test_a_departure_misses_the_level_and_the_levels_including_it():
    rows = [produce("dup", 3, "failed"), record("commit", 3, "passed")]
    grades = grade([IDEMPOTENT, TXN, STRICT], rows, FEATURES)
    assert statuses(grades) == {"idem": MISSED, "txn": MISSED, "strict": MISSED}
    assert "includes Idempotent: missed" in grades[1].reasons


def test_blocked_and_error_items_make_a_level_incomplete_not_missed():
    rows = [produce("dup", 3, "passed"), record("commit", 3, "blocked"), record("abort", 3, "error")]
    grades = grade([IDEMPOTENT, TXN], rows, FEATURES)
    assert statuses(grades) == {"idem": REACHED, "txn": INCOMPLETE}
    assert [row.case for row in grades[1].incomplete] == ["commit", "abort"]


def test_unsupported_versions_miss_a_level_only_where_it_demands_them():
    rows = [produce("dup", 3, "passed"), produce("dup", 12, "unsupported"),  # Produce v12 is not demanded
            record("commit", 3, "passed")]
    assert statuses(grade([IDEMPOTENT, TXN], rows, FEATURES)) == {"idem": REACHED, "txn": REACHED}
    rows.append(record("commit", 5, "unsupported"))  # EndTxn is demanded at every version
    grades = grade([IDEMPOTENT, TXN], rows, FEATURES)
    assert statuses(grades)["txn"] == MISSED and grades[1].unadvertised[0].api_version == 5


def test_implementation_and_draft_items_are_never_counted():
    rows = [produce("dup", 3, "passed"), produce("internal", 3, "failed", requirement="IMPLEMENTATION"),
            produce("states", 3, "differs", requirement="IMPLEMENTATION"),
            produce("draft", 3, "failed", draft=True), record("commit", 3, "passed")]
    grades = grade([IDEMPOTENT, TXN, STRICT], rows, FEATURES)
    assert statuses(grades) == {"idem": REACHED, "txn": REACHED, "strict": REACHED}
    assert grades[2].counted == 2


def test_should_items_count_only_where_the_level_lists_them():
    rows = [produce("dup", 3, "passed"), produce("nice", 3, "failed", requirement="SHOULD"),
            record("commit", 3, "passed")]
    assert statuses(grade([IDEMPOTENT, TXN, STRICT], rows, FEATURES)) == {"idem": REACHED, "txn": REACHED,
                                                                         "strict": MISSED}


def test_features_are_demanded_from_the_fingerprint():
    rows = [produce("dup", 3, "passed"), record("commit", 3, "passed")]
    v2 = Level(id="v2", name="v2", summary="", suites=("kip98.transactions",), features={"transaction.version": 2})
    assert statuses(grade([v2], rows, {"transaction.version": 1})) == {"v2": MISSED}
    assert statuses(grade([v2], rows, None)) == {"v2": INCOMPLETE}  # no fingerprint: cannot tell


def test_suites_of_a_level_that_did_not_run_make_it_incomplete():
    rows = [produce("dup", 3, "passed")]
    grades = grade([IDEMPOTENT], rows, FEATURES, known_suites=["kip98.idempotence", "kip98.other"])
    assert statuses(grades) == {"idem": REACHED}  # kip98.other is not one of the level's suites
    wide = Level(id="w", name="w", summary="", suites=("kip98.*",))
    grades = grade([wide], rows, FEATURES, known_suites=["kip98.idempotence", "kip98.other"])
    assert statuses(grades) == {"w": INCOMPLETE} and grades[0].not_run == ["kip98.other"]
    assert statuses(grade([TXN], [], FEATURES)) == {"txn": NOT_RUN}


def test_known_failures_are_waived_only_where_the_level_allows():
    rows = [produce("dup", 3, "failed"), record("commit", 3, "passed")]
    waivers = [known_failures.Entry("known_failures", "kip98.idempotence::dup", (), "vendor says so", None, None, "f")]
    no_waivers = Level(id="idem2", name="Idem strict", summary="", suites=("kip98.idempotence",))
    grades = grade([IDEMPOTENT, no_waivers], rows, FEATURES, waivers)
    assert statuses(grades) == {"idem": REACHED, "idem2": MISSED}
    assert grades[0].label == "reached with 1 waived"


def test_the_bundled_levels_file_loads_and_counts_no_implementation_items():
    bundled = levels.load_levels()
    assert [level.id for level in bundled][:4] == ["idempotent-producer", "transactions", "exactly-once",
                                                   "transactions-v2"]
    assert all("IMPLEMENTATION" not in level.requirements for level in bundled)


def test_a_level_counting_implementation_details_is_refused(tmp_path):
    path = tmp_path / "levels.yaml"
    path.write_text("levels:\n  - {id: x, name: X, requirements: [MUST, IMPLEMENTATION]}\n")
    with pytest.raises(LevelsError, match="IMPLEMENTATION details never count"):
        levels.load_levels(path)
    path.write_text("levels:\n  - {id: x, name: X, includes: [later]}\n  - {id: later, name: L}\n")
    with pytest.raises(LevelsError, match="not defined before it"):
        levels.load_levels(path)


API_VERSIONS = {"api": "ApiVersions", "version": 4, "step": "negotiate", "response": {
    "error_code": 0, "api_keys": [{"api_key": 0, "min_version": 3, "max_version": 11},
                                  {"api_key": 26, "min_version": 0, "max_version": 4}],
    "supported_features": [{"name": "transaction.version", "min_version": 0, "max_version": 2}],
    "finalized_features": [{"name": "transaction.version", "min_version_level": 2, "max_version_level": 2}]}}


def test_fingerprint_from_the_results_transcripts():
    found = fingerprint.from_records([record("commit", 3, "passed", transcript=[API_VERSIONS])])
    assert found["apis"] == [{"api_key": 0, "name": "Produce", "min": 3, "max": 11},
                             {"api_key": 26, "name": "EndTxn", "min": 0, "max": 4}]
    assert found["finalized_features"] == {"transaction.version": 2}
    assert "recorded in the results" in found["source"]
    assert fingerprint.from_records([record("commit", 3, "passed")]) is None


def test_certify_from_results_writes_page_json_and_badges(tmp_path, capsys):
    rows = [produce("dup", 3, "passed", transcript=[API_VERSIONS]), produce("dup", 4, "failed"),
            record("commit", 3, "blocked"), record("abort", 3, "unsupported")]
    results = write_jsonl(tmp_path / "r.jsonl", rows)
    out = tmp_path / "cert"
    assert main(["certify", "--results", str(results), "-o", str(out), "--require", "idempotent-producer"]) == 1
    assert "did not reach the required level 'idempotent-producer'" in capsys.readouterr().err
    folder = next(out.glob("kafka-*"))
    facts = json.loads((folder / "certification.json").read_text())
    assert facts["fingerprint"]["finalized_features"] == {"transaction.version": 2}
    assert len(facts["results"]["digest"]) == 64 and facts["results"]["items"] == 4
    by_id = {level["id"]: level for level in facts["levels"]}
    assert by_id["idempotent-producer"]["status"] == "missed"
    assert by_id["idempotent-producer"]["departures"] == ["kip98.idempotence::dup@v4"]
    assert facts["departures"][0]["reproduce"] == (
        "conformance run --target kafka --item kip98.idempotence::dup@v4")
    assert facts["without_verdict"][0]["item"] == "kip98.transactions::commit@v3"
    html = (folder / "index.html").read_text()
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in html
    assert "kip98.idempotence::dup@v4" in html and "Without a verdict (blocked or error)" in html
    badge = (folder / "badges" / "idempotent-producer.svg").read_text()
    assert badge.startswith("<svg") and "missed" in badge


def test_implementation_items_that_differ_from_kafka_are_shown_apart_and_never_graded(tmp_path):
    rows = [produce("dup", 3, "passed", transcript=[API_VERSIONS]), record("commit", 3, "passed"),
            produce("to-internal-topic", 4, "differs", requirement="IMPLEMENTATION"),
            # results schema 2 wrote the same kind of item as "failed": read back as "differs"
            produce("to-internal-topic", 5, "failed", requirement="IMPLEMENTATION", schema_version=2)]
    out = tmp_path / "cert"
    assert main(["certify", "--results", str(write_jsonl(tmp_path / "r.jsonl", rows)), "-o", str(out)]) == 0
    folder = next(out.glob("kafka-*"))
    facts = json.loads((folder / "certification.json").read_text())
    for level in facts["levels"]:  # never a departure, nor an item without a verdict, in any level
        assert level["departures"] == [] and level["without_verdict"] == [], level
    assert facts["counts"]["by_outcome"] == {"passed": 2, "differs": 2}
    assert facts["counts"]["by_requirement"]["IMPLEMENTATION"] == {"differs": 2}
    assert facts["departures"] == [] and facts["without_verdict"] == []
    assert [item["item"] for item in facts["differs_from_kafka"]] == [
        "kip98.idempotence::to-internal-topic@v4", "kip98.idempotence::to-internal-topic@v5"]
    html = (folder / "index.html").read_text()
    assert "<th class='differs'>differs from Kafka</th>" in html
    assert "<h2 id='differs'>Differs from Kafka (IMPLEMENTATION)</h2>" in html
    assert "None: no item departed from the spec." in html
    assert "<rect class='differs'" in html and "fill='#0969da'" in html  # the matrix cell, in its own colour
    assert ">differs from Kafka</text>" in html  # and its legend entry


PREVIEW = Level(id="2pc", name="Two-phase commit (preview)", summary="", suites=("kip939.*",), preview=True,
                demands={"InitProducerId": VersionRange(6, 6)})
EVERYTHING = Level(id="all", name="Everything", summary="", suites=("*",))


def test_preview_items_count_only_in_a_preview_level():
    rows = [record("commit", 3, "passed"),
            record("keep", 6, "failed", suite="kip939.two-phase-commit", api="InitProducerId", tags=["preview"])]
    grades = grade([EVERYTHING, PREVIEW], rows, FEATURES)
    assert statuses(grades) == {"all": REACHED, "2pc": MISSED}
    assert (grades[0].counted, grades[1].counted) == (1, 1)


def test_a_preview_level_on_a_target_without_the_version_is_missed_not_reached():
    rows = [record("keep", 6, "unsupported", suite="kip939.two-phase-commit", api="InitProducerId", tags=["preview"])]
    grades = grade([PREVIEW], rows, FEATURES)
    assert statuses(grades) == {"2pc": MISSED} and grades[0].unadvertised


def test_an_adopted_level_may_not_include_a_preview_level(tmp_path):
    path = tmp_path / "levels.yaml"
    path.write_text("levels:\n  - {id: p, name: P, preview: true}\n  - {id: x, name: X, includes: [p]}\n")
    with pytest.raises(LevelsError, match="a preview never counts toward an adopted level"):
        levels.load_levels(path)


def test_the_bundled_preview_level_is_included_by_no_other():
    bundled = levels.load_levels()
    previews = {level.id for level in bundled if level.preview}
    assert previews == {"two-phase-commit-preview"}
    assert not any(previews & set(level.includes) for level in bundled)
    consumer_groups = next(level for level in bundled if level.id == "exactly-once-consumer-groups")
    assert consumer_groups.includes == ("exactly-once",) and consumer_groups.suites == ("kip848.*",)


def test_a_level_missed_on_a_known_kafka_bug_names_the_bug_and_that_it_is_unfixed(tmp_path, capsys):
    """KAFKA-20357: Apache Kafka 4.4.0 misses Strict on its own bug; the level's reasons, the page and the console
    say which bug and that no release up to 4.4.0 fixed it."""
    epoch = dict(suite="cluster.epoch-rotation-failover", api="InitProducerId", kip="KIP-360")
    rows = [record("reinit-retry-after-coordinator-moved", version, "failed", **epoch) for version in (3, 4, 5)]
    rows.append(record("commit", 3, "failed"))
    [strict] = grade([STRICT], rows, FEATURES)
    assert strict.status == MISSED
    assert strict.reasons[0] == "4 departures from the spec (3 of them KAFKA-20357, unfixed as of 4.4.0)"
    results = write_jsonl(tmp_path / "r.jsonl", rows)
    main(["certify", "--results", str(results), "-o", str(tmp_path / "cert")])
    shown = capsys.readouterr().out
    assert "Strict: missed: " in shown and "KAFKA-20357, unfixed as of 4.4.0" in shown
    page = next((tmp_path / "cert").glob("*/index.html")).read_text(encoding="utf-8")
    assert "3 of them KAFKA-20357, unfixed as of 4.4.0" in page


def test_a_waiver_whose_failure_passes_now_is_stale():
    rows = [produce("dup", 3, "passed"), produce("order", 3, "failed"), record("commit", 3, "passed")]
    stale = known_failures.Entry("known_failures", "kip98.idempotence::dup", (), "fixed since", None, None, "k.yaml:1")
    live = known_failures.Entry("known_failures", "kip98.idempotence::order", (), "still there", None, None, "k.yaml:2")
    [idempotent] = grade([IDEMPOTENT], rows, FEATURES, [stale, live])
    assert idempotent.status == REACHED and idempotent.stale == [stale]
    assert [entry for _, entry in idempotent.waived] == [live]
    assert idempotent.reasons[-1].startswith("1 stale waiver: the known failure it waives passes now, so --require "
                                             "fails until it is removed (kip98.idempotence::dup, k.yaml:1)")


def test_require_fails_on_a_level_reached_with_a_stale_waiver(tmp_path, capsys):
    rows = [produce(case, version, "passed") for case in ("dup", "order") for version in range(3, 12)]
    rows += [record("dup", version, "passed", suite="kip98.produce-validation", api="Produce")
             for version in range(3, 12)]
    rows += [record("init", version, "passed", suite="kip98.idempotence", api="InitProducerId")
             for version in range(0, 6)]
    known = tmp_path / "known.yaml"
    known.write_text("known_failures:\n  - case: kip98.idempotence::dup\n    reason: the broker used to append twice\n")
    results = write_jsonl(tmp_path / "r.jsonl", rows)
    arguments = ["certify", "--results", str(results), "-o", str(tmp_path / "out"), "--require", "idempotent-producer"]
    assert main(arguments) == 0  # reached, no waiver
    capsys.readouterr()
    assert main([*arguments, "--known-failures", str(known)]) == 1
    err = capsys.readouterr().err
    assert "certify: kafka reached 'idempotent-producer', but with stale waivers (the known failures they waive pass " \
           "now; remove them): kip98.idempotence::dup (all versions): the broker used to append twice" in err


def test_a_reason_is_never_cut_inside_a_sentence():
    message = ("the target does not support DescribeConfigs, so its settings cannot be read, which tansu 0.6.0 never "
               "does on this listener or any other one it serves. The rest is detail.")
    rows = [produce("dup", 3, "passed"), produce("order", 3, "skipped", message=message)]
    [idempotent] = grade([IDEMPOTENT], rows, FEATURES)
    assert f"1 skipped, no verdict (e.g. {message.split(' The rest')[0]})" in idempotent.reasons
    from conformance.report.certify.page import whole_lines

    long = "\n".join(f"line {index} " + "x" * 150 for index in range(5))
    assert whole_lines(long) == "\n".join(long.splitlines()[:2]) + "\n(3 more lines in the results)"
    assert whole_lines("y" * 600) == "y" * 600  # the first line whole, however long


def test_the_page_opens_with_the_levels_by_status_and_a_banner_for_a_crash(tmp_path):
    from conformance.results.record import STOPPED_ANSWERING

    rows = [produce("dup", version, "passed") for version in range(3, 12)]
    rows.append(record("commit", 3, "failed", message=f"{STOPPED_ANSWERING}: the process exited (SIGABRT)"))
    main(["certify", "--results", str(write_jsonl(tmp_path / "r.jsonl", rows)), "-o", str(tmp_path / "out")])
    html = next((tmp_path / "out").iterdir()).joinpath("index.html").read_text()
    headline = html.split("<p id='headline'>")[1].split("</p>")[0]
    assert headline.startswith("<b class='status-missed'>Missed</b>: Transactions, Strict. ")
    assert "<b class='status-incomplete'>Incomplete</b>: Idempotent producer" in headline
    banner = html.split("<div class='banner' id='crash-banner'>")[1].split("</div>")[0]
    assert "The target crashed 1 time" in banner and "kip98.transactions::commit@v3" in banner
    assert f"{STOPPED_ANSWERING}: the process exited (SIGABRT)" in banner


def crashed_run(tmp_path):
    """The certification folder of :func:`report_records.crashed_run`'s results."""
    main(["certify", "--results", str(write_jsonl(tmp_path / "r.jsonl", crashed_run_records())), "-o",
          str(tmp_path / "out")])
    return next((tmp_path / "out").iterdir())


def test_identical_items_are_one_row_with_their_count_and_the_items_folded(tmp_path):
    html = (crashed_run(tmp_path) / "index.html").read_text()
    banner = html.split("<div class='banner' id='lost-banner'>")[1].split("</div>")[0]  # the lost target, up front
    assert "<b>The target was lost: 1436 items did not run</b>" in banner
    assert "<li>1436: target &#39;kafka&#39; stopped answering after kip98.transactions::commit@v3</li>" in banner
    glance = html.split("<p id='at-a-glance'>")[1].split("</p>")[0]  # under the headline: what to look at
    assert glance == ("To look at: <a href='#departures'>1 departing case (3 items)</a>; <a href='#incomplete'>1436 "
                      "items without a verdict (1 row)</a>; <a href='#skipped'>233 items skipped (2 reasons)</a>.")
    without = html.split("<h2 id='incomplete'>")[1].split("<h2")[0]
    assert without.startswith("Without a verdict (blocked or error): 1436 items</h2>")
    [row] = without.split("<tr class='incomplete-row'>")[1:]  # 1,436 items, one message: one row
    assert "<td class='count'>1436</td>" in row and "<summary>1436 items</summary>" in row
    assert row.count("class='folded-item'") == 1436 and "<details class='items'>" in row  # folded, not open
    assert "stopped answering after kip98.transactions::commit@v3\nthe process exited" in row
    departures = html.split("<h2 id='departures'>")[1].split("<h2")[0]
    [departed] = departures.split("<tr class='departure-item'>")[1:]  # the same departure at v3, v4, v5
    assert "kip98.transactions::commit (v3, v4, v5)" in departed and "<td class='count'>3</td>" in departed
    assert "conformance run --target kafka --item kip98.transactions::commit@v5" in departed


def test_skips_are_listed_by_reason_with_their_counts(tmp_path):
    html = (crashed_run(tmp_path) / "index.html").read_text()
    skipped = html.split("<h2 id='skipped'>")[1].split("<h2")[0]
    assert skipped.startswith("Skipped: 233 items, 2 reasons</h2>")
    reasons = skipped.split("<tr class='skip-reason'>")[1:]
    assert [(reason.split("<td>")[1].split("<")[0], reason.split("<td class='count'>")[1].split("<")[0])
            for reason in reasons] == [
        ("target &#39;kafka&#39; has no fault &#39;stop-node&#39;", "232"),
        ("checks a draft KIP text; run with --conformance-drafts", "1")]
    # the failover items' row says what would run them; the draft's, of a suite nothing provides, says nothing more
    assert "<span class='reasons need'>needs a way to stop a node (--node-control FILE: the commands" in reasons[0]
    assert "class='reasons need'" not in reasons[1]


def test_a_skip_reason_that_says_what_would_run_its_items_is_not_told_again():
    from conformance.report.certify.page import _skipped

    attached = "target '127.0.0.1:9092' has no fault 'stop-node': needs a way to stop a node (--node-control FILE)"
    rows = [record("stop-leader", 2, "skipped", suite="cluster.failover", message=attached)]
    assert _skipped(rows)["needs"] == []


def test_a_missed_level_that_counted_skips_for_want_of_node_control_says_how_to_give_it():
    from conformance.report.certify.needs import add_needs

    failover = Level(id="failover", name="Failover", summary="", suites=("kip98.idempotence", "cluster.*"))
    rows = [produce("dup", 3, "failed"),
            record("stop-leader", 2, "skipped", suite="cluster.failover", message="no fault 'stop-node'")]
    [graded] = grade([failover], rows, FEATURES)
    add_needs([graded], [])
    assert graded.status == MISSED  # a departure misses it; the skip still needs saying
    assert any(reason.startswith("cluster suites: needs a way to stop a node (--node-control FILE")
               for reason in graded.reasons)
    [reached] = grade([IDEMPOTENT], [produce("dup", 3, "passed"), produce("dup", 11, "passed")], FEATURES)
    add_needs([reached], [])
    assert reached.status == REACHED and reached.reasons == []  # nothing lacking, nothing said
