"""Check the observer before blaming the step.

A check is only evidence where its observer can see what it looks for. Tansu's LSO passes a transaction left
open, so ``kip890.transaction-v2::no-hanging-transaction-after-refusal`` failed Produce for what is Tansu's LSO
(a read_committed Fetch departure); Tansu never answers UNSTABLE_OFFSET_COMMIT, so the pending-offsets check of
``kip98.offsets::txn-offset-commit-without-add-offsets`` passed there without being able to fail; librdkafka's
mock never stores transactional offsets, so ``kip98.offsets::offset-fetch-after-transactional-commit`` failed
OffsetFetch for what TxnOffsetCommit and EndTxn did not do (a plain commit is fetched). The cases
now first run a control through the same observer (``observer_control``): on a known situation (a transaction
left open on a partition of its own; a genuinely open transactional commit) the observer must show what the
check looks for, else the item is blocked naming the observer's finding. Where the control holds, the check
judges as before.
"""

from __future__ import annotations

from conformance.protocol import records
from conformance.suite.model import Outcome

from fake_kafka import CODEC, FakeKafka
from scripted_runs import bundled_case, run_on

INVALID_TXN_STATE, CONCURRENT_TRANSACTIONS, UNSTABLE_OFFSET_COMMIT = 48, 51, 88
# what the coordinator, the leader and the group coordinator below speak (versions that name topics)
ADVERTISED = {spec.name: (spec.versions()[0], spec.versions()[-1]) for spec in CODEC.registry.apis()
              if spec.versions()} | {"Fetch": (4, 12), "Produce": (3, 11), "OffsetFetch": (1, 9),
                                     "TxnOffsetCommit": (0, 4), "EndTxn": (0, 4), "InitProducerId": (0, 4)}


class Transactional:
    """Transactions, logs and group offsets, enough for the two cases. ``honest_lso``: the LSO stops at the
    first transaction left open (else it is the high watermark, as on Tansu); ``verifies``: a transactional
    write to a partition not added is refused (KIP-890); ``reports_pending``: a RequireStable OffsetFetch of a
    group with pending transactional offsets answers UNSTABLE_OFFSET_COMMIT (KIP-447)."""

    def __init__(self, *, honest_lso=True, verifies=True, reports_pending=True, stores_txn_offsets=True,
                 without_add_offsets="refuse"):
        self.honest_lso, self.verifies, self.reports_pending = honest_lso, verifies, reports_pending
        # TxnOffsetCommit before AddOffsetsToTxn: "refuse" (INVALID_TXN_STATE), "stage" (answered NONE, the offsets
        # added to the transaction, as KIP-890's v5 does), "commit" (answered NONE, committed at once: an effect),
        # "defer" (answered CONCURRENT_TRANSACTIONS every time: a client would send it again, nothing is refused)
        self.without_add_offsets = without_add_offsets
        self.stores_txn_offsets = stores_txn_offsets
        self.logs: dict[tuple, list[records.RecordBatch]] = {}
        self.open: dict[tuple, dict[int, int]] = {}  # partition -> producer id -> first offset of its open write
        self.pids: dict[str, int] = {}
        self.added: dict[str, set] = {}
        self.pending: dict[str, dict] = {}  # transactional id -> {(group, topic, partition): offset}
        self.committed: dict[tuple, int] = {}

    def __call__(self, api, version, body):
        handler = getattr(self, api, None)
        return handler(version, body) if handler else None

    def Metadata(self, version, body):
        answer = self.fake._default("Metadata", version, body)
        for topic in answer["topics"]:  # two partitions each, both led by the one broker
            topic["partitions"] = [{**topic["partitions"][0], "partition_index": index} for index in (0, 1)]
        return answer

    def InitProducerId(self, version, body):
        self.pids[body["transactional_id"]] = pid = len(self.pids) + 10
        return {"producer_id": pid, "producer_epoch": 0}

    def AddPartitionsToTxn(self, version, body):
        added = self.added.setdefault(body["v3_and_below_transactional_id"], set())
        for topic in body["v3_and_below_topics"]:
            added.update((topic["name"], partition) for partition in topic["partitions"])
        return {"results_by_topic_v3_and_below": [{"name": topic["name"], "results_by_partition": [
            {"partition_index": partition} for partition in topic["partitions"]]}
            for topic in body["v3_and_below_topics"]]}

    def Produce(self, version, body):
        topic = body["topic_data"][0]
        partition = topic["partition_data"][0]
        where = (topic["name"], partition["index"])
        log = self.logs.setdefault(where, [])
        batches = records.decode_batches(partition["records"])
        transactional = any(batch.is_transactional for batch in batches)
        if transactional and self.verifies and where not in self.added.get(body.get("transactional_id"), set()):
            return self._produced(topic, partition, INVALID_TXN_STATE, -1)
        base = offset = sum(len(batch.records) for batch in log)
        for batch in batches:
            batch.base_offset, offset = offset, offset + len(batch.records)
            log.append(batch)
            if batch.is_transactional:
                self.open.setdefault(where, {}).setdefault(batch.producer_id, batch.base_offset)
        return self._produced(topic, partition, 0, base)

    @staticmethod
    def _produced(topic, partition, error, base):
        return {"responses": [{"name": topic["name"], "partition_responses": [
            {"index": partition["index"], "error_code": error, "base_offset": base, "log_start_offset": 0}]}]}

    def EndTxn(self, version, body):
        txn = body["transactional_id"]
        pid = self.pids.get(txn)
        for writers in self.open.values():
            writers.pop(pid, None)
        staged = self.pending.pop(txn, {})
        if body["committed"] and self.stores_txn_offsets:
            self.committed.update(staged)
        self.added.pop(txn, None)
        return {}

    def Fetch(self, version, body):
        topic = body["topics"][0]
        where = (topic["topic"], topic["partitions"][0]["partition"])
        log = self.logs.get(where, [])
        high = sum(len(batch.records) for batch in log)
        open_at = list(self.open.get(where, {}).values())
        stable = min(open_at) if open_at and self.honest_lso else high
        shown = [batch for batch in log if body.get("isolation_level") != 1 or batch.base_offset < stable]
        return {"responses": [{"topic": topic["topic"], "partitions": [
            {"partition_index": where[1], "high_watermark": high, "last_stable_offset": stable, "log_start_offset": 0,
             "preferred_read_replica": -1, "records": b"".join(records.encode_batch(batch) for batch in shown)}]}]}

    def AddOffsetsToTxn(self, version, body):
        self.added.setdefault(body["transactional_id"], set()).add(("group", body["group_id"]))
        return {}

    def TxnOffsetCommit(self, version, body):
        txn, group = body["transactional_id"], body["group_id"]
        added = ("group", group) in self.added.get(txn, set())
        refused = not added and self.without_add_offsets == "refuse"
        offsets = {(group, topic["name"], partition["partition_index"]): partition["committed_offset"]
                   for topic in body["topics"] for partition in topic["partitions"]}
        if not added and self.without_add_offsets == "commit":
            self.committed.update(offsets)
        elif not refused and self.without_add_offsets != "defer":
            self.pending.setdefault(txn, {}).update(offsets)
        if not added and self.without_add_offsets == "defer":
            refused, offsets = CONCURRENT_TRANSACTIONS, {}
        else:
            refused = INVALID_TXN_STATE if refused else 0
        return {"topics": [{"name": topic["name"], "partitions": [
            {"partition_index": partition["partition_index"], "error_code": refused}
            for partition in topic["partitions"]]} for topic in body["topics"]]}

    def OffsetCommit(self, version, body):
        for topic in body["topics"]:
            for partition in topic["partitions"]:
                self.committed[(body["group_id"], topic["name"], partition["partition_index"])] = partition["committed_offset"]
        return {"topics": [{"name": topic["name"], "partitions": [{"partition_index": partition["partition_index"]}
                                                                  for partition in topic["partitions"]]}
                           for topic in body["topics"]]}

    def OffsetFetch(self, version, body):
        def answer(group, topics, stable):
            rows = []
            for topic in topics:
                partitions = []
                for index in topic["partition_indexes"]:
                    key = (group, topic["name"], index)
                    pending = any(key in staged for staged in self.pending.values())
                    error = UNSTABLE_OFFSET_COMMIT if stable and pending and self.reports_pending else 0
                    partitions.append({"partition_index": index, "committed_offset": -1 if error else
                                       self.committed.get(key, -1), "error_code": error})
                rows.append({"name": topic["name"], "partitions": partitions})
            return rows
        stable = bool(body.get("require_stable"))
        if version >= 8:
            return {"groups": [{"group_id": group["group_id"], "topics": answer(group["group_id"], group["topics"], stable)}
                               for group in body["groups"]]}
        return {"topics": answer(body["group_id"], body["topics"], stable)}


ADVERTISED["OffsetCommit"] = (2, 9)  # OffsetCommit v10 names topics by id


def run(case, version: int, **behaviour):
    script = Transactional(**behaviour)
    script.fake = broker = FakeKafka(script, apis=ADVERTISED)
    return run_on(broker, case, version)


NO_HANGING = bundled_case("kip890/transaction-v2.yaml", "no-hanging-transaction-after-refusal")
WITHOUT_ADD = bundled_case("kip98/offsets.yaml", "txn-offset-commit-without-add-offsets")
AFTER_COMMIT = bundled_case("kip98/offsets.yaml", "offset-fetch-after-transactional-commit")


def test_an_lso_that_passes_open_transactions_blocks_the_item_naming_the_observer():
    result = run(NO_HANGING, 3, honest_lso=False, verifies=False)  # Tansu: LSO = HW, the write accepted
    assert result.outcome is Outcome.BLOCKED, result.message
    assert "the LSO does not stop at a transaction left open" in result.message
    assert result.failure.api == "Fetch"


def test_with_an_observer_that_sees_an_accepted_write_leaving_a_transaction_open_fails():
    result = run(NO_HANGING, 3, verifies=False)
    assert result.outcome is Outcome.FAILED, result.message
    assert result.failure.role == "under_test" and "high_watermark" in result.message


def test_a_broker_that_refuses_the_write_passes_with_its_observer_shown_to_see():
    result = run(NO_HANGING, 3)
    assert result.outcome is Outcome.PASSED, result.message


def test_a_broker_that_never_reports_pending_offsets_cannot_pass_the_pending_offsets_check():
    # Tansu never answers UNSTABLE_OFFSET_COMMIT: where the commit is answered NONE, whether its offsets are left
    # pending is the verdict, and that check cannot be made
    result = run(WITHOUT_ADD, 2, reports_pending=False, without_add_offsets="stage")
    assert result.outcome is Outcome.BLOCKED, result.message
    assert "does not report pending transactional offsets" in result.message
    assert "its verdict needed the check" in result.message and "no offset is left pending" in result.message
    assert result.failure.api == "OffsetFetch"


def test_a_refusal_is_judged_though_the_pending_offsets_observer_cannot_see():
    # the control blocks only the check that relies on it: a refusal meets "refused or no effect" by itself
    # (before: blocked up front, on Tansu and librdkafka's mock alike)
    result = run(WITHOUT_ADD, 2, reports_pending=False)
    assert result.outcome is Outcome.PASSED, result.message


class Clock:
    """A clock each reading of which is a second later: a step's retries run out at once."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        self.now += 1
        return self.now


def test_a_request_only_deferred_is_no_refusal_where_the_pending_offsets_observer_cannot_see(monkeypatch):
    # CONCURRENT_TRANSACTIONS to the end of the step's retries defers the commit, it does not refuse it: the verdict
    # still needs the check the blind observer cannot make (before: passed as "refused")
    monkeypatch.setattr("conformance.runner.exchange.time", Clock())
    result = run(WITHOUT_ADD, 2, reports_pending=False, without_add_offsets="defer")
    assert result.outcome is Outcome.BLOCKED, result.message
    assert "its verdict needed the check" in result.message


def test_an_effect_another_check_sees_fails_though_the_pending_offsets_observer_cannot_see():
    # answered NONE and committed outside the transaction: the plain OffsetFetch check sees it, whatever the
    # pending-offsets observer can do (before: blocked up front)
    result = run(WITHOUT_ADD, 2, reports_pending=False, without_add_offsets="commit")
    assert result.outcome is Outcome.FAILED, result.message
    assert result.failure.role == "under_test" and "committed_offset: expected -1, got 3" in result.message


def test_a_broker_that_reports_pending_offsets_is_judged():
    result = run(WITHOUT_ADD, 2)
    assert result.outcome is Outcome.PASSED, result.message


def test_offsets_a_transaction_never_stored_block_offset_fetch_naming_txn_offset_commit_and_end_txn():
    # librdkafka's mock: TxnOffsetCommit answers NONE and EndTxn commits, but the offsets never reach the group
    result = run(AFTER_COMMIT, 5, stores_txn_offsets=False)
    assert result.outcome is Outcome.BLOCKED, result.message
    assert "a TxnOffsetCommit/EndTxn finding" in result.message


def test_offset_fetch_is_judged_where_the_transaction_stored_its_offsets():
    result = run(AFTER_COMMIT, 5)
    assert result.outcome is Outcome.PASSED, result.message


VISIBLE = bundled_case("kip98/offsets.yaml", "txn-offset-commit-visible-after-commit")


def test_offsets_a_transaction_never_stored_fail_txn_offset_commit_where_they_should_become_visible():
    # the TxnOffsetCommit/EndTxn finding the OffsetFetch case above names is judged here, on TxnOffsetCommit: its
    # OffsetFetch check verifies (it was a plain check, so the mock's departure was blocked and failed nowhere)
    result = run(VISIBLE, 2, stores_txn_offsets=False)
    assert result.outcome is Outcome.FAILED, result.message
    assert result.failure.role == "under_test" and "committed_offset: expected 42, got -1" in result.message
    assert run(VISIBLE, 2).outcome is Outcome.PASSED


def test_an_offset_fetch_that_reads_back_no_commit_blocks_txn_offset_commit_naming_it():
    class Forgets(Transactional):
        def OffsetCommit(self, version, body):
            answer = super().OffsetCommit(version, body)
            self.committed.clear()  # answered, never stored: OffsetFetch can show no offset at all
            return answer

    script = Forgets()
    script.fake = broker = FakeKafka(script, apis=ADVERTISED)
    result = run_on(broker, VISIBLE, 2)
    assert result.outcome is Outcome.BLOCKED, result.message
    assert "does not read back a plain OffsetCommit" in result.message


FENCE = bundled_case("kip98/transactions-lifecycle.yaml", "produce-after-fence-rejected")


def test_a_write_the_coordinator_never_fenced_blocks_naming_init_producer_id():
    # this coordinator, as librdkafka's mock, aborts nothing when a new instance initialises: the partition has no
    # fence to hold the old instance to, so its accepted write is InitProducerId's omission (before: Produce failed)
    result = run(FENCE, 3)
    assert result.outcome is Outcome.BLOCKED, result.message
    assert "left the old instance's transaction open" in result.message
