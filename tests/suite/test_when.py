"""A step's ``when`` is parsed when the suite loads: a malformed one is a load error naming file, line and field,
and the runner only asks the parsed conditions whether they hold."""

from __future__ import annotations

import copy

import pytest

from conformance.runner.steps import bundled
from conformance.suite.loader import lint, load_suites
from conformance.suite.when import When, WhenError, parse

SUITE = """\
suite: t.when
title: t
spec: KIP-98
cases:
  - id: c
    title: c
    cites: c
    requirement: IMPLEMENTATION
    under_test: {{api: ApiVersions, versions: "3+"}}
    steps:
      - send: ApiVersions
        when: {when}
        expect: {{error_code: NONE}}
"""


def write(tmp_path, when: str):
    path = tmp_path / "s.yaml"
    path.write_text(SUITE.format(when=when))
    return path


@pytest.mark.parametrize("when, field, words", [
    ('{feature: {transaction.version: ">=two"}}', "when.feature.transaction.version", "not a level"),
    ('{versions: "3-"}', "when.versions", "bad version range"),
])
def test_a_malformed_when_is_a_load_error_with_file_line_and_field(tmp_path, when, field, words):
    path = write(tmp_path, when)
    found = [str(error) for error in lint([path], bundled())]
    assert any(text.startswith(f"{path}:12: cases[0].steps[0].{field}: ") and words in text for text in found), found


def test_a_loaded_step_carries_its_parsed_when(tmp_path):
    path = write(tmp_path, '{versions: "3-11", feature: {transaction.version: ">=2"}, target: kafka}')
    (suite,), errors = load_suites([path], components=bundled())
    assert errors == []
    when = suite.cases[0].steps[0]["when"]
    assert isinstance(when, When) and dict(when) == {"versions": "3-11", "feature": {"transaction.version": ">=2"},
                                                     "target": "kafka"}
    assert when.holds(4, {"transaction.version": 2}, "kafka:4.4.0")
    assert not when.holds(12, {"transaction.version": 2}, "kafka")  # the version under test is out of range
    assert not when.holds(4, {}, "kafka")  # a feature the target does not finalize is at level 0
    assert not when.holds(4, {"transaction.version": 2}, "tansu")
    assert copy.deepcopy(when).holds(4, {"transaction.version": 2}, "kafka")  # copies keep what was parsed


@pytest.mark.parametrize("condition, level, holds", [
    ("2", 2, True), ("2", 1, False), (">=2", 2, True), ("<2", 2, False), ("<2", 1, True), ("> 1", 2, True),
    ("==0", 0, True), ("<=1", 2, False)])
def test_a_feature_condition_compares_as_written(condition, level, holds):
    assert parse({"feature": {"f": condition}}).holds(None, {"f": level}, "kafka") is holds


def test_the_field_at_fault_is_named():
    with pytest.raises(WhenError) as raised:
        parse({"feature": {"f": ">=x"}})
    assert raised.value.field == ["feature", "f"]
    with pytest.raises(WhenError) as raised:
        parse({"feature": ["f"]})
    assert raised.value.field == ["feature"]


def test_a_saved_condition_holds_on_the_value_an_earlier_step_saved_an_error_name_as_its_code():
    when = parse({"saved": {"join_error": "MEMBER_ID_REQUIRED", "member": "m-1"}})
    assert when.holds(5, {}, "kafka", {"join_error": 79, "member": "m-1"})
    assert not when.holds(5, {}, "kafka", {"join_error": 0, "member": "m-1"})  # joined at once: no second join
    assert not when.holds(5, {}, "kafka", {"member": "m-1"})  # never saved
    assert when.holds(5, {}, "kafka")  # before the item runs (scheduling, planning): it may run
    with pytest.raises(WhenError, match="saved maps"):
        parse({"saved": ["join_error"]})


def test_a_step_whose_saved_condition_does_not_hold_is_left_out(tmp_path):
    from fake_kafka import FakeKafka
    from conformance.results.record import Outcome
    from conformance.runner.runner import Runner
    from conformance.targets.hostport import HostPortTarget

    path = tmp_path / "s.yaml"
    path.write_text(SUITE.format(when="{}").replace("""      - send: ApiVersions
        when: {}
        expect: {error_code: NONE}""", """      - send: ApiVersions
        expect: {error_code: NONE}
        save: {answered: error_code}
      - send: ApiVersions
        when: {saved: {answered: UNSUPPORTED_VERSION}}
        expect: {error_code: UNSUPPORTED_VERSION}"""))
    [suite], errors = load_suites([str(path)], components=bundled())
    assert not errors, errors
    broker = FakeKafka()
    target = HostPortTarget(broker.address)
    target.start()
    runner = Runner(target, run_id="when-saved", timeout=2.0)
    try:
        result = runner.run(suite.cases[0], 3)
    finally:
        runner.close()
        broker.stop()
    assert result.outcome is Outcome.PASSED, result.message  # the second step, left out, expected no error
    assert sum(exchange["api"] == "ApiVersions" and exchange["step"] not in (None, "negotiate")
               for exchange in result.transcript) == 1
