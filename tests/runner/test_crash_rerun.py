"""A target that crashes while items run beside each other (RunAhead): the harness brings it back and runs the
items under way again one at a time, so the one that takes it down fails and the others keep their verdicts,
as in a serial run. Against a scripted broker (tests/support/fake_kafka.py) that dies on one request."""

from __future__ import annotations

import textwrap
import threading

import pytest

from conformance.runner.parallel import HELD_S, RunAhead, Suspect
from conformance.runner.runner import Runner
from conformance.runner.steps import bundled
from conformance.suite.loader import load_suite_file
from conformance.results import STOPPED_ANSWERING, Outcome
from conformance.targets.hostport import HostPortTarget

from fake_kafka import CLOSE, DIE, FakeKafka

SUITE = """\
suite: crash
title: A request that takes the broker down, among others
spec: KIP-98
transactional_ids: [main]
cases:
  - id: crasher
    title: InitProducerId with the timeout this broker dies on
    cites: KIP-98
    under_test: {api: InitProducerId, versions: "4"}
    steps:
      - send: InitProducerId
        fields: {transactional_id: "${txn_ids.main}", transaction_timeout_ms: 12345, producer_id: -1, producer_epoch: -1}
        expect: {error_code: NONE}
  - id: plain
    title: EndTxn after InitProducerId
    cites: KIP-98
    under_test: {api: EndTxn, versions: "0-5"}
    steps:
      - send: InitProducerId
        fields: {transactional_id: "${txn_ids.main}", transaction_timeout_ms: 60000, producer_id: -1, producer_epoch: -1}
        expect: {error_code: NONE}
        save: {pid: producer_id, epoch: producer_epoch}
      - send: EndTxn
        fields: {transactional_id: "${txn_ids.main}", producer_id: "${pid}", producer_epoch: "${epoch}", committed: true}
        expect: {error_code: NONE}
"""
DIES_ON_TIMEOUT_MS = 12345
WAIT_S = 10.0  # an upper bound only: every wait below ends on an event long before


class CrashingBroker:
    """A scripted broker that dies on the crasher's InitProducerId, and a supervisor that brings it back.

    With ``overlap``, the first crash is staged so that it happens while three other items are under way:
    the crasher's request waits until three InitProducerIds of other items have come in, and their EndTxns
    wait for the crash (then find the broker gone). Every later life of the broker answers at once."""

    def __init__(self, overlap: bool):
        self.overlap = overlap
        self.lives = 0  # how often it was brought back
        self.deaths = 0
        self._lock = threading.Lock()
        self._others = 0
        self._three_under_way = threading.Event()
        self._crashed = threading.Event()
        self.fake = FakeKafka(self.handler, revivable=True)

    def handler(self, api, version, body):
        life = self.lives
        if api == "InitProducerId" and body["transaction_timeout_ms"] == DIES_ON_TIMEOUT_MS:
            if self.overlap and life == 0:
                assert self._three_under_way.wait(WAIT_S)
            with self._lock:
                self.deaths += 1
            self._crashed.set()
            return DIE
        if api == "InitProducerId":
            with self._lock:
                self._others += 1
                if self._others >= 3:
                    self._three_under_way.set()
        if api == "EndTxn" and self.overlap and life == 0:
            assert self._crashed.wait(WAIT_S)
            return CLOSE  # the broker is gone by now
        return None

    def bring_back(self) -> None:
        self.lives += 1
        self.fake = self.fake.revived()

    def stop(self) -> None:
        self.fake.stop()


@pytest.fixture
def cases(tmp_path):
    (tmp_path / "crash.yaml").write_text(textwrap.dedent(SUITE))
    suite, errors = load_suite_file(tmp_path / "crash.yaml", components=bundled())
    assert not errors, errors
    return suite.cases


def run_all(cases, *, parallel: bool, bring_back: bool) -> tuple[list, CrashingBroker, Runner]:
    broker = CrashingBroker(overlap=parallel)
    target = HostPortTarget(broker.fake.address)
    target.start()
    runner = Runner(target, run_id="crash", timeout=WAIT_S)
    if bring_back:
        runner.bring_back = broker.bring_back
    items = [(case, version) for case in cases for version in runner.case_versions(case)]
    try:
        if parallel:
            ahead = RunAhead(runner, items, 4)
            try:
                results = [ahead.result(case, version) for case, version in items]
            finally:
                ahead.close()
        else:
            results = [runner.run(case, version) for case, version in items]
    finally:
        runner.close(keep_topics=True)
        broker.stop()
    return results, broker, runner


def test_the_item_that_takes_the_target_down_beside_others_fails_and_the_others_get_the_verdicts_of_a_serial_run(cases):
    serial, _, _ = run_all(cases, parallel=False, bring_back=True)
    parallel, broker, _ = run_all(cases, parallel=True, bring_back=True)
    assert [(r.case_id, r.version, r.outcome) for r in parallel] == [(r.case_id, r.version, r.outcome) for r in serial], \
        [f"{r.case_id} v{r.version}: {r.outcome.value}: {r.message}" for r in parallel]
    crasher, *others = parallel
    assert crasher.outcome is Outcome.FAILED
    assert crasher.message.startswith(f"{STOPPED_ANSWERING}: it took the target down")
    assert "the harness restarted it" in crasher.message
    assert "the request that did it: InitProducerId v4, step '1 send InitProducerId'" in crasher.message
    # the request is kept as the bytes that replay it: the transcript's last exchange, its hex in the message
    frame = bytes(crasher.transcript_source.exchanges[-1].request_bytes)
    assert f"hex {frame.hex()}" in crasher.message
    assert {result.outcome for result in others} == {Outcome.PASSED}
    # The first crash came while three other items were under way; alone, the crasher took it down again.
    assert broker.deaths == 2 and broker.lives == 2


def test_without_a_way_back_every_item_under_way_is_named_with_its_last_request_and_the_rest_are_not_run(cases):
    results, _, runner = run_all(cases, parallel=True, bring_back=False)
    crasher, *others = results
    assert runner.down.startswith("target 127.0.0.1:")
    assert "items ran at once" in runner.down and "under way then: " in runner.down
    assert "crash::crasher v4 (last sent: InitProducerId v4, step '1 send InitProducerId')" in runner.down
    for version in range(3):  # the three items beside it, whatever each had sent last
        assert f"crash::plain v{version} (last sent: " in runner.down
    assert [result.outcome for result in results] == [Outcome.ERROR] * len(results)
    no_verdict = [result for result in results if result.message.startswith("no verdict")]
    assert [(result.case_id, result.version) for result in no_verdict] == [("crasher", 4), *(("plain", v) for v in range(3))]
    assert all("this item last sent" in result.message and "--restart-command" in result.message
               for result in no_verdict)
    assert all(result.message.startswith(f"not run: {runner.down}") for result in results[4:])


def test_the_request_that_took_the_target_down_is_the_items_own_never_the_liveness_probe():
    """After a closed connection the harness asks ApiVersions on a fresh one (is the target still up?); that probe
    goes into the item's transcript, but the crash is the item's own last request (the mock aborted on a
    ConsumerGroupHeartbeat and the probe was named, with its bytes to replay)."""
    from types import SimpleNamespace

    from conformance.runner.under_way import LIVENESS_PROBE, last_request, replayable

    heartbeat = SimpleNamespace(api="ConsumerGroupHeartbeat", version=1, step="1 join", request_bytes=b"\x00\x01\x02")
    probe = SimpleNamespace(api="ApiVersions", version=0, step=LIVENESS_PROBE, request_bytes=b"\x09\x09")
    transcript = SimpleNamespace(exchanges=[heartbeat, probe])
    assert last_request(transcript) == "ConsumerGroupHeartbeat v1, step '1 join'"
    assert replayable(transcript) == ("the request that did it: ConsumerGroupHeartbeat v1, step '1 join', exchange 1 of "
                                      "the transcript (its request_bytes, 3 bytes with the size prefix, hex 000102)")
    assert last_request(SimpleNamespace(exchanges=[probe])) == "no request yet"


def test_a_crash_on_a_set_up_request_blocks_the_item_and_names_that_api_not_the_api_under_test(tmp_path):
    """The mock aborts on a set-up ConsumerGroupHeartbeat of the kip848 TxnOffsetCommit cases: the crash is the
    heartbeat's finding, and TxnOffsetCommit, never sent, gets no verdict."""
    (tmp_path / "setup-crash.yaml").write_text(textwrap.dedent(f"""\
        suite: setup-crash
        title: A set-up request that takes the broker down
        spec: KIP-98
        transactional_ids: [main]
        cases:
          - id: endtxn-after-deadly-init
            title: EndTxn, after an InitProducerId the broker dies on
            cites: KIP-98
            under_test: {{api: EndTxn, versions: "3"}}
            steps:
              - send: InitProducerId
                fields: {{transactional_id: "${{txn_ids.main}}", transaction_timeout_ms: {DIES_ON_TIMEOUT_MS}, producer_id: -1, producer_epoch: -1}}
                expect: {{error_code: NONE}}
                save: {{pid: producer_id, epoch: producer_epoch}}
              - send: EndTxn
                fields: {{transactional_id: "${{txn_ids.main}}", producer_id: "${{pid}}", producer_epoch: "${{epoch}}", committed: true}}
                expect: {{error_code: NONE}}
        """))
    suite, errors = load_suite_file(tmp_path / "setup-crash.yaml", components=bundled())
    assert not errors, errors
    [result], _, _ = run_all(suite.cases, parallel=False, bring_back=True)
    assert result.outcome is Outcome.BLOCKED, result.message
    assert result.message.startswith(f"{STOPPED_ANSWERING}: its set-up request took the target down")
    assert "the crash is InitProducerId's finding, so there is no verdict on EndTxn" in result.message
    assert "the request that did it: InitProducerId v" in result.message


def test_a_revivable_fake_listens_below_the_ports_the_kernel_gives_outgoing_connections():
    """So that while it is dead no other process's connection or free port takes its place (see fake_kafka)."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as ports:
        lowest_outgoing = int(ports.read().split()[0])
    fake = FakeKafka(revivable=True)
    try:
        assert fake.port < lowest_outgoing
        fake.stop()
        revived = fake.revived()
        assert revived.alive and revived.port == fake.port
        fake = revived
    finally:
        fake.stop()



def test_a_request_the_broker_held_before_it_went_down_is_run_alone_after_the_one_read_as_it_crashed():
    down = 1_800_000_000.0
    held = Suspect(("JoinGroup", 5), 1, sent_at=down - 29, seen_down_at=down)  # a rebalance held it 29 s
    crasher = Suspect(("ConsumerGroupHeartbeat", 1), 1, sent_at=down - 0.01, seen_down_at=down)
    later = Suspect(("Produce", 9), 1, sent_at=down - 0.005, seen_down_at=down)
    assert sorted([held, later, crasher], key=lambda suspect: suspect.turn) == [crasher, later, held]
    # none held: the oldest unanswered request first, as a broker reads them in order
    slow = Suspect(("Fetch", 12), 1, sent_at=down - HELD_S / 2, seen_down_at=down)
    assert slow.turn < crasher.turn
