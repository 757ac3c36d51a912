"""The pytest plugin, driven through pytester with a fake target kind and a runner that never touches a network.

The real loader and the real Runner's version expansion are used; only ``Runner.run`` is replaced
(tests/support/plugin_runs.py), so each test states the outcomes it wants per case id.
"""

from __future__ import annotations

import json

import plugin_runs
import pytest
from plugin_runs import (
    COMMIT, EPOCH, NO_API, SUITE, FakeTarget, FakeTargetKinds, Recorder, collected_ids, plugin_arguments, run,
)

from conformance.results.store import read_lines
from conformance.results.record import SCHEMA_VERSION as RESULTS_SCHEMA_VERSION, Outcome

pytest_plugins = ["pytester"]

outcomes, suites = plugin_runs.outcomes, plugin_runs.suites  # the fake target and runner, as fixtures


# ------------------------------------------------------------------------------ collection
def test_items_are_one_per_case_version_and_target_in_a_stable_order(suites):
    result = run(suites, "--target", "fake", "--target", "fake-b", "--collect-only", "-q")
    names = [line.split("::", 1)[1] for line in collected_ids(result)]
    assert names == [
        f"{COMMIT}[fake-v0]", f"{COMMIT}[fake-v1]", f"{COMMIT}[fake-v2]",
        f"{COMMIT}[fake-b-v0]", f"{COMMIT}[fake-b-v1]", f"{COMMIT}[fake-b-v2]",
        f"{EPOCH}[fake-v3]", f"{EPOCH}[fake-b-v3]",
        f"{NO_API}[fake]", f"{NO_API}[fake-b]",
    ]
    assert all(line.startswith("suites/kip98/end_txn.yaml::") for line in collected_ids(result))


@pytest.mark.parametrize("jobs", [1, 4])
def test_items_running_ahead_report_the_serial_ones_last(suites, jobs):
    """A serial item waits its turn for most of a concurrent run: reported in suite order, it would hold back
    every report after it. One after another (jobs 1), the suite's order stays."""
    (suites.path / "suites" / "kip98" / "end_txn.yaml").write_text(SUITE.replace(
        'under_test: {api: EndTxn, versions: "0-2"}', 'under_test: {api: EndTxn, versions: "0-2"}\n    serial: true'))
    result = run(suites, "--target", "fake", "--conformance-jobs", str(jobs), "--collect-only", "-q")
    names = [line.split("::", 1)[1] for line in collected_ids(result)]
    serial = [f"{COMMIT}[fake-v0]", f"{COMMIT}[fake-v1]", f"{COMMIT}[fake-v2]"]
    assert names == ([*serial, f"{EPOCH}[fake-v3]", f"{NO_API}[fake]"] if jobs == 1 else
                     [f"{EPOCH}[fake-v3]", f"{NO_API}[fake]", *serial])


def test_collection_starts_no_target(suites):
    run(suites, "--target", "fake", "--collect-only", "-q")
    assert FakeTarget.events == []


def test_without_a_target_the_plugin_collects_no_suite(suites):
    suites.makepyfile(test_ordinary="def test_ordinary():\n    assert 1 + 1 == 2\n")
    result = run(suites, "-q")
    result.assert_outcomes(passed=1)
    assert "end_txn" not in result.stdout.str()


def test_with_a_target_and_no_paths_only_the_suites_are_collected(suites):
    suites.makepyfile(test_ordinary="def test_ordinary():\n    assert False\n")
    result = run(suites, "--target", "fake", "--collect-only", "-q")
    ids = collected_ids(result)
    assert len(ids) == 5
    assert not any("test_ordinary" in line for line in ids)


def test_templates_folders_are_not_collected_as_suites(suites):
    templates = suites.path / "suites" / "templates"
    templates.mkdir()
    (templates / "txn.yaml").write_text("templates: {}\n")
    result = run(suites, "--target", "fake", "--collect-only", "-q")
    assert not any("templates" in line for line in collected_ids(result))
    assert result.ret == 0


def test_a_malformed_suite_is_a_collection_error_naming_file_line_and_key(suites):
    (suites.path / "suites" / "kip98" / "broken.yaml").write_text(
        "suite: kip98.broken\ntitle: t\nspec: KIP-98\ncases:\n  - id: x\n    title: t\n    cites: c\n"
        "    requirement: OUGHT\n    steps: [{wait: 1}]\n")
    result = run(suites, "--target", "fake", "-q")
    result.stdout.fnmatch_lines(["*broken.yaml:8: cases[[]0[]].requirement: *"])
    assert result.ret == pytest.ExitCode.INTERRUPTED  # pytest stops on collection errors


def test_yaml_files_named_on_the_command_line_run_wherever_they_are(suites):
    elsewhere = suites.path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mine.yaml").write_text(SUITE.replace("kip98.end-txn", "mine"))
    result = run(suites, "--target", "fake", "--collect-only", "-q", "elsewhere/mine.yaml")
    assert len(collected_ids(result)) == 5
    assert all(line.startswith("elsewhere/mine.yaml::") for line in collected_ids(result))


def test_suite_option_without_target_collects_for_the_default_kafka_target(suites):
    result = run(suites, "--suite", "suites/kip98", "--collect-only", "-q", "-k", NO_API)
    assert [line.split("::", 1)[1] for line in collected_ids(result)] == [f"{NO_API}[kafka]"]


def test_one_item_runs_by_its_node_id(suites):
    result = run(suites, "--target", "fake", f"suites/kip98/end_txn.yaml::{COMMIT}[fake-v2]")
    result.assert_outcomes(passed=1)


def test_items_run_by_the_ids_reports_print_whatever_the_path(suites):
    """The rerun command of every report names the item by its id: no path of the checkout it ran from."""
    suite = "kip98.end-txn"
    result = run(suites, "--target", "fake", "--target", "fake-b", "--collect-only", "-q",
                 f"--conformance-item={suite}::{COMMIT}@v2", f"--conformance-item={suite}::{NO_API}")
    assert [line.split("::", 1)[1] for line in collected_ids(result)] == [
        f"{COMMIT}[fake-v2]", f"{COMMIT}[fake-b-v2]", f"{NO_API}[fake]", f"{NO_API}[fake-b]"]
    every_version = run(suites, "--target", "fake", "--collect-only", "-q", f"--conformance-item={suite}::{COMMIT}")
    assert [line.split("::", 1)[1] for line in collected_ids(every_version)] == [
        f"{COMMIT}[fake-v0]", f"{COMMIT}[fake-v1]", f"{COMMIT}[fake-v2]"]


def test_an_item_id_that_names_no_item_is_a_usage_error_and_records_nothing(suites):
    suite = "kip98.end-txn"
    result = run(suites, "--target", "fake", f"--conformance-item={suite}::{COMMIT}@v9")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--item {suite}::{COMMIT}@v9: no such item in the suites read*"])
    assert not (suites.path / "reports/results.jsonl").exists()


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (["-m", "kip98 and must"], [f"{COMMIT}[fake-v0]", f"{COMMIT}[fake-v1]", f"{COMMIT}[fake-v2]"]),
        (["-m", "should or may"], [f"{EPOCH}[fake-v3]", f"{NO_API}[fake]"]),
        (["-m", "slow"], [f"{EPOCH}[fake-v3]"]),
        (["-m", "api(name='InitProducerId')"], [f"{EPOCH}[fake-v3]"]),
        (["-k", "EndTxn"], [f"{COMMIT}[fake-v0]", f"{COMMIT}[fake-v1]", f"{COMMIT}[fake-v2]"]),
        (["-k", "fake-v1 or no-api"], [f"{COMMIT}[fake-v1]", f"{NO_API}[fake]"]),
    ],
)
def test_markers_and_keywords_select_cases_even_with_strict_markers(suites, expression, expected):
    result = run(suites, "--target", "fake", "--strict-markers", "--collect-only", "-q", *expression)
    assert [line.split("::", 1)[1] for line in collected_ids(result)] == expected


# ------------------------------------------------------------------------------ outcomes
def test_passing_cases_pass_and_start_the_target_once(suites):
    result = run(suites, "--target", "fake", "-q")
    result.assert_outcomes(passed=5)
    assert FakeTarget.events == ["start fake", "stop fake"]


def test_unsupported_version_is_a_skip_saying_unsupported(suites, outcomes):
    outcomes[COMMIT] = Outcome.UNSUPPORTED
    result = run(suites, "--target", "fake", "-rs")
    assert result.parseoutcomes() == {"passed": 2, "unsupported": 3}  # pytest's last line counts as the table does
    result.stdout.fnmatch_lines(["SKIPPED *unsupported: fake advertises EndTxn v0-v0, not v*"])


def test_must_deviation_fails_with_citation_expected_actual_and_transcript(suites, outcomes):
    outcomes[COMMIT] = Outcome.FAILED
    result = run(suites, "--target", "fake", "-k", "fake-v1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "MUST not met: 1 send EndTxn: error_code: expected NONE, got INVALID_TXN_STATE",
        "title: * A transaction that wrote to one partition commits",
        "case: * kip98.end-txn::commit-one-partition  (suites/kip98/end_txn.yaml:6)",
        "target: * fake (9.9.9), EndTxn v1",
        "cites: * KIP-98: EndTxnRequest: Command true(1) means COMMIT",
        "step 1: * 1 send EndTxn",
        "expected: * NONE",
        "actual: * INVALID_TXN_STATE",
        "transcript:",
        "-> EndTxn v1 committed=true",
        "FAILED *commit-one-partition[[]fake-v1[]] - MUST not me*",
    ])
    assert "Traceback" not in result.stdout.str() and "def runtest" not in result.stdout.str()


def test_should_deviation_is_xfail_unless_strict(suites, outcomes):
    outcomes[EPOCH] = Outcome.FAILED
    lenient = run(suites, "--target", "fake", "-k", EPOCH, "-rx")
    # an xfail to pytest (the build passes), a failed item in the last line as in the results and the table
    assert lenient.ret == pytest.ExitCode.OK and lenient.parseoutcomes() == {"failed": 1, "deselected": 4}
    lenient.stdout.fnmatch_lines(["XFAIL *SHOULD not met: 1 send EndTxn: error_code: expected NONE, *"])
    strict = run(suites, "--target", "fake", "-k", EPOCH, "--conformance-strict")
    strict.assert_outcomes(failed=1)
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    pytest_strict_mode = run(suites, "--target", "fake", "-k", EPOCH, "--strict")  # pytest's own, unrelated
    assert pytest_strict_mode.ret == pytest.ExitCode.OK


IMPLEMENTATION_SUITE = """\
suite: kip98.internals
title: What Apache Kafka does where the KIPs leave it open
spec: KIP-98
cases:
  - id: internal-topic
    title: A write to the transaction log's topic is refused
    requirement: IMPLEMENTATION
    cites: "Kafka stores transaction state in __transaction_state"
    under_test: {api: EndTxn, versions: "0"}
    steps:
      - send: EndTxn
        fields: {transactional_id: "t", producer_id: 1, producer_epoch: 0, committed: true}
        expect: {error_code: NONE}
"""


def test_an_implementation_case_that_differs_from_kafka_is_an_xfail_even_under_strict_and_counted_apart(
        suites, outcomes):
    outcomes["internal-topic"] = Outcome.DIFFERS
    (suites.path / "suites" / "kip98" / "internals.yaml").write_text(IMPLEMENTATION_SUITE)
    allure_directory = suites.path / "allure-results"
    result = run(suites, "--target", "fake", "--conformance-strict", "-rx", "--alluredir", str(allure_directory))
    assert result.parseoutcomes() == {"passed": 5, "differs": 1}  # "1 differs from Kafka", as the table says
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["conformance target fake: ran: 5 passed, 1 differs from Kafka",
                                 "XFAIL *internal-topic* - differs from Kafka (IMPLEMENTATION, not a conformance "
                                 "requirement): 1 send EndTxn*"])
    [record] = [row for row in read_lines(suites.path / "reports" / "results.jsonl") if row["case"] == "internal-topic"]
    assert (record["outcome"], record["verdict"], record["schema_version"]) == ("differs", "xfailed", RESULTS_SCHEMA_VERSION)
    [allure_result] = [json.loads(path.read_text()) for path in allure_directory.glob("*-result.json")
                       if "transaction log" in path.read_text()]
    assert allure_result["status"] == "skipped"  # never failed
    assert "differs from Kafka" in allure_result["statusDetails"]["message"]
    # the trace Allure shows is the case's place and headline, not pytest's traceback through the plugin
    trace = allure_result["statusDetails"]["trace"]
    assert trace.startswith("suites/kip98/internals.yaml:") and "differs from Kafka" in trace, trace
    assert "Traceback" not in trace and "conclude(" not in trace
    categories = json.loads((allure_directory / "categories.json").read_text())
    assert "Differs from Kafka (IMPLEMENTATION)" in [category["name"] for category in categories]


def test_strict_can_be_set_in_the_ini_file(suites, outcomes):
    outcomes[EPOCH] = Outcome.FAILED
    suites.makeini("[pytest]\nconformance_strict = true\n")
    run(suites, "--target", "fake", "-k", EPOCH).assert_outcomes(failed=1)


def test_harness_error_fails_saying_it_is_no_verdict(suites, outcomes):
    outcomes[NO_API] = Outcome.ERROR
    result = run(suites, "--target", "fake", "-k", NO_API)
    result.assert_outcomes(errors=1)  # pytest's last line counts it as the table does, and the build fails
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["error, no verdict on the target: infrastructure: connection reset by peer"])


def test_runner_skip_is_a_pytest_skip_with_its_reason(suites, outcomes):
    outcomes[NO_API] = Outcome.SKIPPED
    result = run(suites, "--target", "fake", "-k", NO_API, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED *skipped by the runner"])


# ------------------------------------------------------------------------------ targets
def test_an_unavailable_target_of_a_matrix_errors_its_items_and_says_so_while_the_others_run(suites):
    result = run(suites, "--target", "fake", "--target", "fake-unavailable")
    result.assert_outcomes(passed=5, errors=5)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # a target that could not run is never green
    result.stdout.fnmatch_lines(["*target 'fake-unavailable' cannot run here: no fake engine on this machine*",
                                 "conformance target fake: ran: 5 passed",
                                 "conformance target fake-unavailable: DOWN: *no fake engine on this machine"])
    assert FakeTarget.events.count("start fake-unavailable") == 1
    outcomes = [record["outcome"] for record in read_lines(suites.path / "reports/results.jsonl")
                if record["target"] == "fake-unavailable"]
    assert outcomes == ["error"] * 5


def test_a_run_whose_only_target_fails_to_start_stops_at_once_with_the_diagnosis(suites):
    result = run(suites, "--target", "fake-broken")
    result.assert_outcomes(errors=1)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*target 'fake-broken' failed to start: RuntimeError: fake broker exited*",
                                 "*ERROR fatal: address already in use*",
                                 "*no target left to test: target 'fake-broken' failed to start*"])
    assert FakeTarget.events.count("start fake-broken") == 1
    records = read_lines(suites.path / "reports/results.jsonl")
    assert len(records) == 5 and {record["outcome"] for record in records} == {"error"}
    assert sum(record["message"].startswith("not run: ") for record in records) == 4


def test_unknown_target_spec_is_a_usage_error(suites):
    result = run(suites, "--target", "nonsense!", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no target kind matches 'nonsense!'*"])


def test_client_config_is_checked_before_anything_runs(suites):
    (suites.path / "sasl.properties").write_text("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n")
    result = run(suites, "--target", "127.0.0.1:9", "--client-config", "sasl.properties", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*sasl.mechanism: the raw client speaks PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
                                 "OAUTHBEARER, not GSSAPI*"])
    result = run(suites, "--target", "fake", "--client-config", "sasl.properties", "--collect-only")
    result.stderr.fnmatch_lines(["*--client-config is for HOST:PORT targets*"])


def test_principals_are_read_and_checked_before_anything_runs(suites):
    (suites.path / "guest.properties").write_text("security.protocol=SSL\nssl.certificate.location=c.pem\n")
    result = run(suites, "--target", "127.0.0.1:9", "--principal", "guest=guest.properties", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--principal guest (guest.properties): ssl.key.location: a client certificate "
                                 "needs both*"])
    (suites.path / "guest.properties").write_text("security.protocol=SASL_PLAINTEXT\nsasl.username=alice\n")
    result = run(suites, "--target", "fake", "--principal", "guest=guest.properties", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--principal is for HOST:PORT targets*"])
    result = run(suites, "--target", "127.0.0.1:9", "--principal", "guest=guest.properties", "--collect-only")
    assert result.ret == pytest.ExitCode.OK


# ------------------------------------------------------------------------------ results
def test_results_file_has_one_line_per_item_and_keeps_earlier_runs(suites, outcomes):
    outcomes[COMMIT] = Outcome.FAILED
    results = suites.path / "out" / "results.jsonl"
    run(suites, "--target", "fake", "--target", "fake-unavailable", "--results", str(results),
        "--conformance-run-id", "first")
    run(suites, "--target", "fake", "-k", NO_API, "--results", str(results), "--conformance-run-id", "second")
    first = read_lines(results, run_id="first")
    assert len(first) == 10
    assert len(read_lines(results, run_id="second")) == 1
    by_verdict = {}
    for record in first:
        by_verdict.setdefault(record["verdict"], []).append(record["nodeid"].split("::")[1])
    assert sorted(by_verdict) == ["error", "failed", "passed"]  # the unavailable target errors, never skips
    assert sorted(by_verdict["failed"]) == [f"{COMMIT}[fake-v{version}]" for version in range(3)]
    failed = next(record for record in first if record["verdict"] == "failed")
    assert (failed["expected"], failed["actual"], failed["target_version"]) == ("NONE", "INVALID_TXN_STATE", "9.9.9")


def test_results_default_to_reports_under_the_rootdir(suites):
    run(suites, "--target", "fake", "-k", NO_API)
    [record] = read_lines(suites.path / "reports" / "results.jsonl")
    assert record["outcome"] == "passed" and record["target"] == "fake"


def test_plugins_hear_every_result_and_the_end_of_the_session(suites):
    run(suites, "--target", "fake", "--results", "r.jsonl")
    assert sorted(result.case_id for result in Recorder.results) == [COMMIT] * 3 + [EPOCH, NO_API]
    assert Recorder.finished == [str(suites.path / "r.jsonl")]


XDIST_CONFTEST = """
from conformance.pytest_plugin import plugin
from conformance.extension import hookimpl
from conformance.suite.model import CaseResult
from conformance.results.record import Outcome
from conformance.runner.runner import Runner
from conformance.targets.base import Target
from conformance.targets.registry import TargetKind


class Quiet(Target):
    def start(self): pass
    def stop(self): pass
    bootstrap = "127.0.0.1:1"


@hookimpl  # a conftest's conformance hooks join the run's plugins
def conformance_register_targets(registry):
    registry.add(TargetKind("quiet", "test double", lambda spec: spec == "quiet", Quiet, lambda: None))


class Passing(Runner):
    def run(self, case, version):
        return CaseResult(case_id=case.id, suite_id=case.suite.id, title=case.title, kip=case.kip, api=case.api,
                          version=version, target=self.target.spec, target_version=None, outcome=Outcome.PASSED,
                          requirement=case.requirement, cites=case.cites, duration_s=0.0, run_id=self.run_id)


plugin.make_runner = Passing
"""


def test_xdist_workers_share_one_results_file_and_run_id(suites):
    pytest.importorskip("xdist")
    suites.makeconftest(XDIST_CONFTEST)
    result = suites.runpytest_subprocess(*plugin_arguments(), "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                                         "--target", "quiet", "-n", "2")
    result.assert_outcomes(passed=5)
    records = read_lines(suites.path / "reports" / "results.jsonl")
    assert len(records) == 5
    assert len({record["run_id"] for record in records}) == 1  # the controller's, not one per worker
    assert {record["worker"] for record in records} <= {"gw0", "gw1"}


# ------------------------------------------------------------------------------ allure
def test_allure_results_are_distinct_per_version_labelled_and_classified(suites, outcomes):
    outcomes[COMMIT] = Outcome.FAILED
    outcomes[EPOCH] = Outcome.FAILED
    outcomes[NO_API] = Outcome.ERROR
    allure_directory = suites.path / "allure-results"
    run(suites, "--target", "fake", "--alluredir", str(allure_directory))
    results = [json.loads(path.read_text()) for path in allure_directory.glob("*-result.json")]
    assert len({result["historyId"] for result in results}) == len(results) == 5
    status = {result["name"]: result["status"] for result in results}
    assert status == {"A transaction that wrote to one partition commits": "failed",  # a MUST deviation
                      "A retried InitProducerId bumps the epoch": "skipped",  # SHOULD: xfail
                      "A case about no single API": "broken"}  # harness error
    commit = [result for result in results if result["name"] == "A transaction that wrote to one partition commits"]
    assert "KIP-98" in commit[0]["description"]
    labels = {label["name"]: label["value"] for label in commit[0]["labels"] if label["name"] != "tag"}
    assert (labels["epic"], labels["feature"], labels["severity"]) == ("KIP-98", "EndTxn", "critical")
    assert {parameter["name"] for parameter in commit[0]["parameters"]} == {"target", "api_version"}
    assert {attachment["name"] for attachment in commit[0]["attachments"]} >= {"transcript", "transcript.json"}
    categories = json.loads((allure_directory / "categories.json").read_text())
    assert [category["name"] for category in categories][:2] == ["Blocked: a set-up or check step departed", "Spec deviations"]
    environment = (allure_directory / "environment.properties").read_text()
    assert "target.fake=9.9.9" in environment


def test_allure_is_untouched_without_alluredir(suites):
    result = run(suites, "--target", "fake", "-q")
    result.assert_outcomes(passed=5)
    assert not list(suites.path.rglob("*-result.json"))


# ------------------------------------------------------------------------------ helpers
def test_marker_names_are_usable_in_expressions():
    from conformance.pytest_plugin.items import marker_name

    assert [marker_name(text) for text in ["KIP-98", "KIP-447 (draft)", "EndTxn", "fault tier"]] == [
        "kip98", "kip447", "endtxn", "fault_tier"]


def test_suite_text_in_this_module_is_valid(tmp_path):
    from conformance.runner.steps import bundled
    from conformance.suite.loader import load_suites

    (tmp_path / "s.yaml").write_text(SUITE)
    suites_loaded, errors = load_suites([tmp_path / "s.yaml"], components=bundled())
    assert errors == [] and [case.id for case in suites_loaded[0].cases] == [COMMIT, EPOCH, NO_API]


# ------------------------------------------------------------------------------ the command
def test_conformance_run_runs_the_suites_and_prints_a_summary_per_target(suites, outcomes, capsys, monkeypatch):
    from conformance.cli import main
    from conformance.extension import facade

    # The command runs pytest itself: the fake target kind joins the run's plugin manager as an installed plugin would.
    made = facade.make_plugin_manager
    monkeypatch.setattr(facade, "make_plugin_manager",
                        lambda **options: made(**{**options, "plugins": [*options["plugins"], FakeTargetKinds()]}))
    outcomes[COMMIT] = Outcome.FAILED
    monkeypatch.chdir(suites.path)
    exit_code = main(["run", "--target", "fake", "--target", "fake-unavailable", "--alluredir", "",
                      "--run-id", "cli-run", "--", "-p", "no:cacheprovider",
                      "-p", "no:hypothesispytest", "-q"])
    assert exit_code == pytest.ExitCode.TESTS_FAILED
    output = capsys.readouterr().out
    assert "run cli-run (reports/results.jsonl)" in output
    assert "fake\t2\t3\t0\t0\t0\t0\t0\t5" in output  # passed, failed, differs from Kafka, blocked, error, ...
    assert "fake-unavailable\t0\t0\t0\t0\t5\t0\t0\t5" in output


def test_an_unwritable_results_path_is_one_usage_error_before_any_item(suites):
    (suites.path / "a-file").write_text("not a folder")
    result = run(suites, "--target", "fake", "--results", str(suites.path / "a-file" / "results.jsonl"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cannot write results to */a-file/results.jsonl: */a-file is not a writable folder"])
    assert "start fake" not in FakeTarget.events


DRAFT_SUITE = """\
suite: kip98.draft
title: A draft
spec: KIP-98
cases:
  - id: drafted
    title: A case graded against a draft text
    cites: "a draft"
    draft: true
    under_test: {api: EndTxn, versions: "0"}
    steps:
      - send: EndTxn
        fields: {transactional_id: "t", producer_id: 1, producer_epoch: 0, committed: true}
        expect: {error_code: NONE}
"""


LONG_SUITE = DRAFT_SUITE.replace("suite: kip98.draft", "suite: kip98.long").replace("    draft: true\n", "") \
    .replace("spec: KIP-98\n", "spec: KIP-98\ntags: [long]\n").replace("id: drafted", "id: lengthy")


def test_cases_tagged_long_are_skipped_saying_how_to_run_them_and_run_when_asked(suites):
    (suites.path / "suites" / "kip98" / "long.yaml").write_text(LONG_SUITE)
    run(suites, "--target", "fake", "--results", "default.jsonl")
    [skipped] = [record for record in read_lines(suites.path / "default.jsonl") if record["case"] == "lengthy"]
    assert skipped["outcome"] == "skipped" and "run with --long" in skipped["message"]
    run(suites, "--target", "fake", "--conformance-long", "--results", "long.jsonl")
    [ran] = [record for record in read_lines(suites.path / "long.jsonl") if record["case"] == "lengthy"]
    assert ran["outcome"] == "passed"


def test_every_collected_item_has_a_result_line_and_only_failures_keep_their_transcript(suites, outcomes):
    outcomes[COMMIT] = Outcome.FAILED
    (suites.path / "suites" / "kip98" / "draft.yaml").write_text(DRAFT_SUITE)
    result = run(suites, "--target", "fake")
    result.assert_outcomes(passed=2, failed=3, skipped=1)
    records = read_lines(suites.path / "reports" / "results.jsonl")
    assert len(records) == 6 and {record["schema_version"] for record in records} == {RESULTS_SCHEMA_VERSION}
    assert all(record["harness_version"] for record in records)
    [draft] = [record for record in records if record["case"] == "drafted"]
    assert draft["outcome"] == "skipped" and "--conformance-drafts" in draft["message"]
    kept = {record["case"]: bool(record["transcript"]) for record in records if record["case"] != "drafted"}
    assert kept == {COMMIT: True, EPOCH: False, NO_API: False}
    run(suites, "--target", "fake", "--transcripts", "all", "--results", "all.jsonl")
    assert all(record["transcript"] for record in read_lines(suites.path / "all.jsonl") if record["case"] != "drafted")
