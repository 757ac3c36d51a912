"""A departure exploration found on Apache Kafka and judged by hand: its case fails where the bug lives and
passes where it is fixed (fixtures/explored/kafka/, whose comment has the judgement and the evidence)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cli import main
from conformance.results.store import read_lines as read_results
from conformance.targets.kafka.jars import cached_libs

pytestmark = pytest.mark.broker

STALE_WRITE_BLOCKS_SEQUENCE = (Path(__file__).parents[2] / "fixtures" / "explored" / "kafka"
                               / "explore.kafka-4-0-0.produce-added-implicitly.a475b498.yaml")


@pytest.mark.parametrize("release, outcome", [("4.0.0", "failed"), ("4.1.0", "passed")])
def test_a_refused_stale_write_blocks_the_next_write_in_sequence_on_4_0_only(tmp_path, release, outcome):
    if not cached_libs(release).is_dir():
        pytest.skip(f"Kafka {release} jars are not cached: python -m conformance.targets.kafka.jars {release}")
    results = tmp_path / "results.jsonl"
    main(["run", "--target", f"kafka:{release}", str(STALE_WRITE_BLOCKS_SEQUENCE), "--results", str(results),
          "--alluredir", ""])
    [row] = list(read_results(results))
    assert row["outcome"] == outcome, row.get("message")
    if outcome == "failed":
        assert "OUT_OF_ORDER_SEQUENCE_NUMBER" in row["message"]
