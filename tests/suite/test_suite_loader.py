"""The suite loader reports every problem with file, line and key, and never stops at a bad file."""

from pathlib import Path

import pytest

from conformance.suite.loader import lint, load_suites
from conformance.runner.steps import bundled

ROOT = Path(__file__).resolve().parents[2]
BROKEN = ROOT / "fixtures" / "broken-suites"


def problems(name: str) -> list[str]:
    return [str(error) for error in lint([BROKEN / name], bundled())]


def test_unknown_key_names_line_and_key():
    found = problems("unknown-key.yaml")
    assert any(":10: cases[0].steps[0].expekt: unknown key" in text for text in found), found


def test_unknown_error_name_suggests_close_match():
    found = problems("bad-error-name.yaml")
    assert len(found) == 1
    assert ":12: cases[0].steps[0].expect.error_code:" in found[0]
    assert "PRODUCER_FENCED" in found[0]


def test_yaml_syntax_error_names_line():
    (found,) = problems("bad-yaml.yaml")
    assert "bad-yaml.yaml:" in found and "(yaml)" in found
    assert int(found.split(":")[1]) >= 2


def test_every_problem_of_a_case_is_reported():
    found = "\n".join(problems("unknown-api-and-template.yaml"))
    assert "unknown API 'EndTransaction'" in found
    assert "bad version range '5-'" in found
    assert "unknown step template 'txn.begn'" in found
    assert "bad expression ${1 +}" in found


def test_bad_files_do_not_stop_the_others():
    suites, errors = load_suites([BROKEN, ROOT / "suites" / "kip98"], components=bundled())
    assert {suite.id for suite in suites} >= {"kip98.transactions", "kip98.idempotence"}
    assert {Path(error.path).name for error in errors} == {
        "unknown-key.yaml", "bad-error-name.yaml", "bad-yaml.yaml", "unknown-api-and-template.yaml", "typos.yaml"}


def test_bundled_suites_are_clean():
    suites, errors = load_suites([ROOT / "suites"], components=bundled())
    assert errors == []
    assert sum(len(suite.cases) for suite in suites) >= 60


def test_yaml_on_is_not_a_boolean(tmp_path):
    suite = tmp_path / "retry.yaml"
    suite.write_text("""suite: ok.retry
title: retry keys stay strings
spec: KIP-98
cases:
  - id: retrying
    title: retry on a retriable error
    cites: none
    steps:
      - send: ApiVersions
        retry: {on: [COORDINATOR_LOAD_IN_PROGRESS]}
""")
    suites, errors = load_suites([suite], components=bundled())
    assert errors == []
    assert suites[0].cases[0].steps[0]["retry"] == {"on": ["COORDINATOR_LOAD_IN_PROGRESS"]}


NAMED_RETRY_SUITE = """suite: ok.named-retry
title: a named retry
spec: KIP-98
cases:
  - id: retrying
    title: a step names its retry
    cites: none
    steps:
      - use: txn.init
        with: {txn: t}
        retry: coordinator-or-concurrent
      - send: EndTxn
        fields: {transactional_id: t, producer_id: 1, producer_epoch: 0, committed: true}
        retry: RETRY
"""


def test_a_named_retry_is_the_retry_it_stands_for(tmp_path):
    from conformance.suite.retries import COORDINATOR_NOT_READY

    suite = tmp_path / "named.yaml"
    suite.write_text(NAMED_RETRY_SUITE.replace("RETRY", "coordinator"))
    suites, errors = load_suites([suite], components=bundled())
    assert errors == []
    init, end = suites[0].cases[0].steps
    assert end["retry"] == {"on": list(COORDINATOR_NOT_READY), "for_ms": 20000}
    # on a use: step it reaches the template's last step, as a written-out retry does
    assert init["retry"] == {"on": ["CONCURRENT_TRANSACTIONS", *COORDINATOR_NOT_READY], "for_ms": 20000}


def test_an_unknown_named_retry_names_the_known_ones(tmp_path):
    suite = tmp_path / "named.yaml"
    suite.write_text(NAMED_RETRY_SUITE.replace("RETRY", "coordinater"))
    found = "\n".join(str(error) for error in lint([suite], bundled()))
    assert "retry" in found and "coordinater" in found and "coordinator-or-concurrent" in found, found


def test_the_schema_offers_every_named_retry_and_no_other():
    import json

    from conformance.suite.retries import NAMED

    schema = json.loads((ROOT / "conformance" / "suite" / "suite.schema.json").read_text())
    retry = schema["$defs"]["step"]["properties"]["retry"]
    assert sorted(retry["examples"]) == sorted(NAMED)  # what an editor offers as you type
    assert all(name in retry["description"] for name in NAMED)


def test_templates_expand_with_arguments():
    suites, _ = load_suites([ROOT / "suites" / "kip98" / "transactions.yaml"], components=bundled())
    case = next(case for case in suites[0].cases if case.id == "commit-one-partition")
    sends = [step.get("send") or ("produce" if "produce" in step else None) for step in case.steps]
    assert sends[:3] == ["InitProducerId", "AddPartitionsToTxn", "produce"]
    assert case.steps[0]["fields"]["transactional_id"] == "${txn_ids.main}"
    assert case.steps[1]["fields"]["v3_and_below_topics"][0]["partitions"] == [0]


@pytest.mark.parametrize("text, variables, expected", [
    ("${epoch + 1}", {"epoch": 4}, 5),
    ("${topics.in}", {"topics": {"in": "t-1"}}, "t-1"),
    ("prefix-${run}", {"run": "r1"}, "prefix-r1"),
    ("${response.items[1]}", {"response": {"items": [3, 4]}}, 4),
])
def test_expressions(text, variables, expected):
    from conformance.suite.expressions import evaluate_text

    assert evaluate_text(text, variables) == expected


def test_expression_names_what_is_missing():
    from conformance.suite.expressions import ExpressionError, evaluate_text

    with pytest.raises(ExpressionError, match="nothing named 'pid'"):
        evaluate_text("${pid}", {"epoch": 1})


def test_expectations_on_a_use_step_reach_the_templates_last_step():
    suites, _ = load_suites([ROOT / "suites" / "kip447" / "group-fencing.yaml"], components=bundled())
    case = next(case for case in suites[0].cases if case.id == "require-stable-sees-pending-offsets-kafka-answer")
    fetch = next(step for step in case.steps if step.get("send") == "OffsetFetch")
    assert fetch["expect"]["fields"]["8+"] == {"groups[0].topics[0].partitions[0].error_code": "UNSTABLE_OFFSET_COMMIT"}


def test_use_step_save_adds_to_the_templates_names(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text(MINIMAL_SUITE_WITH_USE_SAVE)
    suites, errors = load_suites([suite], components=bundled())
    assert errors == []
    init = suites[0].cases[0].steps[0]
    assert init["save"] == {"pid": "producer_id", "epoch": "producer_epoch", "first_pid": "producer_id"}


def test_versions_beyond_the_loaded_specs_point_at_a_missing_plugin(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text(MINIMAL_SUITE_WITH_USE_SAVE.replace('versions: "0+"', 'versions: "42+"'))
    _, errors = load_suites([suite], components=bundled())
    assert [error.key for error in errors] == ["cases[0].under_test.versions"]
    assert "InitProducerId has no version 42+ in the loaded specs" in errors[0].message


MINIMAL_SUITE_WITH_USE_SAVE = """\
suite: t.use-save
title: t
spec: KIP-98
transactional_ids: [main]
cases:
  - id: c
    title: c
    cites: c
    under_test: {api: InitProducerId, versions: "0+"}
    steps:
      - use: txn.init
        with: {txn: "${txn_ids.main}"}
        save: {first_pid: producer_id}
"""


SHARED_RESTART_SUITE = """\
suite: t.shared-restart
title: t
spec: KIP-98
cases:
  - id: c
    title: c
    cites: c
    serial: restart
    steps:
      - send: ApiVersions
      - fault: FAULT
      - send: ApiVersions
        expect: {error_code: NONE}
"""


def test_serial_restart_marks_a_case_that_shares_its_restarts(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text(SHARED_RESTART_SUITE.replace("FAULT", "restart"))
    suites, errors = load_suites([suite], components=bundled())
    assert errors == []
    (case,) = suites[0].cases
    assert case.serial and case.shares_restart
    plain = [case for suite in load_suites([ROOT / "suites" / "cluster"], components=bundled())[0] for case in suite.cases
             if case.serial]
    assert plain and not any(case.shares_restart for case in plain)


@pytest.mark.parametrize("serial, args, errors", [
    ("", "{api: Produce}", ["proxy.drop_response would pick other cases' requests: keep it to this case's "
                            "(args: {client: \"${client_id}\"}) or make the case serial: true"]),
    ("", "{client: '${client_id}', api: Produce}", []),
    ("", "{api: EndTxn, fields: {transactional_id: x}}", []),
    ("    serial: true\n", "{api: Produce}", []),
])
def test_a_case_beside_others_keeps_its_proxy_faults_to_its_own_requests(tmp_path, serial, args, errors):
    suite = tmp_path / "s.yaml"
    suite.write_text(SHARED_RESTART_SUITE.replace("    serial: restart\n", serial)
                     .replace("FAULT", f"{{name: proxy.drop_response, args: {args}}}"))
    _, found = load_suites([suite], components=bundled())
    assert [error.message for error in found] == errors


@pytest.mark.parametrize("fault, message", [
    ("disconnect", "serial: restart is for a case with a restart step (fault: restart); this one has none"),
    ("{name: proxy.cut_after, args: {count: 1}}",
     "serial: restart runs the case beside others, which its fault 'proxy.cut_after' would reach: use serial: true"),
])
def test_serial_restart_on_a_case_that_does_more_or_less_than_restart_is_refused(tmp_path, fault, message):
    suite = tmp_path / "s.yaml"
    suite.write_text(SHARED_RESTART_SUITE.replace("FAULT", fault) + "      - fault: restart\n" * (fault != "disconnect"))
    _, errors = load_suites([suite], components=bundled())
    assert [(error.line, error.key, error.message) for error in errors] == [(8, "cases[0].serial", message)]
