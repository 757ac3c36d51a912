"""Benchmark: how fast the fast_forward step reaches the end of a producer's epoch space.

``python -m conformance.bench.epochs [SPEC ...] [--window N]`` starts each target once and, side by side
on it, fast-forwards one transactional id one request at a time (a sample of ``--sample`` epochs) and
another pipelined (the whole space, 0 to 32766, as the cases at the end of the space need). It prints both
rates and then what the target did at the end: the next re-initialisation (Kafka rotates to a new producer
id with epoch 0), the same request again (the same new id), and the epoch before (fenced).
"""

from __future__ import annotations

import argparse
import time

from ..client.cluster import Cluster
from ..client.epochs import DEFAULT_WINDOW, LAST_EPOCH, fast_forward
from ..extension import Extensions
from ..protocol.errors import error_name
from ..targets.registry import resolve

RETRIABLE = {14, 15, 16, 51}


def _init(connection, version: int, transactional_id: str, producer_id: int = -1, epoch: int = -1) -> dict:
    body = {"transactional_id": transactional_id, "transaction_timeout_ms": 60_000,
            "producer_id": producer_id, "producer_epoch": epoch}
    deadline = time.monotonic() + 20
    while True:
        answer = connection.request("InitProducerId", version, body).response
        if answer["error_code"] not in RETRIABLE or time.monotonic() > deadline:
            return answer
        time.sleep(0.1)


def _shown(answer: dict) -> str:
    return f"{error_name(answer['error_code'])}, producer id {answer['producer_id']} epoch {answer['producer_epoch']}"


def measure(bootstrap: str, window: int, sample: int) -> None:
    """Time bumping one producer's epoch one request at a time and ``window`` at a time on the broker at ``bootstrap``,
    and print both rates."""
    cluster = Cluster(bootstrap, timeout=10.0)
    try:
        cluster.api_versions()
        version = cluster.best_version("InitProducerId")
        rates = {}
        for name, size, to_epoch in (("one at a time", 1, sample), (f"{window} in flight", window, LAST_EPOCH)):
            transactional_id = f"bench-epochs-{size}-{time.time_ns()}"
            connection = cluster.connection(cluster.coordinator(transactional_id))
            first = _init(connection, version, transactional_id)
            done = fast_forward(connection, transactional_id, first["producer_id"], first["producer_epoch"],
                                to_epoch, version=version, window=size)
            rates[name] = done.per_second
            print(f"  {name:<14} {done.bumps:>6} re-initialisations in {done.seconds:6.1f} s: "
                  f"{done.per_second:>8,.0f}/s")
        one, many = rates.values()
        print(f"  pipelining: {many / one:.1f}x; the whole space (0-{LAST_EPOCH}) in {LAST_EPOCH / many:.1f} s")
        pid, epoch = done.producer_id, done.producer_epoch
        print(f"  at epoch {epoch}, InitProducerId v{version} with producer id {pid} epoch {epoch}: "
              f"{_shown(_init(connection, version, transactional_id, pid, epoch))}")
        print(f"  the same again (a retry): {_shown(_init(connection, version, transactional_id, pid, epoch))}")
        print(f"  epoch {epoch - 1} (older): {_shown(_init(connection, version, transactional_id, pid, epoch - 1))}")
    finally:
        cluster.close()


def main(argv: list[str] | None = None) -> int:
    """Start each target spec given and measure its epoch bumps; the exit status."""
    parser = argparse.ArgumentParser(prog="python -m conformance.bench.epochs")
    parser.add_argument("specs", nargs="*", default=["kafka"])
    parser.add_argument("--window", type=int, default=DEFAULT_WINDOW, help="requests in flight when pipelined")
    parser.add_argument("--sample", type=int, default=3000, help="epochs fast-forwarded one at a time")
    arguments = parser.parse_args(argv)
    kinds = Extensions.for_run().target_kinds()
    for spec in arguments.specs:
        kind = next((kind for kind in kinds if kind.matches(spec)), None)
        reason = kind.availability() if kind else "unknown kind"
        if reason:
            print(f"{spec}: unavailable: {reason}")
            continue
        target = resolve(spec, kinds)
        target.start()
        try:
            print(f"{spec} ({target.version or 'version unknown'}):")
            measure(target.bootstrap, arguments.window, arguments.sample)
        finally:
            target.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
