"""Benchmark: what N distinct crashes cost a parallel run, against a scripted broker (tests/support/fake_kafka.py).

``python tools/bench_crashes.py [--workers 4 16] [--kinds 1 2 4] [--repeats 3]`` (from a checkout: it uses the
tests' scripted broker). The broker dies on an InitProducerId with one transaction timeout, at each of N versions
(N distinct requests), and the harness brings it back; ``--repeats`` cases send each of them, beside 60 items that
never crash (each request answered after 50 ms, a slow broker). Side by side in one run,
for each number of workers: the same items against a broker that never dies (the reference), then against the
crashing one. It prints the extra time the crashes cost, per kind of crash: it should grow with N, not with N x the
items under way (the extra per kind about the same for 4 and 16 workers), and every crashing item fails for it.
``PYTHONPATH=<another checkout> python tools/bench_crashes.py`` measures that checkout's runner the same way.

What it showed (December 2026, 2-core machine at load 6, shared), crashing against never-crashing time:
16 workers: this runner 3.9 / 4.5 / 7.4 s for N = 1 / 2 / 4 against 1.1-1.3 s, the runner before it 13.2 / 13.9 /
13.9 s (every suspect of a crash alone, one after another, at 50 ms a request every item under way is one); 4
workers: 5.2 / 7.2 / 15.1 s against 7.3 / 7.5 / 8.8 s before (N = 4 worse there: not understood yet).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
# The runner of this checkout (not an installed one), unless PYTHONPATH names another: before the site packages.
_SITE = next((index for index, path in enumerate(sys.path) if "site-packages" in path), len(sys.path))
sys.path.insert(_SITE, str(Path(__file__).resolve().parents[1]))

from fake_kafka import DIE, FakeKafka  # noqa: E402

from conformance.results import STOPPED_ANSWERING  # noqa: E402
from conformance.runner.parallel import RunAhead  # noqa: E402
from conformance.runner.runner import Runner  # noqa: E402
from conformance.runner.steps import bundled  # noqa: E402
from conformance.suite.loader import load_suite_file  # noqa: E402
from conformance.targets.hostport import HostPortTarget  # noqa: E402

DIES_ON_TIMEOUT_MS = 12345
ROUND_TRIP_S = 0.05
PLAIN_CASES = 10  # x EndTxn v0-5: 60 items that never crash

SUITE_HEAD = """\
suite: bench-crashes
title: Requests that take the broker down, among others
spec: KIP-98
transactional_ids: [main]
cases:
"""
PLAIN = """\
  - id: plain-{number}
    title: EndTxn after InitProducerId
    cites: KIP-98
    under_test: {{api: EndTxn, versions: "0-5"}}
    steps:
      - send: InitProducerId
        fields: {{transactional_id: "${{txn_ids.main}}", transaction_timeout_ms: 60000, producer_id: -1, producer_epoch: -1}}
        expect: {{error_code: NONE}}
        save: {{pid: producer_id, epoch: producer_epoch}}
      - send: EndTxn
        fields: {{transactional_id: "${{txn_ids.main}}", producer_id: "${{pid}}", producer_epoch: "${{epoch}}", committed: true}}
        expect: {{error_code: NONE}}
"""
CRASHER = """\
  - id: crasher-{number}
    title: InitProducerId with the timeout this broker dies on
    cites: KIP-98
    under_test: {{api: InitProducerId, versions: "3-{top}"}}
    steps:
      - send: InitProducerId
        fields: {{transactional_id: "${{txn_ids.main}}", transaction_timeout_ms: {timeout}, producer_id: -1, producer_epoch: -1}}
        expect: {{error_code: NONE}}
"""


class Broker:
    """The scripted broker, and the supervisor that brings it back; ``dies``: whether it crashes at all."""

    def __init__(self, dies: bool):
        self.dies = dies
        self.deaths = 0
        self.fake = FakeKafka(self.handler, revivable=True)

    def handler(self, api, version, body):
        time.sleep(ROUND_TRIP_S)
        if self.dies and api == "InitProducerId" and body["transaction_timeout_ms"] == DIES_ON_TIMEOUT_MS:
            self.deaths += 1
            return DIE
        return None

    def bring_back(self) -> None:
        self.fake = self.fake.revived()


def cases(folder: Path, kinds: int, repeats: int):
    plain = [PLAIN.format(number=number) for number in range(PLAIN_CASES)]
    crashers = [CRASHER.format(number=number, top=kinds + 2, timeout=DIES_ON_TIMEOUT_MS) for number in range(repeats)]
    for place, crasher in enumerate(crashers):  # among the others, so that each crash finds items under way
        plain.insert(2 + place * (len(plain) - 2) // len(crashers) + place, crasher)
    text = SUITE_HEAD + "".join(plain)
    path = folder / "bench-crashes.yaml"
    path.write_text(textwrap.dedent(text))
    suite, errors = load_suite_file(path, components=bundled())
    assert not errors, errors
    return suite.cases


def run(loaded, workers: int, dies: bool) -> tuple[float, list, int]:
    broker = Broker(dies)
    target = HostPortTarget(broker.fake.address)
    target.start()
    runner = Runner(target, run_id=f"bench{workers}{dies}", timeout=10.0)
    runner.bring_back = broker.bring_back
    items = [(case, version) for case in loaded for version in runner.case_versions(case)]
    begin = time.monotonic()
    ahead = RunAhead(runner, items, workers)
    try:
        results = [ahead.result(case, version) for case, version in items]
    finally:
        ahead.close()
        runner.close(keep_topics=True)
        broker.fake.stop()
    return time.monotonic() - begin, results, broker.deaths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[4, 16])
    parser.add_argument("--kinds", type=int, nargs="+", default=[1, 2, 4], help="distinct crashing requests (1-4: InitProducerId v3 up)")
    parser.add_argument("--repeats", type=int, default=3, help="cases that send each crashing request")
    arguments = parser.parse_args(argv)
    print(f"{PLAIN_CASES * 6} items that never crash; {arguments.repeats} cases send each crashing request")
    with tempfile.TemporaryDirectory() as folder:
        for kinds in arguments.kinds:
            loaded = cases(Path(folder), kinds, arguments.repeats)
            for workers in arguments.workers:
                calm, _, _ = run(loaded, workers, dies=False)
                crashed, results, deaths = run(loaded, workers, dies=True)
                crashers = [result for result in results if result.case_id.startswith("crasher")]
                blamed = sum(result.message.startswith(STOPPED_ANSWERING) for result in crashers)
                outcomes = Counter(result.outcome.value for result in results if not result.case_id.startswith("crasher"))
                print(f"N={kinds} kinds x {arguments.repeats} items, {workers:>2} workers: no crash {calm:5.1f} s, "
                      f"crashing {crashed:5.1f} s ({crashed / calm:.2f}x), {deaths} deaths, extra "
                      f"{(crashed - calm) / kinds:4.1f} s per kind; {blamed}/{len(crashers)} crashing items blamed; "
                      f"the others: {dict(outcomes)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
