"""One exploration split over several seeds: worker processes on this machine, or tasks on Spark.

Each seed is one exploration (:func:`.exploration.search`) against the same target, in its own process (a Spark
task on an executor, or a local worker); the explorations come back whole and are merged here: counts
added up, departures deduplicated by their shrunk case (the same steps found by two seeds are one departure).
Seeds decide the histories, so with a budget in histories the same seeds give the same departures whichever
way they are spread.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ProcessPoolExecutor
from functools import partial

from .cases import case_for
from .driver import Collector
from .exploration import Budget, Exploration, Found, search


def seeds_from(seed: int, count: int) -> list[int]:
    """``count`` seeds starting at ``seed``: the first is the seed of a single exploration."""
    return [seed + index for index in range(count)]


def _one(seed: int, *, bootstrap: str, target: str, budget: Budget, keep_going: bool) -> Exploration:
    """One seed's exploration, in whatever process runs it (top level: pickled by reference)."""
    found = search(bootstrap, target=target, budget=budget, seed=seed, keep_going=keep_going,
                   run=f"explore-s{seed}-{_salt()}")
    for departure in found.found:
        departure.seed = seed
    return found


def _salt() -> str:
    import secrets

    return secrets.token_hex(3)  # names unique to this process: two workers never share a topic


def with_workers(bootstrap: str, *, target: str, budget: Budget, seeds: list[int], workers: int,
                 keep_going: bool = False) -> Exploration:
    """The seeds explored ``workers`` at a time in processes of this machine, merged."""
    task = partial(_one, bootstrap=bootstrap, target=target, budget=budget, keep_going=keep_going)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return merge(list(pool.map(task, seeds)), target=target, seed=seeds[0])


def on_spark(bootstrap: str, *, target: str, budget: Budget, seeds: list[int], master: str | None = None,
             keep_going: bool = False) -> Exploration:
    """The seeds explored as Spark tasks (one task each) on ``master`` (default local[*]), merged."""
    from ..analysis.spark_session import spark_session

    session = spark_session(master, app_name="conformance-explore")
    task = partial(_one, bootstrap=bootstrap, target=target, budget=budget, keep_going=keep_going)
    explorations = session.sparkContext.parallelize(seeds, len(seeds)).map(task).collect()
    return merge(explorations, target=target, seed=seeds[0])


def case_key(found: Found) -> str:
    """What makes two departures one: the steps of the shrunk case (the history's requests where it has none)."""
    document = case_for(found.history, target="any", seed=None)
    text = repr(document["cases"][0]["steps"]) if document else "\n".join(step.line() for step in found.history)
    return f"{found.rule_id}:{hashlib.sha1(text.encode()).hexdigest()[:12]}"


def merge(explorations: list[Exploration], *, target: str, seed: int) -> Exploration:
    """One exploration of them all: counts added up, departures once per shrunk case, in seed order."""
    collector = Collector()
    merged = Exploration(target, seed, collector)
    seen: set[str] = set()
    for exploration in explorations:
        other = exploration.collector
        collector.examples += other.examples
        collector.requests += other.requests
        collector.inconclusive += other.inconclusive
        collector.judged += other.judged
        collector.judging_s += other.judging_s
        collector.answers.update(other.answers)
        collector.reached.update(other.reached)
        merged.elapsed_s = max(merged.elapsed_s, exploration.elapsed_s)
        if other.first_departure_s is not None:
            collector.first_departure_s = min(collector.first_departure_s or other.first_departure_s,
                                              other.first_departure_s)
        for found in exploration.found:
            key = case_key(found)
            if key not in seen:
                seen.add(key)
                merged.found.append(found)
        merged.problem = merged.problem or exploration.problem
    return merged
