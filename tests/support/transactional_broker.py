"""One transactional producer and one log behind a scripted broker (fake_kafka.FakeKafka), for verdict tests of
the cases that begin, write, end and read back a transaction.

Its behaviour is the KIP's unless a flag says otherwise: ``filters`` (read_committed Fetch reports the aborted
transactions and the LSO stops at an open one; off, the LSO is the high watermark and no aborted transaction is
listed, as on Tansu and librdkafka's mock), ``aborts_on_init`` (InitProducerId on an open transaction aborts it
first, then answers NONE), ``commits_after_abort`` (EndTxn commit of a transaction already aborted answers NONE
and writes a COMMIT marker: a departure; off, it answers NONE and changes nothing), ``partitions`` (how many
partitions Metadata gives every topic, all led here), ``coordinator_epoch`` (the epoch its transaction
coordinator writes markers at, as a broker restarted that many times; WriteTxnMarkers at a lower one is fenced)
and ``transaction_version`` (finalized in ApiVersions; 2 bumps the epoch at every EndTxn, as KIP-890 does).
"""

from __future__ import annotations

from conformance.protocol import records
from conformance.protocol.errors import error_code

from fake_kafka import FakeKafka


class OneTransactionalLog:
    PID = 4000

    def __init__(self, *, filters=True, aborts_on_init=True, commits_after_abort=False, partitions=1,
                 coordinator_epoch=0, transaction_version=0):
        self.filters, self.aborts_on_init, self.commits_after_abort = filters, aborts_on_init, commits_after_abort
        self.partitions, self.coordinator_epoch, self.transaction_version = partitions, coordinator_epoch, transaction_version
        self.epoch, self.open, self.first = -1, False, 0  # first: the open transaction's first offset
        self.log: list[records.RecordBatch] = []
        self.aborted: list[dict] = []
        self.marker_epochs: dict[int, int] = {}  # producer id -> the coordinator epoch of its last marker
        self.fake: FakeKafka | None = None

    def serve(self) -> FakeKafka:
        """The scripted broker answering as this log."""
        self.fake = FakeKafka(self)
        return self.fake

    @property
    def end(self) -> int:
        return sum(len(batch.records) for batch in self.log)

    def __call__(self, api, version, body):
        handler = getattr(self, api, None)
        return handler(version, body) if handler else None

    def ApiVersions(self, version, body):
        if not self.transaction_version:
            return None
        answer = self.fake._default("ApiVersions", version, body)
        if self.transaction_version:
            level = self.transaction_version
            answer["finalized_features"] = [{"name": "transaction.version", "max_version_level": level,
                                             "min_version_level": level}]
            answer["supported_features"] = [{"name": "transaction.version", "min_version": 0, "max_version": level}]
        return answer

    def Metadata(self, version, body):
        if self.partitions == 1:
            return None
        answer = self.fake._default("Metadata", version, body)
        for topic in answer["topics"]:
            topic["partitions"] = [{**topic["partitions"][0], "partition_index": index}
                                   for index in range(self.partitions)]
        return answer

    def InitProducerId(self, version, body):
        if self.open and self.aborts_on_init:  # abort first, then answer: the outcome KIP-98 names
            self._marker(commit=False)
        self.open = False
        self.epoch += 1
        return {"producer_id": self.PID, "producer_epoch": self.epoch}

    def AddPartitionsToTxn(self, version, body):
        if not self.open:
            self.open, self.first = True, self.end
        return {"results_by_topic_v3_and_below": [
            {"name": topic["name"], "results_by_partition": [{"partition_index": p} for p in topic["partitions"]]}
            for topic in body["v3_and_below_topics"]]}

    def Produce(self, version, body):
        topic = body["topic_data"][0]
        partition = topic["partition_data"][0]
        base = self.end
        for batch in records.decode_batches(partition["records"]):
            batch.base_offset = self.end
            self.log.append(batch)
            if batch.is_transactional and not self.open:  # KIP-890 v2: the first write adds the partition
                self.open, self.first = True, batch.base_offset
        return {"responses": [{"name": topic.get("name"), "topic_id": topic.get("topic_id"), "partition_responses": [
            {"index": partition["index"], "base_offset": base, "log_start_offset": 0}]}]}

    def EndTxn(self, version, body):
        if self.open:
            self._marker(commit=body["committed"])
        elif body["committed"] and self.commits_after_abort:
            self.log.append(records.control_batch(self.PID, self.epoch, True, self.coordinator_epoch,
                                                  base_offset=self.end))
        if self.transaction_version >= 2:
            self.epoch += 1
        return {"producer_id": self.PID, "producer_epoch": self.epoch}

    def WriteTxnMarkers(self, version, body):
        results = []
        for marker in body["markers"]:
            fenced = marker["coordinator_epoch"] < self.marker_epochs.get(marker["producer_id"], 0)
            code = error_code("TRANSACTION_COORDINATOR_FENCED") if fenced else 0
            if not fenced:
                self.marker_epochs[marker["producer_id"]] = marker["coordinator_epoch"]
            results.append({"producer_id": marker["producer_id"], "topics": [
                {"name": topic["name"], "partitions": [{"partition_index": index, "error_code": code}
                                                       for index in topic["partition_indexes"]]}
                for topic in marker["topics"]]})
        return {"markers": results}

    def Fetch(self, version, body):
        topic = body["topics"][0]
        committed = body.get("isolation_level") == 1
        stable = self.first if self.open and self.filters else self.end
        shown = [batch for batch in self.log if not committed or batch.base_offset < stable]
        return {"responses": [{"topic": topic.get("topic"), "topic_id": topic.get("topic_id"), "partitions": [
            {"partition_index": topic["partitions"][0]["partition"], "high_watermark": self.end,
             "last_stable_offset": stable, "log_start_offset": 0, "preferred_read_replica": -1,
             "aborted_transactions": self.aborted if committed and self.filters else [],
             "records": b"".join(records.encode_batch(batch) for batch in shown)}]}]}

    def _marker(self, commit: bool):
        if not commit:
            self.aborted.append({"producer_id": self.PID, "first_offset": self.first})
        self.log.append(records.control_batch(self.PID, self.epoch + (self.transaction_version >= 2), commit,
                                              self.coordinator_epoch, base_offset=self.end))
        self.marker_epochs[self.PID] = self.coordinator_epoch
        self.open = False
