"""One exploration of one target: a budget of time or examples, a seed, progress on the console, and for each
departure its shrunk history written as a case and as a result.

Hypothesis runs the state machine in rounds of a few examples, each round seeded from the exploration's seed, so
an exploration is the same sequence of histories for the same seed and target, and a time budget ends it at a
round's end (the round in flight stops sending when the time is up). A round that finds a departure shrinks it
before the next starts; a rule already found is not searched again unless ``keep_going`` asks for every rule.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, seed as hypothesis_seed, settings
from hypothesis.errors import Flaky, HypothesisException
from hypothesis.stateful import run_state_machine_as_test

from ..suite.model import CaseResult, Outcome, Requirement, StepFailure
from .cases import write_case
from .driver import Collector, DepartureFound, ExploredTarget, machine_for
from .model import table_rows
from .reference import Judgement

EXAMPLES_PER_ROUND = 10
STEPS_PER_EXAMPLE = 30


@dataclass
class Budget:
    """``seconds`` of exploration or ``examples`` histories, whichever is given (both: the first reached)."""

    seconds: float | None = None
    examples: int | None = None

    @classmethod
    def parse(cls, text: str) -> "Budget":
        """``60s``, ``5m`` or ``1h``: a time; a bare number: that many examples."""
        text = text.strip().lower()
        units = {"s": 1, "m": 60, "h": 3600}
        try:
            if text and text[-1] in units:
                seconds = float(text[:-1]) * units[text[-1]]
                if seconds <= 0:
                    raise ValueError
                return cls(seconds=seconds)
            examples = int(text)
            if examples <= 0:
                raise ValueError
            return cls(examples=examples)
        except ValueError:
            raise ValueError(f"budget {text!r}: give a time (60s, 5m, 1h) or a number of examples (200)") from None


@dataclass
class Found:
    """A departure: its rule, its shrunk history, and the case written for it (None: no suite form)."""

    rule_id: str
    message: str
    history: list
    case_path: Path | None
    seed: int | None = None  # the seed of the exploration that found it, where several were merged
    judgement: Judgement | None = None  # kept or held back once its case ran on the reference (None: not yet)

    @property
    def held_back(self) -> bool:
        """Not presented as a finding: not checked on the reference, or held back by the check."""
        return self.judgement is None or not self.judgement.kept


@dataclass
class Exploration:
    """One exploration's counts, duration and departures."""
    target: str
    seed: int
    collector: Collector
    elapsed_s: float = 0.0
    found: list[Found] = field(default_factory=list)
    problem: str | None = None

    @property
    def requests_per_s(self) -> float:
        """Requests sent per second of the exploration."""
        return self.collector.requests / self.elapsed_s if self.elapsed_s else 0.0


def explore(bootstrap: str, *, target: str, budget: Budget, seed: int, cases_dir: Path, security=None,
            keep_going: bool = False, progress=None, run: str | None = None, create_topic=None,
            inject=None) -> Exploration:
    """Explore the target at ``bootstrap``; departures' cases go to ``cases_dir``. ``progress(exploration)`` is
    called as every history begins, shrinking included, and after every round (:func:`printer` throttles it)."""
    result = search(bootstrap, target=target, budget=budget, seed=seed, security=security, keep_going=keep_going,
                    progress=progress, run=run, create_topic=create_topic, inject=inject)
    write_found(result, cases_dir)
    return result


def search(bootstrap: str, *, target: str, budget: Budget, seed: int, security=None, keep_going: bool = False,
           progress=None, run: str | None = None, create_topic=None, inject=None) -> Exploration:
    """The exploration itself: departures found (``found``, their cases not written yet)."""
    began = time.monotonic()
    deadline = began + budget.seconds if budget.seconds else None
    collector = Collector()
    result = Exploration(target, seed, collector)
    driver = ExploredTarget(bootstrap, security=security, run=run or f"explore-{seed}-{int(time.time())}",
                    create_topic=create_topic, inject=inject)
    machine = machine_for(driver, collector, deadline=deadline)
    if progress is not None:
        def tick() -> None:
            result.elapsed_s = time.monotonic() - began
            progress(result)
        collector.on_example = tick
    rounds = 0
    try:
        while True:
            if deadline is not None and time.monotonic() >= deadline:
                break
            if budget.examples is not None and collector.examples >= budget.examples:
                break
            known = collector.settled = set(collector.found)
            examples = EXAMPLES_PER_ROUND if budget.examples is None else min(
                EXAMPLES_PER_ROUND, budget.examples - collector.examples)
            _round(machine, seed * 100_003 + rounds, examples)
            rounds += 1
            result.elapsed_s = time.monotonic() - began
            if progress is not None:
                progress(result)
            if set(collector.found) - known and not keep_going:
                break
    finally:
        driver.close()
    collector.settled = set(collector.found)  # shrinking is over: the last progress line says so
    result.elapsed_s = time.monotonic() - began
    result.found = [Found(rule_id, departure.message, history, None)
                    for rule_id, (history, departure) in collector.found.items()]
    return result


def write_found(exploration: Exploration, cases_dir: Path) -> None:
    """Write each departure's case into ``cases_dir`` (``case_path`` stays None where it has no suite form)."""
    for found in exploration.found:
        found.case_path = write_case(found.history, cases_dir, target=exploration.target, seed=found.seed
                                     if found.seed is not None else exploration.seed)


def _round(machine, round_seed: int, examples: int) -> None:
    """``examples`` histories from ``round_seed``; a departure found is shrunk before this returns."""
    options = settings(max_examples=examples, stateful_step_count=STEPS_PER_EXAMPLE, deadline=None, database=None,
                       suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.shrink],
                       derandomize=False, print_blob=False, report_multiple_bugs=False)
    try:
        run_state_machine_as_test(hypothesis_seed(round_seed)(machine), settings=options)
    except (DepartureFound, Flaky):
        pass  # the collector kept the shortest departing history; a replay that answered otherwise is flaky
    except HypothesisException:
        pass  # hypothesis gave up on a round (its own limits): the next round starts afresh
    except ExceptionGroup as group:  # several departures in one round (hypothesis groups them)
        if not all(isinstance(error, (DepartureFound, Flaky)) for error in group.exceptions):
            raise


def progress_line(exploration: Exploration) -> str:
    """The console's progress line."""
    collector = exploration.collector
    departures = len(exploration.found) or len(collector.found)  # merged explorations keep theirs in found
    return (f"explore {exploration.target}: {collector.examples} examples, {collector.requests} requests "
            f"({exploration.requests_per_s:.0f}/s), {departures} departures, "
            f"{collector.inconclusive} inconclusive, {exploration.elapsed_s:.0f} s"
            + "".join(f"; shrinking {rule_id}: {length} requests so far"
                      for rule_id, length in sorted(collector.shrinking().items())))


def printer(every_s: float = 5.0, stream=None):
    """A progress callback printing at most one line every ``every_s`` seconds (and each new departure)."""
    last = {"at": float("-inf"), "found": 0}

    def show(exploration: Exploration) -> None:
        """Print the progress line when it is due."""
        now = time.monotonic()
        if now - last["at"] >= every_s or len(exploration.collector.found) != last["found"]:
            last["at"], last["found"] = now, len(exploration.collector.found)
            print(progress_line(exploration), file=stream or sys.stdout, flush=True)

    return show


def answers_line(exploration: Exploration) -> str:
    """How often each API got each answer: what the histories reached."""
    collector = exploration.collector
    counts = collector.answers
    shapes = ", ".join(f"{what} {count}" for what, count in sorted(collector.shapes.items()))
    return "answers: " + ", ".join(f"{api} {error} {count}" for (api, error), count in sorted(counts.items())) + (
        f"; {shapes}" if shapes else "")


def reached_line(exploration: Exploration) -> str:
    """Which rows of the model's table (an operation in a situation: its states and transitions) the judged
    answers went through, and which the budget never reached."""
    reached = exploration.collector.reached
    rows = table_rows()
    never = [f"{kind}/{condition}" for kind, condition in rows if not reached.get((kind, condition))]
    fewest = sorted((count, f"{kind}/{condition}") for (kind, condition), count in reached.items() if count)[:5]
    return (f"model rows reached: {sum(1 for row in rows if reached.get(row))} of {len(rows)}"
            + (f"; never: {', '.join(never)}" if never else "")
            + (f"; fewest: {', '.join(f'{row} {count}' for count, row in fewest)}" if fewest else ""))


def results(exploration: Exploration, *, run_id: str, target_version: str | None,
            histories: Path) -> list[CaseResult]:
    """One failed result per departure (its history in the message and in a file), and a passed result for the
    exploration itself when it found none."""
    made = []
    histories.mkdir(parents=True, exist_ok=True)
    rules = [found.rule_id for found in exploration.found]
    for found in exploration.found:
        last = found.history[-1]
        departure = last.departures[0]
        # a rule found by two seeds with two different shrunk cases: each result is named by its case too
        name = found.rule_id if rules.count(found.rule_id) == 1 or found.case_path is None else (
            f"{found.rule_id}-{found.case_path.stem.rsplit('.', 1)[-1]}")
        history_file = histories / f"{run_id}-{name}.json"
        history_file.write_text(json.dumps([_step_json(step) for step in found.history], indent=1))
        lines = "; ".join(f"{number}. {step.line()}" for number, step in enumerate(found.history, 1))
        case = found.case_path.name if found.case_path else "no suite form: the history is the evidence"
        judged = found.judgement
        # held back: a claim nobody judged yet, never a failure (a setup-like "no verdict on the API under test")
        outcome, prefix = (Outcome.FAILED, "") if not found.held_back else (
            Outcome.BLOCKED, f"held back, to judge by hand ({judged.reason if judged else 'not checked on the reference'}): ")
        made.append(CaseResult(
            case_id=name, suite_id="explore", title=departure.rule.summary, kip=departure.rule.kip,
            api=last.op.kind, version=last.op.version, target=exploration.target, target_version=target_version,
            outcome=outcome, requirement=Requirement.MUST, cites=departure.rule.cites,
            duration_s=exploration.elapsed_s, message=f"{prefix}{found.message} (history: {lines}; case: {case})",
            failure=StepFailure(step=len(found.history), step_label=last.op.describe(), expected=departure.expect,
                                actual=last.answer, message=found.message, api=last.op.kind),
            tags=["explored", *(["held-back"] if found.held_back else [])], run_id=run_id,
            path="conformance/explore/model.py", known_bug=judged.known_bug if judged and judged.kept else "",
            artifacts={"history": str(history_file), **({"case": str(found.case_path)} if found.case_path else {})}))
    if not exploration.found:
        collector = exploration.collector
        outcome, message = Outcome.PASSED, (
            f"no departure in {collector.examples} histories, {collector.requests} requests "
            f"({exploration.requests_per_s:.0f}/s), seed {exploration.seed}")
        if exploration.problem:
            outcome, message = Outcome.ERROR, exploration.problem
        made.append(CaseResult(
            case_id="exploration", suite_id="explore", title="every answer of generated histories as the KIPs allow",
            kip="KIP-98", api=None, version=None, target=exploration.target, target_version=target_version,
            outcome=outcome, requirement=Requirement.MUST, cites="the rules of conformance/explore/rules.py",
            duration_s=exploration.elapsed_s, message=message, tags=["explored"], run_id=run_id,
            path="conformance/explore/model.py"))
    return made


def _step_json(step) -> dict:
    return {"request": step.op.describe(), "op": {key: value for key, value in step.op.__dict__.items()},
            "values": list(step.resolved.values), "producer_id": step.resolved.producer_id,
            "producer_epoch": step.resolved.producer_epoch, "base_sequence": step.resolved.base_sequence,
            "answer": _plain(step.answer), "error": step.error, "allowed": step.outcome, "burst": step.burst,
            "departures": [{"rule": departure.rule.id, "message": departure.message} for departure in step.departures]}


def _plain(value):
    """``value`` with JSON's kinds of keys: an OffsetFetch answer is keyed by (topic, partition)."""
    if isinstance(value, dict):
        return {(f"t{key[0]}-{key[1]}" if isinstance(key, tuple) else key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value if isinstance(value, (str, int, float, bool, type(None))) else str(value)
