"""The certify benchmark prints the critical path of a certification from its certification.json: the main run and
each lane of companions (one after another in a lane), the chain that ended last first."""

from __future__ import annotations

from conformance.bench.certify import critical_path


def test_the_lane_that_ended_last_is_the_critical_path_and_the_others_are_beside_it():
    facts = {"main_run": {"spec": "kafka", "seconds": 300.0}, "companions": [
        {"name": "cluster", "lane": 0, "started_s": 0.0, "seconds": 400.0},
        {"name": "proxy", "lane": 1, "started_s": 0.0, "seconds": 150.0},
        {"name": "cluster (epoch space)", "lane": 1, "started_s": 150.5, "seconds": 320.0}]}
    lines = critical_path(facts)
    assert lines[0] == ("critical path: companions' lane 1: proxy 150 s -> cluster (epoch space) 320 s, "
                        "ended at 470 s")
    assert lines[1:] == ["beside it:     companions' lane 0: cluster 400 s, ended at 400 s",
                         "beside it:     main run on kafka: 300 s"]


def test_without_companions_the_main_run_is_the_path():
    assert critical_path({"main_run": {"spec": "kafka", "seconds": 12.0}}) == ["critical path: main run on kafka: 12 s"]
