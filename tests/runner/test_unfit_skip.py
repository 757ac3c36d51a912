"""A case the target cannot run at all is skipped before its set-up, for the reason its steps would give.

A fault the target does not offer, a restart it cannot do, or more replicas than the brokers it was
provisioned with: these skip the case whatever the broker answers, so the runner says so before creating
topics or sending anything (on Kafka about 300 such items used to set up and tear down for nothing, one at
a time, as serial cases). A fault under a ``when``, or one whose name is computed, may never be asked for:
those cases still run, and a target that offers the fault runs the case as before.
"""

from __future__ import annotations

import pytest

from conformance.runner.runner import Runner
from conformance.runner.steps import bundled
from conformance.suite.loader import load_suite_file
from conformance.results.record import Outcome
from conformance.targets.hostport import HostPortTarget

from fake_kafka import FakeKafka

SUITE = """\
suite: local.unfit
title: cases some targets cannot run
spec: KIP-98
topics:
  plain: {{partitions: 1}}
  replicated: {{partitions: 1, replication: 3}}
cases:
  - id: {case_id}
    title: a case
    cites: "a test of the harness"
    under_test: {{api: ApiVersions, versions: "0"}}
    steps:
{steps}
"""

CHECK = """\
      - send: ApiVersions
        fields: {}
        expect: {error_code: NONE}
"""


class Offering(HostPortTarget):
    """A broker at host:port that says it offers some faults (and carries them out by doing nothing)."""

    def __init__(self, address: str, faults=(), brokers=None, restart=False):
        super().__init__(address)
        self.offered, self.brokers, self.asked = set(faults), brokers, []
        if restart:
            self.capabilities = frozenset(self.capabilities | {"restart"})

    def offers_fault(self, name):
        return name in self.offered

    def provisioned_brokers(self):
        return self.brokers

    def fault(self, name, **arguments):
        self.asked.append(name)

    def restart(self):
        self.asked.append("restart")


def run(tmp_path, steps: str, **offering):
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE.format(case_id="the-case", steps=steps))
    suite, errors = load_suite_file(path, components=bundled())
    assert not errors, errors
    broker = FakeKafka()
    target = Offering(broker.address, **offering)
    target.start()
    runner = Runner(target, run_id="unfit", timeout=5.0)
    try:
        return runner.run(suite.cases[0], 0), broker, target
    finally:
        runner.close()
        broker.stop()


def sent(result) -> list[str]:
    return [exchange.api for exchange in result.transcript_source.exchanges]


@pytest.mark.parametrize(("fault", "why"), [
    ("{name: proxy.drop_response, args: {client: '${client_id}', api: Produce}}", "has no fault 'proxy.drop_response'"),
    ("restart", "cannot restart its broker"),
])
def test_a_fault_the_target_lacks_skips_before_any_set_up(tmp_path, fault, why):
    result, _, target = run(tmp_path, f"      - fault: {fault}\n" + CHECK)
    assert result.outcome is Outcome.SKIPPED and why in result.message
    assert sent(result) == [] and not target.asked


@pytest.mark.parametrize("offering", [{"faults": ["proxy.drop_response"]}, {"restart": True}])
def test_a_target_offering_the_fault_runs_the_case(tmp_path, offering):
    fault = "restart" if offering.get("restart") else "{name: proxy.drop_response, args: {client: '${client_id}', api: Produce}}"
    result, _, target = run(tmp_path, f"      - fault: {fault}\n" + CHECK, **offering)
    assert result.outcome is Outcome.PASSED, result.message
    assert target.asked == ["restart" if offering.get("restart") else "proxy.drop_response"]


def test_a_fault_a_when_may_leave_out_does_not_skip_the_case(tmp_path):
    steps = "      - fault: {name: proxy.drop_response, args: {client: '${client_id}', api: Produce}}\n        when: {versions: \"5+\"}\n" + CHECK
    result, _, target = run(tmp_path, steps)
    assert result.outcome is Outcome.PASSED, result.message
    assert target.asked == []


def test_more_replicas_than_provisioned_brokers_skips_before_any_set_up(tmp_path):
    steps = "      - send: Metadata\n        fields: {topics: [{name: \"${topics.replicated}\"}]}\n" + CHECK
    result, _, _ = run(tmp_path, steps, brokers=1)
    assert result.outcome is Outcome.SKIPPED
    assert result.message == "the case's topics need 3 replicas; the target has 1 broker(s)"
    assert sent(result) == []


def test_an_unknown_broker_count_is_asked_of_the_broker(tmp_path):
    """A broker the harness only attaches to: the count comes from Metadata, as before (one broker here)."""
    steps = "      - send: Metadata\n        fields: {topics: [{name: \"${topics.replicated}\"}]}\n" + CHECK
    result, _, _ = run(tmp_path, steps, brokers=None)
    assert result.outcome is Outcome.SKIPPED and "need 3 replicas" in result.message
    assert sent(result) == ["ApiVersions", "Metadata"]
