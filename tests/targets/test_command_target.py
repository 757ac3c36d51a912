"""``command:FILE``: a broker of the user's own, started from a command line in a YAML file, run like a provisioned
one and brought back after a crash. The broker here is the Tansu binary, started through such a file as any vendor's
binary would be."""

from __future__ import annotations

import os
import signal

import pytest

from conformance.checked_yaml import CheckedYamlError
from conformance.extension import Extensions
from conformance.results.record import Outcome
from conformance.runner.runner import Runner
from conformance.runner.steps import bundled
from conformance.suite.loader import load_suite_file
from conformance.targets.command import CommandTarget
from conformance.targets.registry import resolve
from conformance.targets.tansu import TansuTarget, find_binary

SUITE = """\
suite: command.probe
title: a probe
spec: KIP-511
cases:
  - id: api-versions
    title: ApiVersions is answered
    cites: "KIP-511: the broker answers ApiVersions"
    steps:
      - send: ApiVersions
        fields: {client_software_name: conformance, client_software_version: "1.0"}
        expect: {error_code: NONE}
"""


def test_a_file_without_the_port_is_refused_naming_its_line_and_field(tmp_path):
    broker = tmp_path / "broker.yaml"
    broker.write_text("product: Mine\ncommand: [./mybroker, --listen, '127.0.0.1:9092']\n")
    with pytest.raises(CheckedYamlError) as refused:
        resolve(f"command:{broker}", Extensions.for_run().target_kinds())
    assert str(refused.value).startswith(f"{broker}:2: command: ")
    assert not CommandTarget.matches("command:") and CommandTarget.matches(f"command:{broker}")


@pytest.mark.broker
def test_a_broker_started_from_its_command_line_runs_cases_and_is_brought_back_after_a_crash(tmp_path):
    if TansuTarget.availability():
        pytest.skip(TansuTarget.availability())
    broker = tmp_path / "broker.yaml"
    broker.write_text(
        "product: Tansu\nversion: '0.6.0'\nstop_signal: SIGINT\n"
        f"command: [{find_binary()}, broker, --listener-url, 'tcp://127.0.0.1:{{port}}', --advertised-listener-url,\n"
        "          'tcp://127.0.0.1:{port}', --storage-engine, 'memory://tansu/', --cluster-id, conformance]\n")
    (tmp_path / "suite.yaml").write_text(SUITE)
    suite, errors = load_suite_file(tmp_path / "suite.yaml", components=bundled())
    assert errors == []
    target = resolve(f"command:{broker}", Extensions.for_run().target_kinds())
    assert isinstance(target, CommandTarget)
    target.start()
    runner = Runner(target, run_id="command-target")
    try:
        assert (target.name, target.version) == ("Tansu", "0.6.0")
        assert runner.run(suite.cases[0], None).outcome is Outcome.PASSED
        first = target.pid
        os.kill(first, signal.SIGKILL)
        assert target.ended(wait=10) == "Tansu's process ended on SIGKILL"
        failed = runner.run(suite.cases[0], None)  # the item that finds it down says how it ended
        assert failed.outcome is Outcome.FAILED and "SIGKILL" in failed.message
        assert target.ended() is None and target.pid != first  # started afresh
        assert runner.run(suite.cases[0], None).outcome is Outcome.PASSED
        assert target.logs().count("listening on") == 2  # the crashed process's output is kept, the evidence
    finally:
        runner.close()
        target.stop()
