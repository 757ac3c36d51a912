"""The mock cluster runs in a process of its own: when librdkafka's C code aborts, the target ends and says
how, the harness's process goes on, the runner blames the item after which it happened (none, in a parallel
run) and starts a new cluster for the items after it."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conformance.runner.runner import Runner
from conformance.runner.steps import bundled
from conformance.suite.loader import load_suite_file
from conformance.results.record import Outcome
from conformance.targets import TargetUnavailable
from conformance.targets.rdkafka_mock import RdkafkaMockTarget

pytestmark = pytest.mark.broker

SUITE = """
suite: mock.process
title: one request
spec: KIP-98
cases:
  - id: init
    title: a producer id
    cites: "KIP-98: Every new producer will be assigned a unique PID during initialization."
    under_test: {api: InitProducerId}
    steps:
      - send: InitProducerId
        fields: {transactional_id: null, transaction_timeout_ms: 60000}
        expect: {error_code: NONE}
  - id: init-later
    title: a producer id after a pause
    cites: "KIP-98: Every new producer will be assigned a unique PID during initialization."
    under_test: {api: InitProducerId}
    steps:
      - wait: 1000
      - send: InitProducerId
        fields: {transactional_id: null, transaction_timeout_ms: 60000}
        expect: {error_code: NONE}
"""


def cluster_process() -> multiprocessing.Process:
    [child] = [child for child in multiprocessing.active_children() if child.name.startswith("rdkafka-mock")]
    return child


def test_an_abort_in_the_mock_ends_the_target_and_says_so_not_the_run(tmp_path):
    case = load(tmp_path)["init"]
    target = RdkafkaMockTarget("rdkafka-mock")
    target.start()
    runner = Runner(target, run_id="mock-process")
    try:
        assert runner.run(case, 0).outcome is Outcome.PASSED
        assert target.ended() is None  # still running
        child = cluster_process()
        os.kill(child.pid, signal.SIGABRT)  # what librdkafka's assertions do
        child.join(10)

        assert "SIGABRT" in target.ended()
        with pytest.raises(TargetUnavailable, match="is gone: its cluster's process ended on SIGABRT"):
            target.fault("request_errors", api="Produce", errors=["NOT_LEADER_OR_FOLLOWER"])
        assert runner.alive() is not None  # the ports closed with the process
        # the next item: the runner finds the target down, blames the item it ran after, and starts a new
        # cluster (revive: the mock's data cannot survive, so this is never offered to a restart case)
        failed = runner.run(case, 0)
        assert failed.outcome is Outcome.FAILED
        assert "stopped answering" in failed.message and "SIGABRT" in failed.message
        assert "the harness restarted it" in failed.message
        assert target.ended() is None and runner.run(case, 0).outcome is Outcome.PASSED
    finally:
        runner.close()
        target.stop()
    assert not any(child.name.startswith("rdkafka-mock") for child in multiprocessing.active_children())


def load(tmp_path):
    (tmp_path / "suite.yaml").write_text(SUITE)
    suite, errors = load_suite_file(tmp_path / "suite.yaml", components=bundled())
    assert errors == []
    return {case.id: case for case in suite.cases}


def test_in_a_parallel_run_no_item_under_way_is_blamed_for_the_crash(tmp_path):
    """Two items under way when the mock aborts: either may have done it, so neither fails for it; the one
    that noticed says how to find which did it, and the harness starts a new cluster for the items after."""
    cases = load(tmp_path)
    target = RdkafkaMockTarget("rdkafka-mock")
    target.start()
    runner = Runner(target, run_id="mock-process")
    try:
        assert runner.run(cases["init"], 0).outcome is Outcome.PASSED  # it answered: a later silence is a crash
        later = cases["init-later"]
        with ThreadPoolExecutor(2) as pool:
            futures = [pool.submit(runner.run, later, 0) for _ in range(2)]
            time.sleep(0.3)  # both are in their wait step
            os.kill(cluster_process().pid, signal.SIGABRT)
            results = [future.result(timeout=60) for future in futures]
        assert [result.outcome for result in results] == [Outcome.ERROR, Outcome.ERROR]
        noticed, other = sorted(results, key=lambda result: "rerun them with --jobs 1" not in result.message)
        assert noticed.message.startswith("no verdict: the target stopped answering while this item and 1 others "
                                          "ran at once (mock.process::init-later v0)")
        assert "SIGABRT" in noticed.message and "the harness restarted it" in noticed.message
        assert other.message.startswith("no verdict: the target stopped answering")  # it noticed too, or ran on
        assert runner.down is None and runner.run(cases["init"], 0).outcome is Outcome.PASSED
    finally:
        runner.close()
        target.stop()


def test_stop_ends_the_cluster_process():
    target = RdkafkaMockTarget("rdkafka-mock:2")
    target.start()
    child = cluster_process()
    assert len(target.bootstrap.split(",")) == 2
    target.stop()
    assert not child.is_alive() and child.exitcode == 0
