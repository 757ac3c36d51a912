"""The ``wait`` step: sleep a number of milliseconds (``wait: 200`` or ``wait: {ms: 200}``), lending the
item's place in a parallel run meanwhile."""

from __future__ import annotations

from ...suite.kinds import StepKind
from ..context import Context
from ..pacing import pause


def wait_step(context: Context, step: dict, index: str, name: str) -> None:
    wait = step["wait"]
    pause((wait if isinstance(wait, int) else int(wait.get("ms", 0))) / 1000)


KIND = StepKind("wait", wait_step)
