"""Exploration on Apache Kafka: nothing departs on the pinned release, and on 3.5.2 the hanging-transaction
class (KAFKA-14402) is found without any bundled case, written as a case that fails there and passes on 3.6.2."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from conformance.cli import main
from conformance.results.store import read_lines as read_results
from conformance.targets.kafka.jars import cached_libs

pytestmark = pytest.mark.broker


def explore(tmp_path, target: str, budget: str, seed: int) -> tuple[int, list[dict]]:
    results = tmp_path / "results.jsonl"
    status = main(["explore", "--target", target, "--budget", budget, "--seed", str(seed),
                   "--cases", str(tmp_path / "cases"), "--results", str(results)])
    return status, list(read_results(results))


def run_case(tmp_path, target: str, case) -> int:
    return main(["run", "--target", target, str(case), "--results", str(tmp_path / f"run-{target}.jsonl"),
                 "--alluredir", ""])


def test_the_pinned_kafka_departs_from_no_rule(tmp_path):
    status, rows = explore(tmp_path, "kafka", "30", seed=5)  # 30 histories: a budget in examples, not in time
    assert [row["case"] for row in rows] == ["exploration"]
    assert status == 0 and rows[0]["outcome"] == "passed", rows[0]["message"]
    # hypothesis counts 30 valid examples; one it discarded (its draws overran) was sent and judged too
    histories = int(re.search(r"no departure in (\d+) histories", rows[0]["message"]).group(1))
    assert histories >= 30


def _jars(*versions: str) -> None:
    missing = [version for version in versions if not cached_libs(version).is_dir()]
    if missing:
        pytest.skip(f"Kafka {', '.join(missing)} jars are not cached: python -m conformance.targets.kafka.jars VERSION")


def test_the_hanging_transaction_is_found_on_3_5_2_and_its_case_passes_on_3_6_2(tmp_path):
    _jars("3.5.2", "3.6.2")
    status, rows = explore(tmp_path, "kafka:3.5.2", "200", seed=7)
    assert status == 1
    found = {row["case"]: row for row in rows}
    hanging = found["produce.partition-in-transaction"]
    assert hanging["outcome"] == "failed" and hanging["suite"] == "explore"
    assert "1. InitProducerId" in hanging["message"] and "2. Produce" in hanging["message"]  # shrunk to two requests
    case = hanging["artifacts"]["case"]
    document = yaml.safe_load(Path(case).read_text(encoding="utf-8"))
    assert [list(step)[0] for step in document["cases"][0]["steps"]] == ["send", "produce"]
    assert run_case(tmp_path, "kafka:3.5.2", case) == 1
    assert run_case(tmp_path, "kafka:3.6.2", case) == 0
