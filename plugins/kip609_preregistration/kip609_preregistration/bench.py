"""Round trips per consume-transform-produce transaction: KIP-609's pre-registration against the adopted
protocol, both on ``emulate:kip609+SPEC`` (the KIP's "Performance Testing" asks for this comparison).

``python -m kip609_preregistration.bench [--target kafka] [--transactions 50]`` (from a checkout, with
``plugins/kip609_preregistration`` on ``PYTHONPATH`` or the plugin installed) starts the target once and runs
back-to-back transactions, each: register the output partition and the group, Produce, TxnOffsetCommit,
EndTxn commit. Adopted: AddPartitionsToTxn v3 and AddOffsetsToTxn v4 (each retried while Kafka answers
CONCURRENT_TRANSACTIONS, counted), EndTxn v5. Pre-registered: one AddPartitionsToTxn v6 with the group
(it blocks instead), EndTxn v6. Printed per transaction: the client's exchanges, its wall time, and the
exchanges the emulation itself made to Kafka (a native broker would not make them: they are the cost of
emulating, reported apart so the client's figure is the draft's).
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

from conformance import Cluster, Extensions, records, resolve_target as resolve

from . import plugin

CONCURRENT_TRANSACTIONS = 51
TRANSACTIONAL = 0x10        # batch attribute bit


def _retried(connection, api, version, body, error) -> tuple[dict, int]:
    sent = 0
    while True:
        sent += 1
        response = connection.request(api, version, body).response
        if error(response) != CONCURRENT_TRANSACTIONS:
            return response, sent
        time.sleep(0.02)      # the Java client's retry.backoff.ms is 100; shorter favours the adopted protocol


class Bench:
    def __init__(self, target, bootstrap: str, topics: tuple[str, str, str], codec):
        self.target = target
        self.cluster = Cluster(bootstrap, codec, timeout=40)
        self.out, self.source, self.group = topics

    def close(self) -> None:
        self.cluster.close()

    def create_topics(self) -> None:
        self.cluster.connection().request("CreateTopics", 7, {"topics": [
            {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
            for name in (self.out, self.source)], "timeout_ms": 10000, "validate_only": False})
        for name in (self.out, self.source):
            self._wait_until_served(name)

    def _wait_until_served(self, topic: str, timeout: float = 15.0) -> None:
        """Metadata names a leader before its replica manager serves the partition (a Produce then gets
        NOT_LEADER_OR_FOLLOWER, seen in CI): ask the leader itself until it answers."""
        deadline = time.monotonic() + timeout
        while True:
            leader = self.cluster.leader(topic, 0, wait=timeout)
            answer = self.cluster.connection(leader).request("ListOffsets", 1, {
                "replica_id": -1, "topics": [{"name": topic, "partitions": [
                    {"partition_index": 0, "timestamp": -1}]}]}).response
            if answer["topics"][0]["partitions"][0]["error_code"] == 0:
                return
            assert time.monotonic() < deadline, f"{topic} is not served after {timeout:.0f} s: {answer}"
            time.sleep(0.05)

    def producer(self):
        txn_id = f"kip609-bench-{uuid.uuid4().hex[:8]}"
        coordinator = self.cluster.connection(self.cluster.coordinator(txn_id))
        for _ in range(100):   # a fresh coordinator may still be loading
            init = coordinator.request("InitProducerId", min(self.cluster.best_version("InitProducerId"), 5), {
                "transactional_id": txn_id, "transaction_timeout_ms": 60000, "producer_id": -1,
                "producer_epoch": -1}).response
            if init["error_code"] == 0:
                break
            time.sleep(0.1)
        assert init["error_code"] == 0, init
        self.cluster.coordinator(self.group, "group")
        return txn_id, coordinator, init["producer_id"], init["producer_epoch"]

    def transaction(self, preregister: bool, txn_id, coordinator, pid, epoch, sequence) -> tuple[int, int]:
        """One transaction; returns (the client's exchanges, the new epoch)."""
        exchanges = 0
        if preregister:
            coordinator.request("AddPartitionsToTxn", 6, {"transactions": [{
                "transactional_id": txn_id, "producer_id": pid, "producer_epoch": epoch, "verify_only": False,
                "group_id": self.group, "topics": [{"name": self.out, "partitions": [0]}]}]})
            exchanges += 1
        else:
            _, sent = _retried(coordinator, "AddPartitionsToTxn", 3, {
                "v3_and_below_transactional_id": txn_id, "v3_and_below_producer_id": pid,
                "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": [{"name": self.out, "partitions": [0]}]},
                lambda r: r["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"])
            exchanges += sent
            _, sent = _retried(coordinator, "AddOffsetsToTxn", 4, {
                "transactional_id": txn_id, "producer_id": pid, "producer_epoch": epoch, "group_id": self.group},
                lambda r: r["error_code"])
            exchanges += sent
        batch = records.RecordBatch(attributes=TRANSACTIONAL, base_timestamp=int(time.time() * 1000),
                                    producer_id=pid, producer_epoch=epoch, base_sequence=sequence,
                                    records=[records.Record(offset_delta=0, value=b"v")])
        leader = self.cluster.connection(self.cluster.leader(self.out, 0))
        produce_version = min(self.cluster.best_version("Produce"), 11)   # by name: no topic id needed
        produced = leader.request("Produce", produce_version, {
            "transactional_id": txn_id, "acks": -1, "timeout_ms": 10000, "topic_data": [{"name": self.out,
                "partition_data": [{"index": 0, "records": records.encode_batch(batch)}]}]}).response
        assert produced["responses"][0]["partition_responses"][0]["error_code"] == 0, produced
        group_coordinator = self.cluster.connection(self.cluster.coordinator(self.group, "group"))
        committed = group_coordinator.request("TxnOffsetCommit", 3, {
            "transactional_id": txn_id, "group_id": self.group, "producer_id": pid, "producer_epoch": epoch,
            "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "topics": [{"name": self.source, "partitions": [{"partition_index": 0, "committed_offset": sequence,
                                                            "committed_leader_epoch": -1, "committed_metadata": ""}]}]}).response
        assert committed["topics"][0]["partitions"][0]["error_code"] == 0, committed
        end = coordinator.request("EndTxn", 6 if preregister else 5, {
            "transactional_id": txn_id, "producer_id": pid, "producer_epoch": epoch, "committed": True,
            **({"topics": [{"name": self.out, "partitions": [0]}]} if preregister else {})}).response
        assert end["error_code"] == 0, end
        return exchanges + 3, end["producer_epoch"] if end["producer_epoch"] >= 0 else epoch

    def run(self, preregister: bool, count: int) -> dict:
        txn_id, coordinator, pid, epoch = self.producer()
        emulation = self.target.emulation
        behind_before = emulation.broker.exchanges
        exchanges, times = [], []
        sequence = 0
        for _ in range(count):
            started = time.perf_counter()
            sent, bumped = self.transaction(preregister, txn_id, coordinator, pid, epoch, sequence)
            # Transaction version 2 bumps the epoch at each commit (sequences restart); version 1 does not.
            sequence, epoch = (0, bumped) if bumped != epoch else (sequence + 1, epoch)
            times.append(time.perf_counter() - started)
            exchanges.append(sent)
        return {"exchanges": statistics.mean(exchanges), "max_exchanges": max(exchanges),
                "median_ms": statistics.median(times) * 1000, "p90_ms": sorted(times)[int(0.9 * (len(times) - 1))] * 1000,
                "behind_proxy": (emulation.broker.exchanges - behind_before) / count}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="kafka", help="the inner target (emulate:kip609+TARGET)")
    parser.add_argument("--transactions", type=int, default=50)
    arguments = parser.parse_args(argv)
    extensions = Extensions.for_run(plugins=[plugin])  # this plugin, installed or not (a checkout)
    codec = extensions.codec()
    target = resolve(f"emulate:kip609+{arguments.target}", extensions.target_kinds())
    target.start()
    names = tuple(f"kip609-bench-{uuid.uuid4().hex[:8]}" for _ in range(3))
    through = Bench(target, target.bootstrap, names, codec)
    direct = Bench(target, target.inner.bootstrap, names, codec)
    try:
        through.create_topics()
        rows = {
            # Straight to Kafka: the adopted protocol as it is, CONCURRENT_TRANSACTIONS retried by the client.
            "adopted, straight to Kafka": direct.run(False, arguments.transactions),
            # Through the emulation, an old client's AddPartitionsToTxn blocks (the draft's compatibility rule).
            "adopted, through the emulation": through.run(False, arguments.transactions),
            "pre-registered (v6), through the emulation": through.run(True, arguments.transactions)}
    finally:
        for bench in (through, direct):
            bench.close()
        target.stop()
    print(f"{arguments.transactions} back-to-back transactions each, on emulate:kip609+{arguments.target}")
    print("protocol\tclient exchanges/txn (max)\tmedian ms\tp90 ms\temulation's own exchanges/txn")
    for name, row in rows.items():
        print(f"{name}\t{row['exchanges']:.2f} ({row['max_exchanges']})\t{row['median_ms']:.1f}\t{row['p90_ms']:.1f}"
              f"\t{row['behind_proxy']:.2f}")


if __name__ == "__main__":
    main()
