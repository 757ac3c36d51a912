"""A third party's plugin written from the docs alone: the package that docs/how-to/write-a-plugin.md shows,
file by file, is built from the page's own code blocks, installed with pip and run by ``conformance run``.

Its target kind, step kind, output and suite must all take part: the suite's case runs on two brokers of the
plugin's kind, passes where the broker advertises the APIs and fails where it does not (so the step kind
checks something), and the output's file counts both. If the page drifts from what the harness accepts,
this test fails.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.protocol.codec import default_codec

from fake_kafka import FakeKafka

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "how-to" / "write-a-plugin.md"
# A fenced block that names the file it is: ```python title="my_broker_conformance/plugin.py"
TITLED_BLOCK = re.compile(r'^```\w+ title="(?P<path>[^"]+)"\n(?P<text>.*?)^```$', re.M | re.S)


def files_of_the_page() -> dict[str, str]:
    return {match["path"]: match["text"] for match in TITLED_BLOCK.finditer(PAGE.read_text(encoding="utf-8"))}


def test_the_page_shows_a_whole_package():
    assert set(files_of_the_page()) == {"pyproject.toml", "my_broker_conformance/plugin.py",
                                        "my_broker_conformance/suites/apis.yaml"}


@pytest.fixture
def installed(tmp_path) -> Path:
    """The page's package, pip-installed into a folder of its own (the harness's environment is left alone)."""
    project = tmp_path / "my-broker-conformance"
    for name, text in files_of_the_page().items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text, encoding="utf-8")
    site = tmp_path / "site"
    built = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                            "--no-build-isolation", "--disable-pip-version-check", "--target", str(site),
                            str(project)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    return site


def test_the_plugin_from_the_page_runs_its_suite_on_its_target_with_its_step_kind_and_sink(installed, tmp_path):
    every_api = FakeKafka()
    without_end_txn = FakeKafka(apis={spec.name: (spec.versions()[0], spec.versions()[-1])
                                      for spec in default_codec().registry.apis()
                                      if spec.versions() and spec.name != "EndTxn"})
    run = tmp_path / "run"
    (run / "suites").mkdir(parents=True)  # an empty suites/ stands in for the bundled ones: only the plugin's run
    results = run / "results.jsonl"
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(installed), os.environ.get("PYTHONPATH", "")])}
    try:
        finished = subprocess.run(
            [sys.executable, "-m", "conformance.cli", "run", "--target", f"my-broker@{every_api.address}",
             "--target", f"my-broker@{without_end_txn.address}", "--results", str(results), "--alluredir", "",
             "--outcome-counts", "outcomes.json",
             "--", "-p", "no:cacheprovider"],
            cwd=run, env=environment, capture_output=True, text=True, timeout=600)
    finally:
        every_api.stop()
        without_end_txn.stop()
    output = finished.stdout + finished.stderr
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert {(line["suite"], line["case"], line["target"], line["outcome"]) for line in lines} == {
        ("my-broker.apis", "advertises-transactions", f"my-broker@{every_api.address}", "passed"),
        ("my-broker.apis", "advertises-transactions", f"my-broker@{without_end_txn.address}", "failed"),
    }, output
    [failed] = [line for line in lines if line["outcome"] == "failed"]
    assert (failed["step"], failed["step_label"], failed["expected"]) == (2, "2 advertises EndTxn", "EndTxn")
    assert failed["message"] == "2 advertises EndTxn: EndTxn is not advertised"
    assert json.loads((run / "outcomes.json").read_text()) == {"passed": 1, "failed": 1}  # the plugin's output
    assert finished.returncode == 1, output  # a MUST not met fails the run
