"""Run many case × version items against one target concurrently.

Every item has its own connections and uniquely named topics, transactional ids and groups, so
items do not see each other; cases marked ``serial`` (broker restarts, expiry waits that count on
quiet housekeeping) run alone after the others.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from .model import Case, CaseResult
from .runner import Runner


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
