"""``conformance semantic``: the exactly-once tier on one or more targets, results in the suites' JSONL.

Each target is started (or attached to), the real clients run under the faults it can take for
``--duration`` seconds, the history is drained and judged, and one line per check is appended to the
results file; the history itself is kept beside it (``--histories``) so every anomaly can be read in
full. Exit code: 0 when every check passed on every target, 1 otherwise, 2 for a usage error.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ..defaults import DEFAULT_RESULTS, DEFAULT_TARGET, SEMANTIC_HISTORIES
from ..results.record import Outcome
from .run_options import add_output_arguments, print_written_outputs


def register(commands) -> None:
    """Add ``conformance semantic`` (the exactly-once tier) and its options to ``commands``."""
    semantic = commands.add_parser(
        "semantic", help="exactly-once checked end to end: real transactional clients under faults, histories judged")
    semantic.add_argument("--target", action="append", metavar="SPEC",
                          help=f"target spec, repeatable (default: {DEFAULT_TARGET})")
    semantic.add_argument("--duration", type=float, default=120.0, metavar="SECONDS",
                          help="how long the clients run (default: 120; a soak is one flag away)")
    semantic.add_argument("--no-faults", action="store_true", help="run the clients without injecting faults")
    semantic.add_argument("--fault-interval", type=float, default=8.0, metavar="SECONDS",
                          help="calm time between two faults (default: 8)")
    semantic.add_argument("--producers", type=int, default=2, help="transactional producers (default: 2)")
    semantic.add_argument("--processors", type=int, default=1,
                          help="consume-transform-produce instances in one group (default: 1)")
    semantic.add_argument("--start-epoch", type=int, metavar="EPOCH",
                          help="fast-forward every transactional id to this producer epoch first, so the run crosses "
                               "the end of the epoch space (Kafka rotates the producer id at 32766)")
    semantic.add_argument("--seed", type=int, help="seed of the clients' choices (default: random, printed)")
    semantic.add_argument("--client-config", metavar="FILE",
                          help="client properties for HOST:PORT targets (librdkafka's names: the clients are confluent-kafka)")
    semantic.add_argument("--node-control", metavar="FILE",
                          help="with a HOST:PORT cluster: the commands that stop, start and move leadership on its "
                               "nodes (see docs/how-to/certify.md); the faults then act on its nodes")
    semantic.add_argument("--group-protocol", choices=["classic", "consumer"], default="classic",
                          help="the consume-transform-produce group: classic (JoinGroup) or consumer (a KIP-848 "
                               "consumer group, group.protocol=consumer); its results form the suite "
                               "semantic.exactly-once.consumer-group (default: classic)")
    semantic.add_argument("--results", default=DEFAULT_RESULTS, metavar="FILE", help="JSONL results file (appended)")
    semantic.add_argument("--histories", default=SEMANTIC_HISTORIES, metavar="DIR",
                          help=f"where each run's history is written (default: {SEMANTIC_HISTORIES})")
    semantic.add_argument("--run-id", metavar="ID", help="id stamped on every result (default: a new one)")
    add_output_arguments(semantic)
    semantic.set_defaults(handler=command_semantic)


def command_semantic(arguments) -> int:
    """Run the exactly-once workload on each target, judge its history and append one result per check; the exit
    status."""
    from ..semantic.eos_run import Settings
    from ..session import RunSession

    session = RunSession(arguments.results, run_id=arguments.run_id, options=vars(arguments))
    specs = arguments.target or [DEFAULT_TARGET]
    try:
        pool = session.targets(specs)
    except ValueError as error:
        print(f"semantic: {error}", file=sys.stderr)
        return 2
    client_config = {}
    if arguments.client_config:  # librdkafka's property names: the clients are confluent-kafka's
        from ..targets.kafka.config import read_properties

        client_config = read_properties(Path(arguments.client_config))
        for target in pool.configurable():
            target.configure(client_config=client_config)
    if arguments.node_control:  # checked before any client starts: one line naming the file and the field
        from ..targets.node_control import NodeControlError, load

        try:
            control = load(arguments.node_control)
        except NodeControlError as error:
            print(f"semantic: {error}", file=sys.stderr)
            return 2
        for target in pool.configurable():
            target.configure(node_control=control)
    settings = Settings(duration_s=arguments.duration, faults=not arguments.no_faults,
                        fault_interval_s=arguments.fault_interval, producers=arguments.producers,
                        processors=arguments.processors, seed=arguments.seed, client_config=client_config,
                        start_epoch=arguments.start_epoch)
    run_id = session.run_id
    status = 0
    settings.group_protocol = arguments.group_protocol
    try:
        for spec in specs:
            for result in _run_target(pool, spec, settings, run_id, Path(arguments.histories)):
                # every check's line goes to the run's sinks (the results file first) and its hook
                session.record(result, nodeid=f"semantic::{result.case_id}[{spec}]")
                status = status or int(result.outcome is not Outcome.PASSED)
    finally:
        for problem in pool.stop_all():
            print(problem, file=sys.stderr)
        session.finish()
    print(f"results: {arguments.results} (run {run_id})")
    print_written_outputs(arguments)
    return status


def _run_target(pool, spec: str, settings, run_id: str, histories: Path):
    from ..report.console.tables import print_table
    from ..semantic.eos_run import SemanticRun, results, run_on
    from ..semantic.history import History

    try:
        run = run_on(pool.acquire(spec), settings)
    except Exception as error:  # noqa: BLE001 - a target that cannot start: every check says why
        run = SemanticRun(spec, None, History(), problem=(Outcome.ERROR, f"{type(error).__name__}: {error}"),
                          group_protocol=settings.group_protocol)
    history_file = histories / f"{run_id}-{re.sub(r'[^A-Za-z0-9.]+', '_', spec)}.jsonl"
    run.history.dump(history_file)
    history_file.with_suffix(".clients.log").write_text("\n".join(run.client_log) + "\n")
    made = results(run, run_id=run_id, history_file=str(history_file))
    stats = run.stats
    title = (f"exactly-once on {spec}: {stats.get('transactions', {})}, {stats.get('transactions_per_s', 0)} tx/s, "
             f"faults {stats.get('faults', {}).get('applied', 0)} applied, --seed {stats.get('seed')}"
             if "transactions" in stats else f"exactly-once on {spec}")
    print_table(["check", "outcome", "detail"], [[result.case_id, result.outcome.value, result.message[:160]]
                                                  for result in made], title=title)
    print(f"history: {history_file} (librdkafka's log: {history_file.with_suffix('.clients.log')})")
    return made
