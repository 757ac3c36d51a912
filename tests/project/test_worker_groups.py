"""The groups tests/support/worker_groups.py gives the tests reach pytest-xdist's scheduler: under ``--dist loadgroup`` a test's
node id carries its group (``...@group``), which is what keeps a module's brokers and the Spark session to one
worker. Without this the marks were added after xdist had read them, and nothing said so but the CPU bill."""

from __future__ import annotations

import os

import pytest

from worker_groups import SPARK_GROUP, group_of


def test_a_test_runs_in_the_group_it_was_given(request):
    if "PYTEST_XDIST_WORKER" not in os.environ or not getattr(request.config.option, "loadgroup", False):
        pytest.skip("the groups are pytest-xdist's: run with -n N (the README's test command)")
    assert request.node.nodeid.endswith("@" + group_of(request.node)), request.node.nodeid


def test_spark_tests_share_one_group_and_a_module_fixture_keeps_its_module_together(pytestconfig):
    class Item:  # what _group reads of a pytest item
        def __init__(self, nodeid, marker=None, fixtures=None, params=None):
            self.nodeid, self._marker = nodeid, marker
            self._fixtureinfo = type("Info", (), {"name2fixturedefs": fixtures or {}})()
            if params is not None:
                self.callspec = type("Spec", (), {"params": params})()

        def get_closest_marker(self, name):
            return object() if name == self._marker else None

    module_scoped = [type("Def", (), {"scope": "module", "baseid": "tests/targets/test_x.py"})()]
    assert group_of(Item("tests/analysis/test_a.py::t", "spark")) == SPARK_GROUP
    assert group_of(Item("tests/targets/test_x.py::t[a]", "broker", {"secured": module_scoped}, {"secured": "a"})) \
        == "tests/targets/test_x.py[a]"
    assert group_of(Item("tests/targets/test_x.py::u", "broker")) == "tests/targets/test_x.py::u"
    assert group_of(Item("tests/report/test_y.py::v")) == "tests/report/test_y.py"
    # a session fixture of a conftest.py (its baseid a folder) ties the tests of every module using it together
    conftest_session = [type("Def", (), {"scope": "session", "baseid": "tests"})()]
    assert group_of(Item("tests/analysis/test_z.py::w", "broker", {"standalone_spark": conftest_session})) \
        == group_of(Item("tests/explore/test_w.py::x", "broker", {"standalone_spark": conftest_session})) \
        == "standalone_spark"
    module_session = [type("Def", (), {"scope": "session", "baseid": "tests/analysis/test_z.py"})()]
    assert group_of(Item("tests/analysis/test_z.py::y", None, {"history": module_session})) == "tests/analysis/test_z.py"
