"""Compare the codes Kafka-answer twins accept with the codes Apache Kafka was seen to send.

    python tools/twin_codes.py RESULTS.jsonl... [--suites PATH...]

An IMPLEMENTATION twin (``<id>-kafka-answer``) says what Apache Kafka answers; a code it lists that Kafka never
sends lets another broker pass it with that code (Tansu passed ``produce-after-fence-rejected-kafka-answer`` with
PRODUCER_FENCED, which Kafka 4.4.0 never sends at Produce v3-13). Run the twins on each Kafka release the project
supports with ``--transcripts all`` (``-- -k kafka-answer``), then give the results files here: for each twin and
request version it prints the codes seen (per Kafka release) and every listed code none of them sent. Write
``kafka_code`` from what it prints, never by hand.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package, not an installed one

from conformance.protocol.errors import error_name  # noqa: E402
from conformance.runner.steps import bundled  # noqa: E402
from conformance.results.store import read_lines  # noqa: E402
from conformance.suite import matchers  # noqa: E402
from conformance.suite.citations import _under_test_steps  # noqa: E402
from conformance.suite.loader import load_suites  # noqa: E402

TWIN = "-kafka-answer"


def refusal_code(row: dict) -> str | None:
    """The last error answered to the API and version under test, in the item's transcript (the refusal the
    twin judges; set-up steps of that API come before it and are answered NONE)."""
    found = None
    for exchange in row.get("transcript") or []:
        if exchange.get("api") != row["api"] or exchange.get("version") != row["api_version"]:
            continue
        response = exchange.get("response")
        if isinstance(response, dict) and matchers.primary_error(response):
            found = error_name(matchers.primary_error(response))
    return found


def seen(rows) -> dict[str, dict[int, dict[str, set[str]]]]:
    """case full id -> request version -> code -> the Kafka releases that answered it."""
    found: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(set)))
    for row in rows:
        if not row["case"].endswith(TWIN) or row["outcome"] not in ("passed", "differs", "failed"):
            continue
        code = refusal_code(row)
        if code is not None:
            found[f"{row['suite']}::{row['case']}"][row["api_version"]][code].add(row.get("target_version") or "?")
    return found


def listed(suite_paths) -> dict[str, object]:
    """twin full id -> the ``error_code`` its step under test expects (a name, a list or a version map)."""
    components = bundled()
    suites, _ = load_suites(suite_paths, components=components)
    found = {}
    for suite in suites:
        for case in suite.cases:
            if case.id.endswith(TWIN):
                for _, step in _under_test_steps(case.steps, case.api, [], components.step_kinds):
                    expect = step.get("expect") or {}
                    if "error_code" in expect and expect["error_code"] != "NONE":  # an answer served is no refusal
                        found[case.full_id] = expect["error_code"]
    return found


def unseen(expected, codes: dict[int, dict[str, set[str]]]) -> list[str]:
    """``vN: CODE`` for each code ``expected`` accepts at a measured version that no release sent there."""
    out = []
    for version, answered in sorted(codes.items()):
        wanted = matchers.for_version(expected, version)
        if wanted is matchers._MISSING or isinstance(wanted, dict):
            continue
        out.extend(f"v{version}: {code}" for code in (wanted if isinstance(wanted, list) else [wanted])
                   if code not in answered)
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--suites", nargs="*", default=[Path(__file__).resolve().parents[1] / "suites"])
    args = parser.parse_args(argv)
    measured = seen(row for path in args.results for row in read_lines(path))
    expected = listed(args.suites)
    never = 0
    for case, codes in sorted(measured.items()):
        print(case)
        for version, answered in sorted(codes.items()):
            print(f"  v{version}: " + ", ".join(f"{code} ({', '.join(sorted(releases))})"
                                              for code, releases in sorted(answered.items())))
        for entry in unseen(expected.get(case), codes) if case in expected else []:
            never += 1
            print(f"  listed, never sent: {entry}")
    print(f"{len(measured)} twins measured; {never} listed codes no release sent")
    return 1 if never else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
