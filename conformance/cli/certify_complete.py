"""``conformance certify --target kafka[:VERSION]``: what each level needs, provisioned beside the main target.

One node of Apache Kafka cannot take every case: the failover cases need three nodes (``suites/cluster``), the
wire faults the fault proxy in front of the broker (``suites/faults``), the *Exactly-once under faults* level the
exactly-once tier's real clients (``conformance semantic``, in a classic and in a KIP-848 consumer group), and the
cases at the end of the producer epoch space ``--long``. Certify starts each of those as a companion run, in a
process of its own, while the main run goes on; their results are graded as the main target's (each record keeps
``ran_on``, the spec it ran on, and the page lists the companions), so one command reaches every level.

Targets other than a provisioned single Kafka node get no companion: the levels that need one say why (see
:data:`NEEDS`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..results.record import ResultRecord
from ..results.store import read_records
from ..resources import suites as bundled_suites


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

    def facts(self) -> dict:
        return {"name": self.name, "why": self.why, "spec": self.spec, "suites": list(self.suites),
                "items": len(self.records), "seconds": round(self.seconds, 1), "problem": self.problem}


STOPPING = threading.Event()  # set when certify ends early: the companions not started yet are not
SEMANTIC_SECONDS = 30.0  # the exactly-once tier's clients per group protocol: several faults at its 8 s interval

# What a level's suites need that one node of a provisioned target does not give, and what to say when a
# target cannot have it (HOST:PORT: the harness has no hand on the cluster's nodes unless --node-control gives one).
NEEDS = {"cluster.*": "needs a way to stop a node (--node-control FILE: the commands that stop and start the "
                      "nodes of a HOST:PORT cluster and move leadership; kafka,nodes=3 is a cluster the harness "
                      "provisions)",
         "faults.*": "needs the fault proxy in front of the target (proxy+SPEC)",
         "semantic.*": "needs the exactly-once tier's real clients (conformance semantic --target SPEC, with "
                       "--node-control FILE on HOST:PORT for its faults; then certify --results with both files)"}
# With --node-control the cluster's items ran: those still without a verdict say why themselves (a command the file
# lacks, too few nodes, a command that failed).
GIVEN = {"cluster.*": "ran with --node-control; the items without a verdict say why (a command the file lacks, "
                      "fewer nodes than a case needs, a command that failed)"}


def is_single_kafka(spec: str) -> bool:
    """``kafka`` or ``kafka:VERSION`` with feature options, one node: the specs certify completes."""
    base = spec.split(",", 1)[0]
    return (base == "kafka" or base.startswith("kafka:")) and "nodes=" not in spec and "+" not in spec


def plan(spec: str, output: Path, run_id: str, *, semantic_seconds: float) -> list[Companion]:
    """The companions of a single Kafka node ``spec``, not started yet."""
    python = [sys.executable, "-m", "conformance.cli"]
    suites = bundled_suites()
    base, _, options = spec.partition(",")
    cluster = f"{base},nodes=3" + (f",{options}" if options else "")
    made = []
    for name, why, companion_spec, folder in (
            ("cluster", "the failover cases need three nodes the harness can stop, start and move leadership on",
             cluster, "cluster"),
            ("proxy", "the wire faults need the fault proxy in front of the broker", f"proxy+{spec}", "faults")):
        results = output / f"results-{run_id}-{name}.jsonl"
        made.append(Companion(name, why, companion_spec, (f"{folder}.*",),
                              [*python, "run", "--target", companion_spec, "--long", "--results", str(results),
                               "--alluredir", str(output / f"allure-{run_id}-{name}"), str(suites / folder)],
                              results))
    for protocol, suite in (("classic", "semantic.exactly-once"), ("consumer", "semantic.exactly-once.consumer-group")):
        results = output / f"results-{run_id}-semantic-{protocol}.jsonl"
        made.append(Companion(
            f"exactly-once ({protocol} group)", "the exactly-once tier: real transactional clients under faults",
            spec, (suite,), [*python, "semantic", "--target", spec, "--duration", str(semantic_seconds),
                             "--group-protocol", protocol, "--results", str(results), "--run-id", run_id,
                             "--histories", str(output / f"semantic-{run_id}-{protocol}")], results))
    return made


def start(companions: list[Companion]) -> threading.Thread:
    """Run the companions one after another in a thread, each in a process of its own (output in a log beside
    its results), while the main run goes on. One at a time: on a small machine several brokers starting at
    once miss their start deadline, and a run that cannot start gives no verdict at all."""
    def run_all():
        for companion in companions:
            if STOPPING.is_set():
                companion.problem = "not started: certify was interrupted"
                continue
            companion.log = companion.results.with_suffix(".log")
            companion.started = time.monotonic()
            print(f"certify: starting {companion.name} on {companion.spec} ({companion.why})", flush=True)
            with open(companion.log, "w", encoding="utf-8") as log:
                companion.process = subprocess.Popen(companion.command, stdout=log, stderr=subprocess.STDOUT,
                                                     stdin=subprocess.DEVNULL, cwd=os.getcwd())
            companion.process.wait()
            companion.seconds = time.monotonic() - companion.started

    STOPPING.clear()
    thread = threading.Thread(target=run_all, name="certify-companions", daemon=True)
    thread.start()
    return thread


def finish(companions: list[Companion], main_spec: str, thread: threading.Thread | None) -> list[ResultRecord]:
    """Wait for every companion; their records, relabelled as the main target's (``ran_on`` keeps the spec)."""
    if thread is not None:
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


def needs_of(grade, companions: list[Companion], *, node_control: bool = False) -> list[str]:
    """What a level lacks, in words a vendor can act on: the suites of :data:`NEEDS` among its items without a
    verdict or its suites not run, and each companion that should have given them but did not. ``node_control``:
    the run had the nodes' commands (--node-control), so the cluster's suites say :data:`GIVEN` instead."""
    import fnmatch

    suites = {str(record.suite) for record in grade.incomplete} | set(grade.not_run)
    if grade.counted == 0:  # nothing of the level ran: its own suite patterns say what it needs
        suites |= {pattern for pattern in grade.level.suites if pattern != "*"}
    found = []
    for pattern, need in NEEDS.items():
        if not any(fnmatch.fnmatchcase(suite, pattern) for suite in suites):
            continue
        gave = [companion for companion in companions if companion.records and not companion.problem
                and any(fnmatch.fnmatchcase(provided, pattern) for provided in companion.suites)]
        if gave:  # a companion ran them: their items without a verdict say why themselves
            continue
        if node_control and pattern in GIVEN:
            found.append(f"{pattern[:-2]} suites: {GIVEN[pattern]}")
            continue
        failed = [companion for companion in companions if companion.problem
                  and any(fnmatch.fnmatchcase(provided, pattern) for provided in companion.suites)]
        found.append(f"{pattern[:-2]} suites: {need}" + "".join(
            f"; {companion.name} on {companion.spec} gave none: {companion.problem}" for companion in failed))
    return found
