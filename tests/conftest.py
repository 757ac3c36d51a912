"""Order of the harness's own tests: the modules that start brokers first.

CI runs the tests on three pytest-xdist workers, a file at a time (``--dist loadfile`` in pyproject.toml, so a
module's broker fixture starts once). A worker takes the next file when it is free, in collection order: the
long files (a broker, a cluster, a Spark cluster: minutes each) go first and the many short ones fill the gaps
after, so the run ends with the longest file, not with a long file started last.
"""

from __future__ import annotations

import pytest


def _starts_a_broker(item: pytest.Item) -> bool:
    return item.get_closest_marker("broker") is not None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    broker_modules = {item.path for item in items if _starts_a_broker(item)}
    # a stable sort: each module's items stay together and in their own order
    items.sort(key=lambda item: item.path not in broker_modules)
