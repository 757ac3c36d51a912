"""Benchmark: what a crash costs a run. A broker that dies on a request with an unknown API key, run with
items in parallel (as ``conformance run`` does) against the same broker that does not die, and one at a time.

``python -m conformance.bench.crash [--target kafka] [--workers N] [--attached] [PATHS]`` starts the
target once behind the harness's proxy, which plays the crash (the target itself must not crash: the mock
aborts on one of the bundled ConsumerGroupHeartbeats, an assertion in librdkafka's ``validate_subscription``): from the first request with an API key the
codec does not know, every request and every response is cut, new connections too, until the target is
brought back (``revive``: what a supervisor's restart command does for an attached broker). Three runs of
every item: one at a time through the crashing proxy (the reference verdicts; first, so that it pays for
what the first run warms); in parallel through a proxy that never crashes (the reference time); in parallel
through the crashing one. It prints the ratio of the two parallel runs
(the goal: at most 1.5), the items whose outcome differs from the one-at-a-time run (the goal: none)
and what the crashing case was told. ``--attached`` runs without a way to bring the target back, as for a
HOST:PORT broker without ``--restart-command``. Ratios measured in one run are the numbers to compare.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from .. import resources
from ..extension import Extensions
from ..protocol.exceptions import SpecError
from ..proxy.interceptor import Call, PassThrough, cut
from ..proxy.server import ProxyServer
from ..runner.parallel import DEFAULT_JOBS, RunAhead, items_of
from ..runner.runner import Runner
from ..suite.loader import load_suites
from ..targets.base import Capability, Target
from ..targets.registry import resolve


class CrashOnUnknownKey(PassThrough):
    """The crash, played by the proxy: after a request with an API key the codec does not know, nothing
    more gets through (every request and every response cut) until :meth:`revive`."""

    def __init__(self, armed: bool = True):
        self.armed = armed
        self.crashed = False
        self.crashes = 0

    def on_request(self, call: Call):
        if self.armed and not self.crashed and not known(call):
            self.crashed = True
            self.crashes += 1
        return cut() if self.crashed else None

    def on_response(self, call: Call, payload: bytes):
        return cut() if self.crashed else None

    def revive(self) -> None:
        self.crashed = False


def known(call: Call) -> bool:
    """Whether the codec knows the request's API key."""
    try:
        call.codec.registry.api(call.api_key)
        return True
    except SpecError:
        return False


class CrashingFront(Target):
    """The target as the runner sees it: the proxy's address, the inner target's topic control (the mock
    creates topics through it), and ``revive`` where the run may bring it back."""

    kind = "bench-crash"

    def __init__(self, inner: Target, server: ProxyServer, crash: CrashOnUnknownKey, revivable: bool):
        super().__init__(f"crashing {inner.spec}")
        self.inner, self.server, self.crash = inner, server, crash
        self.capabilities = frozenset({Capability.REVIVE} if revivable else ())

    @property
    def bootstrap(self) -> str:
        return self.server.bootstrap

    def start(self) -> None:
        """Started by the benchmark."""

    def stop(self) -> None:
        """Stopped by the benchmark."""

    def revive(self) -> None:
        self.server.call(self.crash.revive)

    def fault(self, name: str, **arguments) -> None:
        self.inner.fault(name, **arguments)

    def offers_fault(self, name: str) -> bool:
        return self.inner.offers_fault(name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.bench.crash", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=[str(resources.suites())])
    parser.add_argument("--target", default="kafka", help="the broker behind the crash (default: kafka)")
    parser.add_argument("--workers", type=int, default=DEFAULT_JOBS, help=f"default: {DEFAULT_JOBS}, as conformance run")
    parser.add_argument("--attached", action="store_true",
                        help="no way to bring the target back (a HOST:PORT broker without --restart-command)")
    arguments = parser.parse_args(argv)

    extensions = Extensions.for_run()
    parts = extensions.components()
    suites, errors = load_suites(arguments.paths, components=parts)
    for error in errors:
        print(error)
    cases = [case for suite in suites for case in suite.cases if not case.draft and not case.long]
    inner = resolve(arguments.target, extensions.target_kinds())
    inner.start()
    try:
        measure(inner, cases, parts, arguments.workers, revivable=not arguments.attached)
    finally:
        inner.stop()
    return 0


def measure(inner: Target, cases, parts, workers: int, *, revivable: bool) -> None:
    runs = {}
    # One at a time first: it warms what every run needs once (the codec's compiled versions, the broker's JIT),
    # which would otherwise count against whichever parallel run came first.
    for number, (label, count, armed) in enumerate([("crash, one at a time", 1, True),
                                                    ("no crash, parallel", workers, False),
                                                    ("crash, parallel", workers, True)]):
        crash = CrashOnUnknownKey(armed)
        server = ProxyServer(inner.bootstrap, parts.codec, interceptors=[crash]).start()
        target = CrashingFront(inner, server, crash, revivable)
        runner = Runner(target, run_id=f"crash{number}", components=parts)  # names of its own per run
        # as the plugin orders them: the hazardous items after every other one
        items = sorted(items_of(runner, cases), key=lambda item: item[0].hazardous)
        begin = time.monotonic()
        try:
            if count > 1:
                ahead = RunAhead(runner, items, count)
                try:
                    results = [ahead.result(case, version) for case, version in items]
                finally:
                    ahead.close()
            else:
                results = [runner.run(case, version) for case, version in items]
            runs[label] = (time.monotonic() - begin, results, crash.crashes)
        finally:
            runner.close(keep_topics=True)
            server.stop()
    (_, serial, _), (calm, _, _), (crashed, parallel, _) = runs.values()
    print(f"{inner.spec} behind a proxy that crashes on an unknown API key, {workers} at a time, "
          f"{'revived by the harness' if revivable else 'not brought back (attached)'}:")
    for label, (wall, results, count) in runs.items():
        print(f"  {label:>22}: {wall:7.1f} s for {len(results)} items, {count} crashes  "
              f"{dict(Counter(result.outcome.value for result in results))}")
    print(f"  crash / no crash, in parallel: {crashed / calm:.2f}x (goal: at most 1.5x)")
    differing = [f"{a.suite_id}::{a.case_id} v{a.version}: {a.outcome.value} one at a time, {b.outcome.value} in parallel"
                 for a, b in zip(serial, parallel) if a.outcome is not b.outcome]
    print(f"  items whose outcome differs from the one-at-a-time run: {len(differing)}")
    for line in differing[:10]:
        print(f"    {line}")
    for result in parallel:
        if result.message.startswith("the target stopped answering"):
            print(f"  {result.suite_id}::{result.case_id}: {result.outcome.value}: {result.message.splitlines()[0][:300]}")


if __name__ == "__main__":
    raise SystemExit(main())
