"""A broker the harness attaches to, named by the user (``PRODUCT[:VERSION]@HOST:PORT``): the name reaches the
target, its results line and the reports; the address stays the evidence and what the harness connects to."""

from __future__ import annotations

import pytest

from conformance.extension import Extensions
from conformance.report.console import text
from conformance.results.ids import named_target
from conformance.results.record import Outcome, Requirement, ResultRecord
from conformance.suite.model import CaseResult
from conformance.targets.hostport import HostPortTarget, parse, product_of
from conformance.targets.registry import resolve


@pytest.mark.parametrize("spec, address, product", [
    ("127.0.0.1:9092", ("127.0.0.1", 9092), (None, None)),
    ("acme-streams@127.0.0.1:19092", ("127.0.0.1", 19092), ("acme-streams", None)),
    ("acme-streams:2.1@127.0.0.1:19092", ("127.0.0.1", 19092), ("acme-streams", "2.1")),
    ("acme:2.1.0+rc1@[::1]:9092", ("::1", 9092), ("acme", "2.1.0+rc1")),
])
def test_a_spec_names_the_product_before_the_address(spec, address, product):
    assert parse(spec) == address and product_of(spec) == product


@pytest.mark.parametrize("spec", ["@127.0.0.1:9092", "acme:@127.0.0.1:9092", "a b@127.0.0.1:9092",
                                  "acme@127.0.0.1:99999"])
def test_a_malformed_name_is_no_host_port_spec(spec):
    assert parse(spec) is None


def test_the_named_target_connects_to_the_address_and_reports_the_name():
    target = resolve("acme-streams:2.1@127.0.0.1:19092", Extensions.for_run().target_kinds())
    assert isinstance(target, HostPortTarget)
    assert (target.bootstrap, target.name, target.version) == ("127.0.0.1:19092", "acme-streams", "2.1")
    info = target.info()
    assert (info.name, info.version, info.bootstrap) == ("acme-streams", "2.1", "127.0.0.1:19092")
    proxied = resolve("proxy+acme-streams:2.1@127.0.0.1:19092", Extensions.for_run().target_kinds())
    assert (proxied.name, proxied.version, proxied.inner.bootstrap) == ("acme-streams", "2.1", "127.0.0.1:19092")
    unnamed = resolve("127.0.0.1:19092", Extensions.for_run().target_kinds())
    assert (unnamed.name, unnamed.version, unnamed.bootstrap) == (None, None, "127.0.0.1:19092")


def test_the_results_line_and_the_reports_carry_the_name_beside_the_address():
    result = CaseResult(case_id="c", suite_id="s", title="t", kip="KIP-98", api="EndTxn", version=3,
                        target="acme-streams:2.1@127.0.0.1:19092", target_version="2.1", target_name="acme-streams",
                        outcome=Outcome.FAILED, requirement=Requirement.MUST, cites="...", duration_s=0.1)
    line = result.record().to_line()
    assert (line["target"], line["target_version"], line["target_name"]) == (
        "acme-streams:2.1@127.0.0.1:19092", "2.1", "acme-streams")
    assert ResultRecord.from_line(dict(line)).target_name == "acme-streams"
    assert ResultRecord.from_line({"schema_version": 3, "target": "127.0.0.1:9092"}).target_name is None
    assert "acme-streams 2.1 (127.0.0.1:19092)" in text.render(result)
    assert named_target("proxy+acme:1@h:1", "1", "acme") == "acme 1 (proxy+h:1)"
    assert named_target("kafka", "4.4.0", None) is None
