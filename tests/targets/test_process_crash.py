"""A broker the harness runs as a process, killed from outside in the middle of a run, is brought back
(:class:`conformance.targets.process.ProcessTarget`): Tansu started afresh (revive), as the mock is after its aborts,
Kafka restarted with its data. The run loses at most the items under way, which say how the process ended, and
every other item gets its verdict on the broker that came back."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from conformance.results.record import Outcome
from conformance.runner.parallel import UNDER_WAY_PER_WORKER
from conformance.runner.runner import Runner
from conformance.runner.steps import bundled
from conformance.suite.loader import load_suite_file
from conformance.targets.kafka.broker import KafkaTarget
from conformance.targets.tansu import TansuTarget

from plugin_runs import plugin_arguments

pytestmark = pytest.mark.broker
pytest_plugins = ["pytester"]

CASES = 40
JOBS = 2
# The most items under way at once (those asleep lend their place), and those being judged.
UNDER_WAY = JOBS * UNDER_WAY_PER_WORKER + JOBS
CASE = """\
  - id: probe-{number}
    title: ApiVersions after a pause
    cites: "KIP-511: the broker answers ApiVersions"
    steps:
      - wait: 300
      - send: ApiVersions
        fields: {{client_software_name: conformance, client_software_version: "1.0"}}
        expect: {{error_code: NONE}}
"""
SUITE = "suite: revive.tansu\ntitle: probes\nspec: KIP-511\ncases:\n" + "".join(
    CASE.format(number=number) for number in range(CASES))


def available(target_class):
    reason = target_class.availability()
    if reason:
        pytest.skip(reason)


def tansu_children() -> list[int]:
    """The Tansu processes this process started."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            name, fields = stat.read_text().rsplit(")", 1)
        except OSError:
            continue
        if name.endswith("(tansu") and int(fields.split()[1]) == os.getpid():
            found.append(int(stat.parent.name))
    return found


def test_a_tansu_killed_mid_run_is_brought_back_and_the_run_loses_at_most_the_items_under_way(pytester):
    available(TansuTarget)
    (pytester.path / "revive.yaml").write_text(SUITE)
    results = pytester.path / "results.jsonl"
    killed: list[int] = []
    revived: list[int] = []

    def kill_when_a_quarter_is_done() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            done = len(results.read_text().splitlines()) if results.exists() else 0
            children = tansu_children()
            if done >= CASES // 4 and children:
                os.kill(children[0], signal.SIGKILL)
                killed.append(children[0])
                break
            time.sleep(0.05)
        while time.monotonic() < deadline and killed and not revived:
            revived.extend(pid for pid in tansu_children() if pid not in killed)
            time.sleep(0.05)

    killer = threading.Thread(target=kill_when_a_quarter_is_done, daemon=True)
    killer.start()
    pytester.runpytest(*plugin_arguments(), "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                       "--target", "tansu", "--suite", "revive.yaml", "--results", str(results),
                       "--conformance-jobs", str(JOBS))
    killer.join(5)
    assert killed, "Tansu was never killed: the run ended first"
    assert revived, "no new Tansu was started"

    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(lines) == CASES
    lost = [line["message"] for line in lines if line["outcome"] != Outcome.PASSED.value]
    # Before, Tansu stayed down: every item after those under way ended "not run" (24 of 40 lost). Now those under
    # way run again alone on the new Tansu (most pass), and the others run there.
    assert len(lost) <= UNDER_WAY, lost
    for message in lost:
        assert "stopped answering" in message and "SIGKILL" in message, message


@pytest.mark.parametrize("target_class, name, started", [
    (TansuTarget, "Tansu", "listening on"),
    pytest.param(KafkaTarget, "Kafka", "Kafka Server started", marks=pytest.mark.kafka),
], ids=["tansu", "kafka"])
def test_ended_says_how_the_process_ended_and_the_harness_brings_it_back_keeping_the_old_log(
        tmp_path, target_class, name, started):
    available(target_class)
    (tmp_path / "suite.yaml").write_text(SUITE)
    suite, errors = load_suite_file(tmp_path / "suite.yaml", components=bundled())
    assert errors == []
    case = suite.cases[0]
    target = target_class()
    target.start()
    runner = Runner(target, run_id="process-crash")
    try:
        assert runner.run(case, None).outcome is Outcome.PASSED
        assert target.ended() is None  # still running
        first = target.pid
        os.kill(first, signal.SIGKILL)
        assert target.ended(wait=10) == f"{name}'s process ended on SIGKILL"
        # the next item finds it down, says how it ended, and the harness brings it back for the ones after
        failed = runner.run(case, None)
        assert failed.outcome is Outcome.FAILED
        assert "SIGKILL" in failed.message and "the harness restarted it" in failed.message
        assert target.ended() is None and target.pid != first
        assert runner.run(case, None).outcome is Outcome.PASSED
        assert target.logs().count(started) == 2  # the crashed one's output stays, the evidence
    finally:
        runner.close()
        target.stop()
    assert tansu_children() == []


def test_every_process_kind_is_brought_back_after_a_crash_restarted_or_revived():
    from conformance.targets.base import Capability
    from conformance.targets.process import ProcessTarget

    class Logged(ProcessTarget):
        capabilities = frozenset({Capability.LOGS})

    class Restartable(ProcessTarget):
        capabilities = frozenset({Capability.RESTART})

    assert Logged.capabilities == {Capability.LOGS, Capability.REVIVE}  # not listed, given all the same
    assert Restartable.capabilities == {Capability.RESTART}  # a restart keeps the data: no revive needed
