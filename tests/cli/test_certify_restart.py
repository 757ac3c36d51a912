"""certify --restart-command on an attached broker: a crash no longer ends the certification. The scripted broker
dies on a request with an unknown API key (robustness.malformed-frames sends one); its supervisor brings it back when
the command asks, the crash is the failure of the case that sent that request, and every later case is judged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conformance.cli import main
from conformance.resources import suites as bundled_suites

from supervised_broker import Supervised

ROOT = Path(__file__).resolve().parents[2]
CRASHING_CASE = "unknown-api-key-closes-connection"


def certify(broker: Supervised, out: Path, *options: str) -> dict[str, dict]:
    """case -> its line in the bundle's results, after certify ran the malformed-frames suite on the broker."""
    done = subprocess.run([sys.executable, "-m", "conformance", "certify", "--target", broker.fake.address,
                           "-o", str(out), *options, str(bundled_suites() / "robustness" / "malformed-frames.yaml")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    found = list(out.glob("*/results.jsonl"))
    assert found, done.stdout[-3000:] + done.stderr[-2000:]
    return {row["case"]: row for row in map(json.loads, found[0].read_text().splitlines())}


def test_certify_brings_an_attached_broker_back_with_the_restart_command(tmp_path):
    broker = Supervised()
    try:
        without = certify(broker, tmp_path / "without")
        broker.fake = broker.fake.revived()  # the crash left it dead: a new one for the second certification
        brought_back = certify(broker, tmp_path / "with", "--restart-command", broker.restart_command)
    finally:
        broker.stop()
    after_the_crash = [case for case, row in without.items() if row["outcome"] == "error"]
    assert after_the_crash, {case: row["outcome"] for case, row in without.items()}  # not run: the broker was dead
    assert broker.restarts >= 1
    crash = brought_back[CRASHING_CASE]
    assert crash["outcome"] == "failed" and "it took the target down" in crash["message"], crash["message"]
    assert "the harness restarted it" in crash["message"]
    # every case the dead broker left without a verdict is judged once it is back (some depart: the scripted broker
    # closes the connection on trailing bytes, and another case's unknown API key takes it down again)
    assert not [case for case, row in brought_back.items() if row["outcome"] == "error"]
    judged = {case: brought_back[case]["outcome"] for case in after_the_crash}
    assert set(judged.values()) <= {"passed", "failed"} and "passed" in judged.values(), judged


def test_the_restart_command_is_refused_where_the_harness_brings_the_target_back_itself(tmp_path, capsys):
    assert main(["certify", "--target", "tansu", "--restart-command", "true", "-o", str(tmp_path)]) == 2
    assert capsys.readouterr().err == ("certify: --restart-command is for a HOST:PORT target certify runs the suites "
                                       "on (the harness brings back the brokers it starts itself)\n")
    assert not list(tmp_path.iterdir())  # nothing started, nothing written
