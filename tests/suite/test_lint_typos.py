"""Suites cannot lie by typo: a misspelt field, matcher or key is an error, never silently ignored."""

from pathlib import Path

import pytest

from conformance.suite.loader import lint
from conformance.runner.steps import bundled

ROOT = Path(__file__).resolve().parents[2]
BROKEN = ROOT / "fixtures" / "broken-suites"

HEAD = """\
suite: t.typos
title: t
spec: KIP-98
transactional_ids: [main]
topics: {out: {partitions: 1}}
cases:
  - id: c
    title: c
    cites: c
"""


def problems(tmp_path, text: str, plugins: tuple = ()) -> list[str]:
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + text)
    from conformance.extension import Extensions

    return [str(error).replace(f"{path}:", "") for error in lint([path], Extensions.for_run(plugins=plugins).components())]


# ------------------------------------------------------------------------------ the fixture
def test_fixture_reports_each_typo_at_its_line():
    found = [str(error).split("typos.yaml:", 1)[1] for error in lint([BROKEN / "typos.yaml"], bundled())]
    assert len(found) == 3, found
    assert found[0].startswith("15: cases[0].steps[1].fields.transactonal_id: ") and \
        "did you mean transactional_id" in found[0]
    assert found[1].startswith("18: cases[0].steps[1].expect.fields.throttle_time_ms.greater: unknown matcher")
    assert found[2].startswith("21: cases[0].steps[2].expect.records: unknown key")
    assert not any("in template" in text for text in found)  # the suite wrote these steps, not a template


# ------------------------------------------------------------------------------ request fields
def test_misspelt_nested_field_in_an_array_of_structs(tmp_path):
    found = problems(tmp_path, """\
    under_test: {api: AddPartitionsToTxn, versions: "4+"}
    steps:
      - send: AddPartitionsToTxn
        fields:
          transactions:
            - transactional_id: x
              producer_id: 1
              producer_epoch: 0
              verify_only: false
              topics: [{name: "${topics.out}", partitons: [0]}]
""")
    assert len(found) == 1, found
    assert found[0].startswith("19: cases[0].steps[0].fields.transactions[0].topics[0].partitons: ")
    assert "did you mean partitions" in found[0]


def test_a_field_of_other_versions_than_those_under_test_is_refused(tmp_path):
    steps = """\
    steps:
      - send: AddPartitionsToTxn
        fields: {v3_and_below_transactional_id: x, v3_and_below_producer_id: 1, v3_and_below_producer_epoch: 0,
                 v3_and_below_topics: [{name: "${topics.out}", partitions: [0]}]}
"""
    assert problems(tmp_path, '    under_test: {api: AddPartitionsToTxn, versions: "0-3"}\n' + steps) == []
    found = problems(tmp_path, '    under_test: {api: AddPartitionsToTxn, versions: "4+"}\n' + steps)
    assert len(found) == 4 and all("only in versions 0-3" in text for text in found), found
    assert found[0].startswith("13: cases[0].steps[0].fields.v3_and_below_transactional_id: ")


def test_a_setup_step_may_use_any_version_unless_it_names_one(tmp_path):
    setup = """\
    under_test: {api: EndTxn}
    steps:
      - send: AddPartitionsToTxn
        %s
        fields: {v3_and_below_transactional_id: x, v3_and_below_producer_id: 1, v3_and_below_producer_epoch: 0,
                 v3_and_below_topics: [{name: "${topics.out}", partitions: [0]}]}
"""
    assert problems(tmp_path, setup % "label: any version") == []
    assert problems(tmp_path, setup % "version: 3") == []
    found = problems(tmp_path, setup % "version: 4")
    assert len(found) == 4 and found[0].startswith("14: cases[0].steps[0].fields.v3_and_below_transactional_id")


def test_leaf_values_and_expressions_are_not_structs(tmp_path):
    assert problems(tmp_path, """\
    under_test: {api: AddPartitionsToTxn, versions: "0-3"}
    steps:
      - send: AddPartitionsToTxn
        fields:
          v3_and_below_transactional_id: {raw_hex: "ffff"}
          v3_and_below_producer_id: "${1 + 1}"
          v3_and_below_producer_epoch: 0
          v3_and_below_topics: "${saved_topics}"
      - send: Produce
        version: 3
        fields: {transactional_id: null, acks: -1, timeout_ms: 1000,
                 topic_data: [{name: x, partition_data: [{index: 0, records: {hex: "00"}}]}]}
""") == []


def test_a_typo_in_a_template_body_points_at_the_using_step(tmp_path):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "mine.yaml").write_text("""\
templates:
  my.init:
    params: [txn]
    steps:
      - send: InitProducerId
        fields: {transactional_id: "${with.txn}", transaction_timeout: 60000, producer_id: -1, producer_epoch: -1}
        expect: {error_code: NONE, recrods: 1}
""")
    found = problems(tmp_path, """\
    under_test: {api: EndTxn}
    steps:
      - send: EndTxn
        fields: {transactional_id: x, producer_id: 1, producer_epoch: 0, committed: true}
      - use: my.init
        with: {txn: "${txn_ids.main}"}
""")
    assert len(found) == 2, found
    fields, expect = sorted(found, reverse=True)
    assert fields.startswith("14: cases[0].steps[1].fields.transaction_timeout: ") and "my.init" in fields
    assert expect.startswith("14: cases[0].steps[1].expect.recrods: unknown key") and "my.init" in expect


def test_a_typo_the_use_step_itself_makes_is_the_suites_own(tmp_path):
    found = problems(tmp_path, """\
    under_test: {api: InitProducerId}
    steps:
      - use: txn.init
        with: {txn: "${txn_ids.main}"}
        expect: {error_code: NONE, fields: {producer_id: {greater: 0}}, values: [a]}
""")
    assert sorted(found) == [
        "14: cases[0].steps[0].expect.fields.producer_id.greater: unknown matcher 'greater' "
        "(known: any_of, contains, eq, ge, gt, le, len, lt, matches, ne, not_null, present)",
        "14: cases[0].steps[0].expect.values: unknown key for a send or produce step (its expect takes: "
        "error_code, fields, disconnect, no_response, refused, kafka_code, kafka_fields; values is for fetch steps)"], found


def test_a_step_after_a_template_of_several_steps_keeps_its_own_line(tmp_path):
    found = problems(tmp_path, """\
    under_test: {api: EndTxn}
    steps:
      - use: txn.begin
        with: {txn: "${txn_ids.main}", topic: "${topics.out}", partition: 0}
      - send: EndTxn
        fields: {transactional_id: x, producer_id: 1, producer_epoch: 0, commited: true}
""")
    assert len(found) == 1 and found[0].startswith("15: cases[0].steps[1].fields.commited: "), found


# ------------------------------------------------------------------------------ matchers
def test_matchers_built_in_per_version_and_from_plugins(tmp_path):
    from conformance.extension import hookimpl

    text = """\
    under_test: {api: EndTxn}
    steps:
      - send: EndTxn
        fields: {transactional_id: x, producer_id: 1, producer_epoch: 0, committed: true}
        expect:
          fields:
            throttle_time_ms: {"0-2": {ge: 0}, "3+": {close_to: 0}}
            error_code: {ne: NONE, present: true}
"""
    found = problems(tmp_path, text)
    assert len(found) == 1 and found[0].startswith("16: cases[0].steps[0].expect.fields.throttle_time_ms.3+.close_to: "
                                                   "unknown matcher"), found

    class CloseTo:
        @hookimpl
        def conformance_register_matchers(self, registry):
            registry.add("close_to", lambda actual, argument: None)

    assert problems(tmp_path, text, plugins=(CloseTo(),)) == []


def test_every_built_in_matcher_name_is_one_the_matchers_know():
    from conformance.suite import matchers

    for name in matchers.BUILTIN_MATCHERS:
        if name != "present":
            matchers._compare(name, [1], [1])  # raises PathError for a name it does not know
    with pytest.raises(matchers.PathError):
        matchers._compare("greater", 1, 0)


# ------------------------------------------------------------------------------ keys everywhere
@pytest.mark.parametrize("step, key", [
    ("- produce: {topic: x, partiton: 0}", "cases[0].steps[0].produce.partiton"),
    ("- fetch: {topic: x, isolation_level: read_committed}", "cases[0].steps[0].fetch.isolation_level"),
    ("- until: {step: {wait: 1}, for_sec: 5}", "cases[0].steps[0].until.for_sec"),
    ("- fault: {name: restart, arguments: {}}", "cases[0].steps[0].fault.arguments"),
    ("- wait: {msec: 5}", "cases[0].steps[0].wait.msec"),
    ("- send: ApiVersions\n        to: {leeder: {topic: x}}", "cases[0].steps[0].to.leeder"),
    ("- send: ApiVersions\n        malform: {header: {api_verison: 99}}", "cases[0].steps[0].malform.header.api_verison"),
    ("- send: ApiVersions\n        expect: {error_code: NONE, values: [a]}", "cases[0].steps[0].expect.values"),
    ("- produce: {topic: x}\n        expect: {error_code: NONE, control: [COMMIT]}", "cases[0].steps[0].expect.control"),
    ("- send: ApiVersions\n        when: {version: 3}", "cases[0].steps[0].when.version"),
    ("- send: ApiVersions\n        retry: {on: [NONE], for: 3}", "cases[0].steps[0].retry.for"),
])
def test_unknown_keys_are_refused(tmp_path, step, key):
    found = problems(tmp_path, "    steps:\n      " + step + "\n")
    assert [text.split(" ", 1)[1].split(":")[0] for text in found] == [key], found
    assert all("unknown key" in text for text in found)


def test_fetch_expectations_are_allowed_on_fetch_steps(tmp_path):
    assert problems(tmp_path, """\
    steps:
      - fetch: {topic: x, partition: 0, isolation: read_committed, offset: 0, max_wait_ms: 10, max_bytes: 100}
        expect: {error_code: NONE, records: 1, values: [a], control: [COMMIT], aborted_transactions: 0, crc_valid: true}
""") == []


def test_unknown_key_in_a_template_definition(tmp_path):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "mine.yaml").write_text("""\
templates:
  my.wait:
    parms: [ms]
    steps:
      - wait: 1
""")
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + "    steps:\n      - use: my.wait\n")
    found = [str(error) for error in lint([path], bundled())]
    assert any("mine.yaml:3: templates.my.wait.parms: unknown key" in text for text in found), found


def test_keys_a_use_step_would_drop_are_refused(tmp_path):
    found = problems(tmp_path, """\
    under_test: {api: InitProducerId}
    steps:
      - use: txn.init
        label: documentation only
        with: {txn: "${txn_ids.main}"}
        as: guest
        verifies: true
""")
    assert [text.split(": ", 2)[:2] for text in found] == [["15", "cases[0].steps[0].as"],
                                                          ["16", "cases[0].steps[0].verifies"]], found
    assert "the template's steps never see it" in found[0]


def test_unknown_top_level_key_in_a_template_file(tmp_path):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "mine.yaml").write_text("""\
template:
  my.wait: {steps: [{wait: 1}]}
templates:
  my.wait: {steps: [{wait: 1}]}
""")
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + "    steps:\n      - use: my.wait\n")
    found = [str(error) for error in lint([path], bundled())]
    assert len(found) == 1 and "mine.yaml:1: template: unknown key" in found[0], found


def test_a_typo_in_a_step_nested_in_a_template_is_reported_once(tmp_path):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "mine.yaml").write_text("""\
templates:
  my.poll:
    steps:
      - until:
          step: {send: ApiVersions, expect: {error_code: NONE, recrods: 1}}
          for_ms: 1000
      - parallel:
          - [{wait: {msec: 1}}]
""")
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + "    steps:\n      - use: my.poll\n")
    found = [str(error).replace(f"{path}:", "") for error in lint([path], bundled())]
    assert sorted(found) == [
        "11: cases[0].steps[0].parallel[0][0].wait.msec: unknown key (allowed: ms) (in template 'my.poll')",
        "11: cases[0].steps[0].until.step.expect.recrods: unknown key (allowed: aborted_transactions, control, "
        "crc_valid, disconnect, error_code, fields, kafka_code, kafka_fields, no_response, records, refused, values) (in template 'my.poll')"], found
