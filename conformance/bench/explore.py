"""Benchmark: exploration's requests judged per second, and the time it takes to find a departure.

``python -m conformance.bench.explore [SPEC ...] [--seeds 1,2,3] [--budget 120s]`` starts each target once
(default: Kafka 3.5.2, which has the hanging-transaction bug KIP-890 fixed in 3.6.0) and explores it once per
seed until the first departure or the budget. For each seed it prints the time to the first departure (and
the rule, and the length of the shrunk history), the requests sent and answers judged per second, and, side
by side, how fast the model judges the same answers alone: the ratio says how much of a request's time is the
model's.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from ..explore.exploration import Budget, explore
from ..extension import Extensions
from ..targets.registry import resolve


def measure(bootstrap: str, spec: str, seeds: list[int], budget: Budget) -> list[dict]:
    """One exploration per seed on the target at ``bootstrap``; a row of measurements each, printed."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-explore-") as cases:
        for seed in seeds:
            found = explore(bootstrap, target=spec, budget=budget, seed=seed, cases_dir=Path(cases))
            collector = found.collector
            first = found.found[0] if found.found else None
            rows.append({"seed": seed, "first_s": collector.first_departure_s, "elapsed_s": found.elapsed_s,
                         "rule": first.rule_id if first else None, "steps": len(first.history) if first else None,
                         "requests_per_s": collector.requests / found.elapsed_s,
                         "judged_per_s": collector.judged / found.elapsed_s,
                         "model_per_s": collector.judged / collector.judging_s if collector.judging_s else 0.0})
            row = rows[-1]
            when = (f"first departure after {row['first_s']:.1f} s ({row['rule']}, shrunk to {row['steps']} requests)"
                    if first else f"no departure in {row['elapsed_s']:.0f} s")
            print(f"  seed {seed}: {when}; {row['requests_per_s']:.0f} requests/s, {row['judged_per_s']:.0f} answers "
                  f"judged/s; the model alone {row['model_per_s']:,.0f}/s "
                  f"({row['model_per_s'] / max(row['judged_per_s'], 1e-9):,.0f}x)")
    firsts = [row["first_s"] for row in rows if row["first_s"] is not None]
    if firsts:
        print(f"  time to first departure: median {statistics.median(firsts):.1f} s over {len(firsts)} of "
              f"{len(rows)} seeds")
    return rows


def main(argv: list[str] | None = None) -> int:
    """The benchmark on each target named."""
    parser = argparse.ArgumentParser(prog="python -m conformance.bench.explore")
    parser.add_argument("specs", nargs="*", default=["kafka:3.5.2"])
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated seeds, one exploration each")
    parser.add_argument("--budget", default="120s", help="each exploration's budget (a time or a number of histories)")
    arguments = parser.parse_args(argv)
    seeds = [int(seed) for seed in arguments.seeds.split(",") if seed.strip()]
    budget = Budget.parse(arguments.budget)
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
            measure(target.bootstrap, spec, seeds, budget)
        finally:
            target.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
