"""The five questions, one module each. Every job is ``run(tables, **options) -> {name: DataFrame}``.

- :mod:`.matrix`: the latest outcome per target × item, and counts per target × KIP × level
- :mod:`.regressions`: what changed between two runs, and where along a target's history
- :mod:`.flaky`: items whose outcome differs across runs of one target and harness version
- :mod:`.latency`: latency percentiles and error codes per target × API × version, from exchanges
- :mod:`.history`: the conformance levels each run of a target reached, over time
"""

from __future__ import annotations

from importlib import import_module

JOBS = ["matrix", "regressions", "flaky", "latency", "history"]


def job(name: str):
    """The module of a job by name."""
    if name not in JOBS:
        raise ValueError(f"unknown job {name!r}; jobs: {', '.join(JOBS)}")
    return import_module(f"{__name__}.{name}")
