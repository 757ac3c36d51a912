"""``conformance report allure RESULTS_DIR -o OUT``: the Allure HTML report, built offline.

The pytest plugin writes the Allure *results* during a run; this builds the *report* from them
with Allure 2 (npm ``allure-commandline``, which bundles Allure's jars and needs only Java). The
results folder is copied first and never changed: the copy gets the categories, the executor,
environment entries (target features from the JSONL results), and the history of the previous
report in OUT, so Allure's trend charts carry on across runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .. import resources
from ..results import provenance
from .allure import DIFFERS_CATEGORY

# First match wins (Allure matches messageRegex against the whole message, so every pattern is anchored
# with .*). The harness's statuses: a departure is "failed", a harness or infrastructure error
# "broken", unsupported versions, missing capabilities and IMPLEMENTATION cases that differ from
# Kafka "skipped".
CATEGORIES = [
    {"name": "Timeout", "matchedStatuses": ["failed", "broken"],
     "messageRegex": r"(?is).*(timed out|timeout|no response within).*",
     "description": "A request got no answer in time: the target stalled, or the harness waited too little."},
    {"name": "Blocked: a set-up or check step on another API departed", "matchedStatuses": ["failed", "skipped"],
     "messageRegex": r"(?is).*blocked, no verdict.*",
     "description": "No verdict on the API under test; never a pass."},
    {"name": "Departure from the spec", "matchedStatuses": ["failed"],
     "description": "The API under test departs from what the KIP requires (MUST, or SHOULD/MAY with --strict)."},
    {"name": "Harness or infrastructure error", "matchedStatuses": ["broken"],
     "description": "Not a verdict on the target: the harness, the network or the broker process failed."},
    DIFFERS_CATEGORY,
    {"name": "Unsupported by the target", "matchedStatuses": ["skipped"],
     "messageRegex": r"(?is).*unsupported: .*",
     "description": "The target does not advertise the API version under test: never a failure."},
    {"name": "SHOULD/MAY not met (not enforced)", "matchedStatuses": ["skipped"],
     "messageRegex": r"(?is).*(SHOULD|MAY) not met.*"},
]


class AllureUnavailable(RuntimeError):
    """No Allure command line or no Java here; the message says how to get them."""


def allure_command() -> list[str]:
    """$ALLURE_BIN, then node_modules of the current folder or of the checkout (npm ci), then ``allure`` on PATH."""
    if os.environ.get("ALLURE_BIN"):
        return [os.environ["ALLURE_BIN"]]
    for root in (Path.cwd(), resources.source_tree()):
        if root is None:
            continue
        local = root / "node_modules" / ".bin" / "allure"
        if local.is_file():
            return [str(local)]
    found = shutil.which("allure")
    if found:
        return [found]
    raise AllureUnavailable("no Allure command line: `npm install -g allure-commandline` (or `npm ci` in the "
                            "checkout, whose package.json pins it), or set ALLURE_BIN")


def prepare(results: Path, staging: Path, *, previous_report: Path | None, executor: dict,
            environment: dict[str, object]) -> None:
    """Copy the results into ``staging`` and add categories, executor, environment and history."""
    shutil.copytree(results, staging, dirs_exist_ok=True)
    (staging / "categories.json").write_text(json.dumps(CATEGORIES, indent=1), encoding="utf-8")
    (staging / "executor.json").write_text(json.dumps(executor, indent=1), encoding="utf-8")
    if environment:
        existing = staging / "environment.properties"
        lines = existing.read_text(encoding="utf-8").splitlines() if existing.is_file() else []
        known = {line.split("=", 1)[0] for line in lines}
        lines += [f"{_key(name)}={_value(value)}" for name, value in environment.items() if _key(name) not in known]
        existing.write_text("\n".join(lines) + "\n", encoding="utf-8")
    history = previous_report / "history" if previous_report else None
    if history is not None and history.is_dir():
        shutil.copytree(history, staging / "history", dirs_exist_ok=True)


def _key(text: str) -> str:
    return text.replace("\\", "\\\\").replace("=", "\\=").replace(":", "\\:").replace(" ", "\\ ")


def _value(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n")


def environment_from_results(paths: list[str]) -> dict[str, object]:
    """Per target: its version and finalized features, from the JSONL results (their ApiVersions answers)."""
    from .certify.fingerprint import from_records
    from ..results.store import read_records

    records = [row for path in paths for row in read_records(path)]
    found: dict[str, object] = {}
    for target in dict.fromkeys(row.target for row in records):
        rows = [row for row in records if row.target == target]
        found[f"target.{target}"] = next((row.target_version for row in rows if row.target_version), "")
        fingerprint = from_records(rows)
        if fingerprint is not None:
            features = fingerprint["finalized_features"]
            found[f"features.{target}"] = ", ".join(f"{name}={level}" for name, level in sorted(features.items())) \
                or "none finalized"
    return found


def harness_version() -> str:
    """The package version a report is named after (the results lines carry the commit too)."""
    return provenance().release


def build(results: Path, output: Path, *, executor: dict, environment: dict[str, object],
          previous_report: Path | None = None, single_file: bool = False, timeout: float = 300) -> Path:
    """Generate the report into ``output`` (replaced); history comes from ``previous_report`` (default: output)."""
    if not results.is_dir() or not any(results.glob("*-result.json")):
        raise FileNotFoundError(f"{results}: no Allure results (*-result.json) there")
    command = allure_command()
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise AllureUnavailable("Allure 2 needs Java (java on PATH or JAVA_HOME)")
    previous = previous_report if previous_report is not None else output
    with tempfile.TemporaryDirectory(prefix="allure-results-") as scratch:
        staging = Path(scratch) / "results"
        prepare(results, staging, previous_report=previous, executor=executor,
                environment={"harness": harness_version(), **environment})
        # The report would otherwise load Google Analytics; Allure reads the flag with Boolean.parseBoolean.
        env = {**os.environ, "ALLURE_NO_ANALYTICS": "true"}
        arguments = [*command, "generate", str(staging), "-o", str(output), "--clean"]
        if single_file:
            arguments.append("--single-file")
        done = subprocess.run(arguments, capture_output=True, text=True, timeout=timeout, env=env, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"allure generate failed ({done.returncode}): {(done.stderr or done.stdout)[-2000:]}")
    return output
