"""SIGTERM and SIGINT end a run cleanly: provisioned brokers stopped, their files removed, results flushed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.results.store import read_lines

ROOT = Path(__file__).resolve().parents[2]
# Items that each take a second and a half whatever the broker answers: the signal lands mid-run on any target (a
# bundled suite's items fail within milliseconds on a broker that refuses them, and the run ended before the signal).
SLOW_SUITE = """\
suite: selftest.signals
title: Items that take a while
spec: KIP-98
cases:
  - id: answer-then-pause
    title: ApiVersions is answered, then the item pauses
    cites: "Kafka protocol guide: ApiVersions"
    requirement: IMPLEMENTATION
    under_test: {api: ApiVersions}
    steps:
      - send: ApiVersions
        expect: {error_code: NONE}
      - wait: 1500
"""


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (read from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.broker
@pytest.mark.parametrize("target, signum", [("tansu", signal.SIGTERM), ("tansu", signal.SIGINT),
                                            ("kafka", signal.SIGTERM)])
def test_a_signal_mid_run_stops_the_broker_flushes_results_and_prints_the_summary(tmp_path, target, signum):
    suite = tmp_path / "suite" / "signals.yaml"
    suite.parent.mkdir()
    suite.write_text(SLOW_SUITE)
    results = tmp_path / "results.jsonl"
    environment = {**os.environ, "TMPDIR": str(tmp_path)}  # the broker's files land here, to be checked
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--target", target, str(suite),
         "--results", str(results), "-q"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(read_lines(results)) < 1 and process.poll() is None:
        time.sleep(0.2)
    assert process.poll() is None, "the run ended before the signal: " + (process.stdout.read() if process.stdout else "")
    brokers = descendants(process.pid)
    assert brokers, "no broker process was started"
    process.send_signal(signum)
    output, _ = process.communicate(timeout=90)
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    assert not [pid for pid in brokers if alive(pid)], f"left running after {signum.name}"
    assert not [path for path in tmp_path.iterdir() if path.name not in ("results.jsonl", "suite")], "broker files left behind"
    assert "KeyboardInterrupt" in output and "conformance results:" in output
    records = read_lines(results)
    assert len(records) == collected(target, suite)  # every item has its line, those never run say so
    assert records[-1]["outcome"] == "error" and records[-1]["message"].startswith("not run: the run was interrupted")


def collected(target: str, suite: Path) -> int:
    listing = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--target", target, str(suite),
                              "--collect-only", "-q"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return sum(1 for line in listing.splitlines() if "::" in line)


def test_an_interrupt_a_hook_swallowed_still_stops_the_run_as_interrupted():
    """Seen in CI: a SIGINT landing in hypothesis's old-style makereport wrapper became a pluggy warning and
    the run went on, ending with exit 1. The signal is remembered; the item's teardown then stops the run."""
    from types import SimpleNamespace

    from conformance.pytest_plugin.plugin import INTERRUPTED_KEY, pytest_runtest_teardown

    config = SimpleNamespace(stash=pytest.Stash())
    item = SimpleNamespace(config=config, session=SimpleNamespace(shouldstop=False))
    pytest_runtest_teardown(item)
    assert item.session.shouldstop is False  # no signal: the run goes on
    config.stash[INTERRUPTED_KEY] = "SIGINT"
    pytest_runtest_teardown(item)
    assert item.session.shouldstop == "the run was interrupted (SIGINT)"  # "not run: the run was interrupted ..."
