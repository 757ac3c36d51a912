"""Run many case × version items against one target concurrently.

Every item has its own connections and uniquely named topics, transactional ids and groups, so
items do not see each other; cases marked ``serial`` (broker restarts, expiry waits that count on
quiet housekeeping) run alone after the others.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait

from ..suite.model import Case, CaseResult
from .runner import Runner

# An item mostly waits on the broker (a round trip, a timer), so more items than cores run at once.
DEFAULT_JOBS = min(16, 4 * (os.cpu_count() or 1))


def items_of(runner: Runner, cases: list[Case]) -> list[tuple[Case, int | None]]:
    return [(case, version) for case in cases for version in runner.case_versions(case)]


def run_items(runner: Runner, items: list[tuple[Case, int | None]], workers: int = 4) -> list[CaseResult]:
    """Results in the order of ``items``; ``workers=1`` runs them one after another."""
    for case, _ in items:  # learn the advertised versions once, before threads share the probe
        if case.api is not None:
            runner.advertised(case.api)
            break
    concurrent = [(index, item) for index, item in enumerate(items) if not item[0].serial]
    alone = [(index, item) for index, item in enumerate(items) if item[0].serial]
    results: list[CaseResult | None] = [None] * len(items)
    if workers > 1:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="case") as pool:
            futures = {index: pool.submit(runner.run, *item) for index, item in concurrent}
            for index, future in futures.items():
                results[index] = future.result()
    else:
        alone = concurrent + alone
    for index, item in alone:
        results[index] = runner.run(*item)
    return results  # type: ignore[return-value]


class RunAhead:
    """The items of one target, run ``workers`` at a time ahead of the order they are reported in.

    pytest reports items one after another; this runs the independent ones concurrently from the first
    call on, so each item's report waits only for its own result, and a run takes about as long as its
    longest items rather than the sum of its waits. A ``serial`` item waits until every concurrent item
    has finished, then runs alone, as in a serial run. Items never asked for (the run stopped) are
    cancelled by :meth:`close`.
    """

    def __init__(self, runner: Runner, items: list[tuple[Case, int | None]], workers: int):
        self.runner = runner
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="case")
        self._futures: dict[tuple[int, int | None], Future] = {}
        self._lock = threading.Lock()
        api = next((case.api for case, _ in items if case.api is not None), None)
        if api is not None:  # the version probe, before threads share it
            try:
                runner.advertised(api)
            except Exception:  # noqa: BLE001 - each item meets the same problem and reports it, as when serial
                pass
        for case, version in items:
            if not case.serial:
                self._futures[(id(case), version)] = self._pool.submit(runner.run, case, version)

    def result(self, case: Case, version: int | None) -> CaseResult:
        future = self._futures.get((id(case), version))
        if future is not None:
            return future.result()
        with self._lock:  # serial items one at a time, after everything concurrent
            wait(list(self._futures.values()))
            return self.runner.run(case, version)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
