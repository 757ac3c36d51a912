"""A departure is a claim about the target, so none is presented before it is checked: its written case runs on
the reference release of Apache Kafka, and on Apache Kafka the known-bugs ledger must name a bug for it.

A departure is kept as a finding when its case passes on the reference and, on an Apache Kafka release, the ledger
names a bug of that release for it; or when its case fails on the reference too and the ledger names a bug of the
reference for it. Anything else is held back, to judge by hand: its case moves to ``held-back/`` under the cases
folder and its result says why, never as a failure. A case that fails on the reference with no bug named there is
the model's claim against the release the project measures everything by, and a model stricter than the text
shows first there; a case that passes on the reference but fails on a Kafka release where the ledger names no bug
is a difference nobody has judged yet.

The ledger names its bugs by their detecting cases (``suite::case``); an explored case is new, so
:data:`SAME_DEMAND` says which bundled cases check the demand an explored rule checks on the API under test.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from .. import ledger

REFERENCE = "kafka:4.4.0"
HELD_BACK = "held-back"
REFERENCE_TIMEOUT_S = 900

# (rule, API under test) -> the bundled cases that check the same demand on that API; the ledger entries naming
# one of them are the bugs an explored departure of that rule on that API can be.
SAME_DEMAND: dict[tuple[str, str], tuple[str, ...]] = {
    # a transactional write the coordinator does not hold in the ongoing transaction is written
    ("produce.partition-in-transaction", "Produce"): (
        "kip890.transaction-v2::produce-to-partition-not-added",
        "faults.proxy-kip890::late-write-does-not-join-next-transaction"),
    # a write at an older epoch to a partition the new epoch has not written: before verification (KIP-890 part 1)
    # the leader knows nothing of the new epoch, so this is the same unverified write (inferred, not a ledger fact)
    ("fenced.refused", "Produce"): ("kip890.transaction-v2::produce-to-partition-not-added",),
    # TxnOffsetCommit not verified against the transaction: another generation's offsets staged
    ("fenced.refused", "TxnOffsetCommit"): ("kip98.request-validation::txn-offset-commit-wrong-producer-id",),
    ("txn-offset-commit.after-add-offsets", "TxnOffsetCommit"): (
        "kip98.offsets::txn-offset-commit-without-add-offsets",),
}


def reference_for(target: str) -> str:
    """The reference a departure found on ``target`` is checked on: Kafka 4.4.0, behind the fault proxy and with
    the options (nodes, features) of a Kafka target, so that the faults and node moves its case arms exist there
    too."""
    proxy = "proxy+" if target.startswith("proxy+") else ""
    options = target.split(",", 1)[1] if "," in target and ledger.is_apache_kafka(target) else ""
    return f"{proxy}{REFERENCE}" + (f",{options}" if options else "")


@dataclass(frozen=True)
class Judgement:
    """What the checks say of one departure: ``kept`` as a finding (``known_bug`` the ledger's label) or held
    back with ``reason``; ``reference`` the case's outcome on the reference (None: not run)."""

    kept: bool
    reason: str
    known_bug: str = ""
    reference: str | None = None


def ledger_bug(rule_id: str, api: str, release: str | None, target: str) -> ledger.Bug | None:
    """The ledger entry of ``release`` for a departure of ``rule_id`` on ``api`` (None: the ledger names none)."""
    for case in SAME_DEMAND.get((rule_id, api), ()):
        bug = ledger.match(case, release, target)
        if bug is not None:
            return bug
    return None


def judge(rule_id: str, api: str, *, release: str | None, target: str, on_reference: str | None,
          reference: str = REFERENCE) -> Judgement:
    """Keep or hold back one departure found on ``target`` at ``release``, its case having ended
    ``on_reference`` (a results outcome, or None when it was not run) on ``reference``."""
    reference_release = reference.partition(":")[2].split(",")[0] or None
    if on_reference is None:
        return Judgement(False, f"its case was not run on the reference {reference}", reference=None)
    if on_reference == "passed":
        if not ledger.is_apache_kafka(target):
            return Judgement(True, f"its case passes on the reference {reference}", reference=on_reference)
        bug = ledger_bug(rule_id, api, release, target)
        if bug is None:
            return Judgement(False, f"its case passes on the reference {reference}, and the ledger names no bug of "
                                    f"{release} for {rule_id} on {api}", reference=on_reference)
        return Judgement(True, f"its case passes on the reference {reference}: {bug.label()}", bug.label(),
                         on_reference)
    if on_reference == "failed":
        bug = ledger_bug(rule_id, api, reference_release, reference)
        if bug is not None and (not ledger.is_apache_kafka(target) or bug.affects(release)):
            return Judgement(True, f"its case fails on the reference {reference} too: {bug.label()}", bug.label(),
                             on_reference)
        return Judgement(False, f"its case fails on the reference {reference} too, where the ledger names no bug for "
                                f"{rule_id} on {api}: the model's rule or the reference, to judge against the text",
                         reference=on_reference)
    return Judgement(False, f"its case ended {on_reference} on the reference {reference}: no verdict there",
                     reference=on_reference)


def case_id(path: Path) -> str:
    """``suite::case`` of a written explored case."""
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    return f"{document['suite']}::{document['cases'][0]['id']}"


def run_on_reference(paths: list[Path], reference: str = REFERENCE) -> dict[Path, str]:
    """Each case's outcome on ``reference`` (one ``conformance run`` of this very package, in a process of its
    own); a case with no results line is missing from the answer."""
    if not paths:
        return {}
    with tempfile.TemporaryDirectory(prefix="explore-reference-") as scratch:
        results = Path(scratch) / "results.jsonl"
        arguments = ["run", "--target", reference, *map(str, paths), "--results", str(results), "--alluredir", "",
                     "--transcripts", "none", "--jobs", "1"]
        # this very package, whatever an installed one is (this process's import path), in a folder of its own (no
        # conftest.py of a checkout)
        code = (f"import sys; sys.path[:0] = {sys.path!r}; from conformance.cli import main; "
                f"sys.exit(main({arguments!r}))")
        subprocess.run([sys.executable, "-c", code], cwd=scratch, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=REFERENCE_TIMEOUT_S, check=False)
        outcomes: dict[str, str] = {}
        if results.exists():
            for line in results.read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                outcomes[f"{record.get('suite')}::{record.get('case')}"] = record.get("outcome", "")
    return {path: outcomes[case_id(path)] for path in paths if case_id(path) in outcomes}


def hold_back(path: Path, cases_dir: Path) -> Path:
    """Move a held-back case under ``cases_dir``/held-back/; its new path."""
    folder = cases_dir / HELD_BACK
    folder.mkdir(parents=True, exist_ok=True)
    moved = folder / path.name
    path.replace(moved)
    return moved


def check(exploration, cases_dir: Path, *, release: str | None, reference: str = REFERENCE, say=print) -> None:
    """Judge every departure of ``exploration`` (:class:`~conformance.explore.exploration.Exploration`) on the
    reference: each :class:`~conformance.explore.exploration.Found` gets its ``judgement``, and a held-back one's case
    moves to ``held-back/``. ``say`` gets a line before the reference starts."""
    paths = [found.case_path for found in exploration.found if found.case_path is not None]
    if paths:
        say(f"explore: running {len(paths)} written case(s) on the reference {reference} before keeping them")
    outcomes = run_on_reference(paths, reference)
    for found in exploration.found:
        api = found.history[-1].op.kind
        on_reference = outcomes.get(found.case_path) if found.case_path is not None else None
        judgement = judge(found.rule_id, api, release=release, target=exploration.target, on_reference=on_reference,
                          reference=reference)
        if found.case_path is None:
            judgement = Judgement(False, "it has no suite form, so no case could run on the reference")
        found.judgement = judgement
        if not judgement.kept and found.case_path is not None:
            found.case_path = hold_back(found.case_path, cases_dir)
