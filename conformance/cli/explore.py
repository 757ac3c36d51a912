"""``conformance explore``: generated histories of transaction-protocol requests, every answer judged by a model
of the KIPs; each departure comes back shrunk, as a case ``conformance run`` reproduces.

The target is started (or attached to), histories are generated and sent until the budget is spent (or a
departure is found, unless ``--keep-going``), progress goes to the console after every round, each departure's
case is written to ``--cases`` and its history to the results file. Exit code: 0 when no answer departed, 1 when
one did, 2 for a usage error or a target that cannot be explored.
"""

from __future__ import annotations

import secrets
import sys
from pathlib import Path

from ..defaults import DEFAULT_RESULTS, DEFAULT_TARGET, EXPLORED
from ..explore.reference import HELD_BACK, REFERENCE
from .run_options import add_output_arguments, print_written_outputs


def register(commands) -> None:
    """Add ``conformance explore`` to ``commands``."""
    explore = commands.add_parser(
        "explore", help="generated request histories judged against a model of the KIPs; departures become cases")
    explore.add_argument("--target", default=DEFAULT_TARGET, metavar="SPEC",
                         help=f"target spec (default: {DEFAULT_TARGET})")
    explore.add_argument("--budget", default="60s", metavar="BUDGET",
                         help="how long to explore: a time (60s, 5m) or a number of histories (default: 60s)")
    explore.add_argument("--seed", type=int, help="seed of the generated histories (default: random, printed)")
    explore.add_argument("--workers", type=int, default=1, metavar="N",
                         help="explore N seeds (--seed, --seed + 1, ...) at once, one process each, against the one "
                              "target; departures merged by shrunk case (default: 1)")
    explore.add_argument("--spark", nargs="?", const="local[*]", metavar="MASTER",
                         help="run the N seeds of --workers as Spark tasks on MASTER instead (default: local[*]; "
                              "spark://HOST:PORT for a cluster); needs the analysis extra")
    explore.add_argument("--keep-going", action="store_true",
                         help="after a departure, keep exploring for departures of other rules until the budget ends")
    explore.add_argument("--cases", default=EXPLORED, metavar="DIR",
                         help=f"where each departure's case is written (default: {EXPLORED})")
    explore.add_argument("--reference", metavar="SPEC",
                         help=f"each departure's written case runs here before it is kept; one that fails here, or "
                              f"on a Kafka release where the known-bugs ledger names no bug for it, is held back "
                              f"(moved to DIR/{HELD_BACK}/, never reported failed); 'none' holds every departure back "
                              f"(default: {REFERENCE}, behind the proxy and with the nodes the target has)")
    explore.add_argument("--results", default=DEFAULT_RESULTS, metavar="FILE", help="JSONL results file (appended)")
    explore.add_argument("--run-id", metavar="ID", help="id stamped on every result (default: a new one)")
    add_output_arguments(explore)
    explore.set_defaults(handler=command_explore)


def command_explore(arguments) -> int:
    """Explore one target; the exit code says whether an answer departed."""
    from ..explore.reference import check, reference_for
    from ..explore.exploration import Budget, answers_line, explore, printer, progress_line, reached_line, results
    from ..session import RunSession

    session = RunSession(arguments.results, run_id=arguments.run_id, transcripts="none", options=vars(arguments))
    try:
        budget = Budget.parse(arguments.budget)
        pool = session.targets([arguments.target])
    except ValueError as error:
        print(f"explore: {error}", file=sys.stderr)
        return 2
    if arguments.workers < 1:
        print("explore: --workers must be at least 1", file=sys.stderr)
        return 2
    seed = arguments.seed if arguments.seed is not None else secrets.randbits(24)
    run_id = session.run_id
    print(f"explore {arguments.target}: budget {arguments.budget}, --seed {seed}", flush=True)
    try:
        target = pool.acquire(arguments.target)
        if arguments.workers > 1 or arguments.spark:
            exploration = _fanned_out(arguments, target.bootstrap, budget, seed)
        else:
            exploration = explore(target.bootstrap, target=arguments.target, budget=budget, seed=seed,
                                  cases_dir=Path(arguments.cases), security=target.security,
                                  keep_going=arguments.keep_going, progress=printer(), run=f"explore-{run_id}",
                                  create_topic=lambda name, partitions: target.fault(
                                      "topic_create", topic=name, partitions=partitions, replication=1),
                                  inject=target.fault if arguments.target.startswith("proxy") else None)
        version = target.version
    except Exception as error:  # noqa: BLE001 - a target that cannot be explored: said in one line
        print(f"explore: {arguments.target}: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    finally:
        for problem in pool.stop_all():
            print(problem, file=sys.stderr)
    reference = arguments.reference or reference_for(arguments.target)
    if reference != "none":  # after the explored target stopped: one broker of ours at a time
        check(exploration, Path(arguments.cases), release=version, reference=reference,
              say=lambda line: print(line, flush=True))
    made = results(exploration, run_id=run_id, target_version=version, histories=Path(arguments.cases) / "histories")
    for result in made:  # to the run's sinks (the results file first) and its hook
        session.record(result, nodeid=f"explore::{result.case_id}[{arguments.target}]")
    session.finish()
    print(progress_line(exploration))
    print(answers_line(exploration))
    print(reached_line(exploration))
    for found in exploration.found:
        if found.held_back:
            why = found.judgement.reason if found.judgement else "not checked on the reference"
            print(f"HELD BACK, to judge by hand ({why}): {found.rule_id}: {found.message}")
        else:
            known = f" [{found.judgement.known_bug}]" if found.judgement and found.judgement.known_bug else ""
            print(f"DEPARTURE {found.rule_id}{known}: {found.message}")
        for number, step in enumerate(found.history, 1):
            print(f"  {number}. {step.line()}")
        if found.case_path is not None:
            print(f"  case: {found.case_path} (python -m conformance run --target {arguments.target} {found.case_path})")
    print(f"results: {arguments.results} (run {run_id})")
    print_written_outputs(arguments)
    return 1 if any(not found.held_back for found in exploration.found) else 0


def _fanned_out(arguments, bootstrap: str, budget, seed: int):
    """The seeds of ``--workers`` explored in worker processes or Spark tasks, merged, their cases written."""
    from ..explore.fanout import on_spark, seeds_from, with_workers
    from ..explore.exploration import write_found

    seeds = seeds_from(seed, max(arguments.workers, 1))
    where = f"Spark tasks on {arguments.spark}" if arguments.spark else f"{len(seeds)} worker processes"
    print(f"explore {arguments.target}: seeds {seeds[0]}-{seeds[-1]} as {where}", flush=True)
    if arguments.spark:
        exploration = on_spark(bootstrap, target=arguments.target, budget=budget, seeds=seeds,
                               master=arguments.spark, keep_going=arguments.keep_going)
    else:
        exploration = with_workers(bootstrap, target=arguments.target, budget=budget, seeds=seeds,
                                   workers=len(seeds), keep_going=arguments.keep_going)
    write_found(exploration, Path(arguments.cases))
    return exploration
