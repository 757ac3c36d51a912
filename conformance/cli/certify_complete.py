"""``conformance certify --target SPEC``: what each level needs, run beside the main target.

One node of Apache Kafka cannot take every case: the failover cases need three nodes (``suites/cluster``), the
wire faults the fault proxy in front of the broker (``suites/faults``), the *Exactly-once under faults* level the
exactly-once tier's real clients (``conformance semantic``, in a classic and in a KIP-848 consumer group), and the
cases at the end of the producer epoch space ``--long``. Certify starts each of those as a companion run, in a
process of its own, while the main run goes on; their results are graded as the main target's (each record keeps
``ran_on``, the spec it ran on, and the page lists the companions), so one command reaches every level.

What a target gets depends on what its kind allows, never on whether the harness started it (:func:`allowed`): the
three-node cluster only beside a single Kafka node (the harness can start three of them); the wire faults through
the harness's fault proxy in front of any target not behind one already (``proxy+tansu``, ``proxy+rdkafka-mock``,
``proxy+HOST:PORT``); the exactly-once tier against the target itself where it takes faults of its own (a Kafka
node's restarts, librdkafka's mock's errors, an attached cluster's ``--node-control`` commands), else through the
fault proxy, whose faults it then takes (Tansu, provisioned or attached; HOST:PORT without ``--node-control``). An
attached broker's failover cases run in the main run when ``--node-control`` gives the commands that stop and start
its nodes. The levels that still lack something say why (see :data:`NEEDS`).

The companions run in two lanes, each one companion at a time: the three-node cluster's failover cases in one, and
in the other the fault proxy, the exactly-once tier and the failover cases at the end of the epoch space, on a
cluster of their own (their fast-forwards to the last epoch were a third of the first lane's time). Two lanes, not
one per companion: on a small machine many brokers starting at once miss their start deadline.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..results.record import ResultRecord
from ..results.store import read_records
from ..resources import suites as bundled_suites
from ..targets import hostport
from ..targets.base import Capability
from ..report.certify.needs import GIVEN, NEEDS, needs_of  # noqa: F401 - certify's names for them


@dataclass
class Companion:
    """One run beside the main target: what it provides, on which spec, and how it went."""
    name: str
    why: str
    spec: str
    suites: tuple[str, ...]  # suite id patterns whose items it provides (they replace the main run's)
    command: list[str]
    results: Path
    process: subprocess.Popen | None = None
    started: float = 0.0
    seconds: float = 0.0
    problem: str = ""
    log: Path | None = None
    records: list[ResultRecord] = field(default_factory=list)
    lane: int = 0  # companions of one lane run one after another; the lanes run side by side
    offset: float = 0.0  # when it started, in seconds after the companions did (with the main run)

    def facts(self) -> dict:
        return {"name": self.name, "why": self.why, "spec": self.spec, "suites": list(self.suites),
                "items": len(self.records), "seconds": round(self.seconds, 1), "problem": self.problem,
                "lane": self.lane, "started_s": round(self.offset, 1)}


STOPPING = threading.Event()  # set when certify ends early: the companions not started yet are not
SEMANTIC_SECONDS = 30.0  # the exactly-once tier's clients per group protocol: several faults at its 8 s interval

def is_single_kafka(spec: str) -> bool:
    """``kafka`` or ``kafka:VERSION`` with feature options, one node: the specs certify completes."""
    base = spec.split(",", 1)[0]
    return (base == "kafka" or base.startswith("kafka:")) and "nodes=" not in spec and "+" not in spec


def is_attached(spec: str, kinds=()) -> bool:
    """A broker someone else runs: ``HOST:PORT``, named or not (``acme:1.0@127.0.0.1:9092``), that no other of the
    run's target ``kinds`` claims (``rdkafka-mock:3`` looks like host:port too)."""
    return hostport.parse(spec) is not None and not any(kind.matches(spec) for kind in kinds if not kind.fallback)


EPOCH_SPACE_SUITE = "epoch-rotation-failover"  # the cluster suite whose cases fast-forward to the last epoch
# Capabilities with which a target takes faults of its own in the exactly-once tier (semantic/nemesis.py): nodes it
# stops, a broker it restarts, librdkafka's mock cluster's errors and downed brokers.
OWN_FAULTS = frozenset({Capability.NODES, Capability.RESTART, Capability.FAULTS})


@dataclass(frozen=True)
class Allowed:
    """The companions a target's kind allows: the same whether the harness starts the target or attaches to it."""
    cluster: bool = False  # the failover cases on three nodes of the same Kafka (kafka,nodes=3)
    proxy: bool = False  # the wire faults through the fault proxy in front of it (proxy+SPEC)
    tier: str | None = None  # the spec the exactly-once tier runs on: the target itself, or proxy+SPEC


def allowed(spec: str, kinds=None, *, node_control: str | None = None) -> Allowed:
    """What ``spec``'s kind allows beside it. The three-node cluster: a single node of Apache Kafka, which the
    harness can start three of. The fault proxy: any target not behind one already. The exactly-once tier: any
    target, on itself where it takes faults of its own (:data:`OWN_FAULTS`, or an attached cluster's
    ``--node-control`` commands), else through the fault proxy, whose faults it then takes. ``kinds``: the run's
    target kinds (default: the installed plugins')."""
    from ..targets.registry import resolve

    if kinds is None:
        from ..extension import Extensions

        kinds = Extensions.for_run().target_kinds()
    try:
        capabilities = resolve(spec, kinds).capabilities
    except ValueError:  # no kind takes the spec: the main run says so
        return Allowed()
    proxy = Capability.PROXY not in capabilities
    own_faults = bool(OWN_FAULTS & capabilities) or (is_attached(spec, kinds) and bool(node_control))
    return Allowed(cluster=is_single_kafka(spec), proxy=proxy,
                   tier=spec if own_faults or not proxy else f"proxy+{spec}")


def plan(spec: str, output: Path, run_id: str, *, semantic_seconds: float, paths: list[str] | None = None,
         node_control: str | None = None, client_config: str | None = None, kinds=None,
         restart_command: str | None = None) -> list[Companion]:
    """The companions of ``spec``, not started yet: what its kind allows (:func:`allowed`), provisioned or attached.
    ``paths`` (the suite paths certify was given): only the companions of the cluster and fault suites among them,
    and no exactly-once tier. ``kinds``: the run's target kinds. ``restart_command`` (an attached target's
    ``--restart-command``) goes to the fault proxy's run too, which runs on the same broker."""
    kinds = list(kinds) if kinds else None
    allows = allowed(spec, kinds, node_control=node_control)
    python = [sys.executable, "-m", "conformance.cli"]
    chosen = [Path(path).resolve() for path in paths or ()]

    def suite_files(folder: str, keep=lambda path: True) -> list[Path]:
        found = sorted(path for path in (bundled_suites() / folder).glob("*.yaml") if keep(path))
        return [path for path in found if not chosen or any(path.resolve() == given or given in path.resolve().parents
                                                            for given in chosen)]

    def run(name: str, why: str, companion_spec: str, files: list[Path], lane: int,
            extra: tuple[str, ...] = ()) -> Companion | None:
        if not files:
            return None
        slug = re.sub(r"[^a-z0-9]+", "-", name).strip("-")  # cluster (epoch space): cluster-epoch-space
        results = output / f"results-{run_id}-{slug}.jsonl"
        suites = tuple(f"{path.parent.name}.{path.stem}" for path in files)
        return Companion(name, why, companion_spec, suites,
                         [*python, "run", "--target", companion_spec, "--long", "--transcripts", "all",
                          "--results", str(results),
                          "--alluredir", str(output / f"allure-{run_id}-{slug}"), *extra,
                          *map(str, files)], results, lane=lane)

    configured = ("--client-config", client_config) if client_config else ()
    cluster_why = "the failover cases need three nodes the harness can stop, start and move leadership on"
    cluster = epoch_space = proxy = None
    if allows.cluster:
        base, _, options = spec.partition(",")
        three = f"{base},nodes=3" + (f",{options}" if options else "")
        cluster = run("cluster", cluster_why, three,
                      suite_files("cluster", lambda path: path.stem != EPOCH_SPACE_SUITE), 0)
        epoch_space = run("cluster (epoch space)", f"{cluster_why}; these fast-forward to the last epoch first, on a "
                          "cluster of their own", three, suite_files("cluster", lambda path: path.stem == EPOCH_SPACE_SUITE), 1)
    if allows.proxy:
        restart = ("--restart-command", restart_command) if restart_command else ()
        proxy = run("proxy", "the wire faults need the fault proxy in front of the broker", f"proxy+{spec}",
                    suite_files("faults"), 1, (*configured, *restart))
    tier = [] if paths or allows.tier is None else _tier(spec, allows.tier, output, run_id, python, semantic_seconds,
                                                         node_control, configured)
    return [companion for companion in (cluster, proxy, *tier, epoch_space) if companion is not None]


def _tier(spec: str, target: str, output: Path, run_id: str, python: list[str], seconds: float,
          node_control: str | None, configured: tuple[str, ...]) -> list[Companion]:
    """The exactly-once tier on ``target`` (:func:`allowed`), in a classic and a KIP-848 group: the target's own
    faults (a provisioned node's restarts, an attached cluster's --node-control commands, the mock's errors), or the
    fault proxy's in front of it."""
    extra = list(configured)
    extra += ["--node-control", node_control] if node_control and target == spec else []
    why = "the exactly-once tier: real transactional clients under faults" + (
        "" if target == spec else " (the fault proxy's: the target takes no fault of its own)")
    made = []
    for protocol, suite in (("classic", "semantic.exactly-once"), ("consumer", "semantic.exactly-once.consumer-group")):
        results = output / f"results-{run_id}-semantic-{protocol}.jsonl"
        made.append(Companion(f"exactly-once ({protocol} group)", why, target, (suite,),
                              [*python, "semantic", "--target", target, "--duration", str(seconds),
                               "--group-protocol", protocol, "--results", str(results), "--run-id", run_id,
                               "--histories", str(output / f"semantic-{run_id}-{protocol}"), *extra], results, lane=1))
    return made


def start(companions: list[Companion]) -> list[threading.Thread]:
    """Run the companions while the main run goes on, each in a process of its own (output in a log beside its
    results): a thread per lane, each running its lane's companions one after another (see the module)."""
    began = time.monotonic()

    def run_all(lane: list[Companion]):
        for companion in lane:
            if STOPPING.is_set():
                companion.problem = "not started: certify was interrupted"
                continue
            companion.log = companion.results.with_suffix(".log")
            companion.started = time.monotonic()
            companion.offset = companion.started - began
            print(f"certify: starting {companion.name} on {companion.spec} ({companion.why})", flush=True)
            with open(companion.log, "w", encoding="utf-8") as log:
                companion.process = subprocess.Popen(companion.command, stdout=log, stderr=subprocess.STDOUT,
                                                     stdin=subprocess.DEVNULL, cwd=os.getcwd())
            companion.process.wait()
            companion.seconds = time.monotonic() - companion.started

    STOPPING.clear()
    threads = []
    for lane in sorted({companion.lane for companion in companions}):
        thread = threading.Thread(target=run_all, args=([c for c in companions if c.lane == lane],),
                                  name=f"certify-companions-{lane}", daemon=True)
        thread.start()
        threads.append(thread)
    return threads


def finish(companions: list[Companion], main_spec: str, threads: list[threading.Thread] | None) -> list[ResultRecord]:
    """Wait for every companion; their records, relabelled as the main target's (``ran_on`` keeps the spec)."""
    for thread in threads or ():
        thread.join()
    merged = []
    for companion in companions:
        code = companion.process.returncode if companion.process else None
        companion.records = read_records(companion.results) if companion.results.is_file() else []
        if not companion.records:
            tail = companion.log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:] \
                if companion.log and companion.log.is_file() else []
            companion.problem = f"no results (exit {code}): " + " | ".join(tail)
        for record in companion.records:
            # The line as read keeps every key it had, with the two changed: the bundle holds what was graded.
            merged.append(replace(record, target=main_spec,
                                  as_read={**record.evidence(), "target": main_spec, "ran_on": record.target}))
        print(f"certify: {companion.name} on {companion.spec}: {len(companion.records)} items in "
              f"{companion.seconds:.0f} s{' — ' + companion.problem if companion.problem else ''}")
    return merged


def stop(companions: list[Companion]) -> None:
    """End the companions still running (an interrupted certify), each by its own process id."""
    STOPPING.set()
    for companion in companions:
        if companion.process is not None and companion.process.poll() is None:
            companion.process.terminate()
            try:
                companion.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                companion.process.kill()


def combine(main: list[ResultRecord], companions: list[Companion], extra: list[ResultRecord]) -> list[ResultRecord]:
    """The main run's records, those of the suites a companion provides replaced by the companion's."""
    import fnmatch

    provided = [pattern for companion in companions if companion.records for pattern in companion.suites]
    kept = [record for record in main
            if not any(fnmatch.fnmatchcase(str(record.suite), pattern) for pattern in provided)]
    return kept + extra
