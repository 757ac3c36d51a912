"""Transactions per second of the exactly-once tier against confluent-kafka alone, on the same target.

``python -m conformance.bench.semantic [--target kafka] [--seconds 15] [--rounds 3]`` starts the target
once, then alternates rounds of the same transactional producers: bare (confluent-kafka's calls and
nothing else) and as the tier runs them (every operation recorded in a history, a read_committed reader
and the last-stable-offset monitor running beside them). No faults. It prints each round and the
median transactions per second of each, and the tier's share of the bare figure, measured side by side.
"""

from __future__ import annotations

import argparse
import logging
import random
import secrets
import statistics
import threading
import time

from confluent_kafka import KafkaException, Producer

from ..semantic.history import History
from ..semantic.eos_run import create_topics
from ..semantic.workload import LsoMonitor, Plan, Reader, Writer


def bare(plan: Plan, seconds: float, producers: int) -> float:
    """Transactions per second of plain confluent-kafka code doing what the tier's writers do."""
    done = []

    def loop(number: int) -> None:
        transactional_id = f"bench-bare-{number}-{secrets.token_hex(3)}"
        producer = Producer(plan.producer_config(transactional_id))
        producer.init_transactions(10)
        choose, count, deadline = random.Random(number), 0, time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                producer.begin_transaction()
                for index in range(choose.randint(1, 4)):
                    producer.produce(plan.input_topic, value=f"bare-{count}/{index}".encode(),
                                     partition=choose.randrange(plan.partitions))
                if choose.random() >= plan.abort_ratio:
                    producer.commit_transaction(10)
                else:
                    producer.abort_transaction(10)
            except KafkaException as raised:  # what an application does: abort, or start over when fatal
                if raised.args[0].txn_requires_abort():
                    producer.abort_transaction(10)
                else:
                    producer = Producer(plan.producer_config(transactional_id))
                    producer.init_transactions(10)
            count += 1
        done.append(count)

    return _timed([threading.Thread(target=loop, args=(number,)) for number in range(producers)], done, seconds)


def tier(plan: Plan, seconds: float, producers: int) -> float:
    """Transactions per second of the tier's writers, with its reader and LSO monitor running."""
    history, stop = History(), threading.Event()
    threads = [Writer(f"writer-{number}", plan, history, stop) for number in range(producers)]
    companions = [Reader("reader", plan, history, stop), LsoMonitor("lso", plan, history, stop)]
    for thread in companions + threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in companions + threads:
        thread.join(60)
    ends = [event for event in history.events if event.kind == "txn" and event.phase != "invoke"]
    if plan.crashes:
        raise RuntimeError(plan.crashes[0])
    return len(ends) / seconds


def _timed(threads, done, seconds) -> float:
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if len(done) != len(threads):
        raise RuntimeError("a producer of the bare round failed (its traceback is above)")
    return sum(done) / seconds


def main(argv: list[str] | None = None) -> int:
    """Time the exactly-once workload's transactions against bare producers on the same target, side by side; the exit
    status."""
    from ..targets.pool import TargetPool
    from ..extension import Extensions

    parser = argparse.ArgumentParser(prog="python -m conformance.bench.semantic", description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="kafka")
    parser.add_argument("--seconds", type=float, default=15.0, help="length of one round (default: 15)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each (default: 3)")
    parser.add_argument("--producers", type=int, default=2)
    arguments = parser.parse_args(argv)
    pool = TargetPool([arguments.target], Extensions.for_run().target_kinds())
    try:
        target = pool.acquire(arguments.target)
        plan = Plan(target.bootstrap, run=secrets.token_hex(3), security=target.security)
        plan.logger = logging.getLogger("conformance.bench.semantic")  # librdkafka's log: not on the figures' screen
        plan.logger.propagate = False
        plan.logger.addHandler(logging.NullHandler())
        create_topics(plan, target)
        figures: dict[str, list[float]] = {"confluent-kafka alone": [], "exactly-once tier": []}
        for round_number in range(1, arguments.rounds + 1):
            for name, measure in (("confluent-kafka alone", bare), ("exactly-once tier", tier)):
                rate = measure(plan, arguments.seconds, arguments.producers)
                figures[name].append(rate)
                print(f"round {round_number}: {name:<22} {rate:8.1f} tx/s")
        alone, checked = (statistics.median(figures[name]) for name in figures)
        print(f"\nmedian on {arguments.target} ({target.version}), {arguments.producers} producers, "
              f"{arguments.seconds:g} s rounds:")
        print(f"  confluent-kafka alone  {alone:8.1f} tx/s")
        print(f"  exactly-once tier      {checked:8.1f} tx/s  ({checked / alone:.2f}x of alone)")
    finally:
        for problem in pool.stop_all():
            print(problem)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
