"""``conformance attribution``: the harness checks its own attribution on a correct broker.

It runs the suites on ``proxy+SPEC`` with every transcript kept (the baseline), reads from those transcripts
which API at which version each item sent, then, for each perturbation chosen (``--perturbation``, or a seeded
sample of every API and version sent × every perturbation that can change its answers), runs the suite files
whose items sent it on ``perturb:P+SPEC`` and judges the two runs item by item
(:mod:`conformance.report.attribution`). Exit status 1 when any perturbation broke a rule, 2 on bad input.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

from ..defaults import DEFAULT_TARGET

SHOWN = 5   # broken items printed per perturbation; attribution.json has every one
KINDS_HELP = ("close, unsupported, generic-error, older-body, zero-topic-ids (illegal: the step under test must not "
              "pass, nothing else is blamed); one-batch, slow (legal: every verdict holds)")


def register(commands) -> None:
    """Add ``conformance attribution`` and its options to ``commands``."""
    check = commands.add_parser("attribution", help="check that a perturbed API is blamed, and nothing else")
    check.add_argument("paths", nargs="*", metavar="PATH", help="suite files or folders (default: the bundled suites)")
    check.add_argument("--target", default=DEFAULT_TARGET, metavar="SPEC",
                       help=f"the correct broker the proxy stands in front of (default: {DEFAULT_TARGET})")
    check.add_argument("--perturbation", action="append", default=[], metavar="NAME@API:VERSION",
                       help=f"a perturbation to check, repeatable; kinds: {KINDS_HELP}")
    check.add_argument("--sample", type=int, default=3, metavar="N",
                       help="without --perturbation: how many perturbations to draw (default 3; 0: every one)")
    check.add_argument("--seed", type=int, default=None, help="the sample's seed (default: a new one, printed)")
    check.add_argument("--out", default="reports/attribution", metavar="DIR",
                       help="where the runs' results and attribution.json go (default: reports/attribution)")
    check.set_defaults(handler=command_attribution)


def _run(target: str, paths: list[str], results: Path, *, transcripts: str) -> str:
    """Run the suites on ``target`` into ``results`` (emptied first); the run's console output."""
    if results.exists():
        results.unlink()
    command = [sys.executable, "-m", "conformance", "run", "--target", target, "--alluredir", "",
               "--transcripts", transcripts, "--results", str(results), *paths]
    ran = subprocess.run(command, capture_output=True, text=True, check=False)
    return ran.stdout + ran.stderr


def command_attribution(arguments) -> int:
    """Run the baseline, then each perturbation, judging each as it ends; 1 if any broke a rule."""
    from ..protocol.codec import default_codec
    from ..proxy.perturb import parse
    from ..report.attribution import UNDER_TEST, USES, candidates, judge, relation
    from ..results.store import read_records

    codec = default_codec()
    try:
        chosen = [parse(text, codec) for text in arguments.perturbation]
    except ValueError as error:
        print(f"conformance attribution: {error}", file=sys.stderr)
        return 2
    out = Path(arguments.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    print(f"attribution: baseline on proxy+{arguments.target} ...", flush=True)
    said = _run(f"proxy+{arguments.target}", arguments.paths, out / "baseline.jsonl", transcripts="all")
    baseline = read_records(out / "baseline.jsonl") if (out / "baseline.jsonl").exists() else []
    if not baseline:
        print(f"conformance attribution: the baseline on proxy+{arguments.target} recorded nothing; it said:\n"
              + "\n".join(said.splitlines()[-15:]), file=sys.stderr)
        return 2
    if not chosen:
        seed = arguments.seed if arguments.seed is not None else random.randrange(1 << 30)
        every = candidates(baseline, codec)
        picked = every if arguments.sample <= 0 else random.Random(seed).sample(every, min(arguments.sample, len(every)))
        print(f"attribution: {len(picked)} of {len(every)} perturbations (seed {seed})", flush=True)
        chosen = [parse(text, codec) for text in picked]
    verdicts = []
    for perturbation in chosen:
        touched = [record for record in baseline
                   if relation(record, perturbation.api, perturbation.version) in (UNDER_TEST, USES)]
        files = sorted({record.path for record in touched})
        if not files:
            print(f"  {perturbation.spec}: no item sends it, nothing to check")
            continue
        results = out / f"{perturbation.spec.replace('@', '_').replace(':', '_v')}.jsonl"
        _run(f"perturb:{perturbation.spec}+{arguments.target}", files, results, transcripts="failures")
        perturbed = read_records(results) if results.exists() else []
        verdict = judge(perturbation.spec, perturbation.legal, perturbation.api, perturbation.version,
                        [record for record in baseline if record.path in files], perturbed, perturbation.refutes)
        verdicts.append(verdict)
        counts = ", ".join(f"{count} {name}" for name, count in sorted(verdict.counts.items()))
        print(f"  {perturbation.spec} ({'legal' if verdict.legal else 'departs'}): {counts}: "
              + ("holds" if verdict.held else f"{len(verdict.broken)} broken"), flush=True)
        for item, relation_, why in verdict.broken[:SHOWN]:
            print(f"      {item} [{relation_}]: {why[:200]}")
        if len(verdict.broken) > SHOWN:
            print(f"      ... and {len(verdict.broken) - SHOWN} more (attribution.json)")
    summary = {"target": arguments.target, "seconds": round(time.monotonic() - started, 1),
               "perturbations": [{"perturbation": verdict.perturbation, "legal": verdict.legal, "refutes": verdict.refutes,
                                  "counts": verdict.counts,
                                  "held": verdict.held, "broken": [list(row) for row in verdict.broken]}
                                 for verdict in verdicts]}
    (out / "attribution.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    held = sum(verdict.held for verdict in verdicts)
    print(f"attribution: {held} of {len(verdicts)} perturbations held ({out / 'attribution.json'})")
    return 0 if held == len(verdicts) else 1
