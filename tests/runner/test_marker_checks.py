"""A check of a transaction's end reads the markers, not read_committed's filtering (issue 35's second audit).

EndTxn and InitProducerId end a transaction by writing a marker after its records; hiding an aborted
transaction's records from read_committed is then Fetch's work (its aborted transactions list), which the
Fetch cases judge. Tansu and librdkafka's mock write the ABORT marker but their read_committed Fetch returns
no aborted transactions, so checks that read through read_committed failed the step that ended the
transaction: ``kip98.transactions::abort-one-partition`` and ``commit-after-abort`` (EndTxn, on both; the
commit after the abort had no effect, no COMMIT marker, and still failed) and
``kip360.producer-recovery::reinit-aborts-open-transaction`` (InitProducerId, on Tansu, which does abort).
The checks now read the log as it is (read_uncommitted: the records and the markers after them). A broker
that writes no marker, or a COMMIT after an abort, still fails.
"""

from __future__ import annotations

from conformance.protocol import records
from conformance.suite.model import Outcome

from fake_kafka import FakeKafka
from scripted_runs import bundled_case, run_on


class OneLog:
    """One transactional id and one log. ``filters``: read_committed Fetch reports the aborted transactions
    (else none, and the LSO is the high watermark, as on Tansu and the mock); ``aborts_on_init``: InitProducerId
    on an open transaction aborts it first; ``commits_after_abort``: EndTxn commit after an abort answers NONE
    and writes a COMMIT marker."""

    PID = 4000

    def __init__(self, *, filters=False, aborts_on_init=True, commits_after_abort=False):
        self.filters, self.aborts_on_init, self.commits_after_abort = filters, aborts_on_init, commits_after_abort
        self.epoch, self.open, self.first = -1, False, 0
        self.log: list[records.RecordBatch] = []
        self.aborted: list[dict] = []

    @property
    def end(self) -> int:
        return sum(len(batch.records) for batch in self.log)

    def __call__(self, api, version, body):
        if api == "Metadata":  # two partitions (abort-one-partition writes to partition 1), both led here
            answer = self.fake._default("Metadata", version, body)
            for topic in answer["topics"]:
                topic["partitions"] = [{**topic["partitions"][0], "partition_index": index} for index in (0, 1)]
            return answer
        if api == "InitProducerId":
            if self.open and self.aborts_on_init:
                self._marker(commit=False)
            self.open = False
            self.epoch += 1
            return {"producer_id": self.PID, "producer_epoch": self.epoch}
        if api == "AddPartitionsToTxn":
            if not self.open:
                self.open, self.first = True, self.end
            return {"results_by_topic_v3_and_below": [
                {"name": topic["name"], "results_by_partition": [{"partition_index": p} for p in topic["partitions"]]}
                for topic in body["v3_and_below_topics"]]}
        if api == "Produce":
            topic = body["topic_data"][0]
            partition = topic["partition_data"][0]
            base = self.end
            for batch in records.decode_batches(partition["records"]):
                batch.base_offset = self.end
                self.log.append(batch)
            return {"responses": [{"name": topic["name"], "partition_responses": [
                {"index": partition["index"], "base_offset": base, "log_start_offset": 0}]}]}
        if api == "EndTxn":
            if self.open:
                self._marker(commit=body["committed"])
            elif body["committed"] and self.commits_after_abort:
                self.log.append(records.control_batch(self.PID, self.epoch, True, 0, base_offset=self.end))
            return {}  # NONE, also to a commit after the abort: a route to "no effect" where nothing is written
        if api == "Fetch":
            topic = body["topics"][0]
            committed = body.get("isolation_level") == 1
            stable = self.first if self.open and self.filters else self.end
            shown = [batch for batch in self.log if not committed or batch.base_offset < stable]
            return {"responses": [{"topic": topic.get("topic"), "topic_id": topic.get("topic_id"), "partitions": [
                {"partition_index": topic["partitions"][0]["partition"], "high_watermark": self.end,
                 "last_stable_offset": stable, "log_start_offset": 0, "preferred_read_replica": -1,
                 "aborted_transactions": self.aborted if committed and self.filters else [],
                 "records": b"".join(records.encode_batch(batch) for batch in shown)}]}]}
        return None

    def _marker(self, commit: bool):
        if not commit:
            self.aborted.append({"producer_id": self.PID, "first_offset": self.first})
        self.log.append(records.control_batch(self.PID, self.epoch, commit, 0, base_offset=self.end))
        self.open = False


ABORT = bundled_case("kip98/transactions.yaml", "abort-one-partition")
COMMIT_AFTER_ABORT = bundled_case("kip98/transactions.yaml", "commit-after-abort")
REINIT = bundled_case("kip360/producer-recovery.yaml", "reinit-aborts-open-transaction")


def run(case, version, **behaviour):
    script = OneLog(**behaviour)
    script.fake = broker = FakeKafka(script)
    return run_on(broker, case, version)


def test_a_broker_that_writes_the_markers_passes_whatever_its_read_committed_filtering():
    for filters in (False, True):  # False: Tansu's and the mock's read_committed, aborted records delivered
        for case, version in ((ABORT, 1), (COMMIT_AFTER_ABORT, 1), (REINIT, 4)):
            result = run(case, version, filters=filters)
            assert result.outcome is Outcome.PASSED, (case.id, filters, result.message)


def test_an_init_that_leaves_the_transaction_open_fails_on_init_producer_id():
    result = run(REINIT, 4, aborts_on_init=False)  # the mock: no marker, the records stay pending
    assert result.outcome is Outcome.FAILED, result.message
    assert result.failure.role == "under_test" and "high_watermark: expected 3, got 2" in result.message


def test_a_commit_written_after_the_abort_fails_on_end_txn():
    result = run(COMMIT_AFTER_ABORT, 1, commits_after_abort=True)
    assert result.outcome is Outcome.FAILED, result.message
    assert result.failure.role == "under_test" and "COMMIT" in result.message
