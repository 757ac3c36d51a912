"""The ``wait`` step: sleep a number of milliseconds (``wait: 200`` or ``wait: {ms: 200}``)."""

from __future__ import annotations

import time

from ...suite.kinds import StepKind
from ..context import Context


def wait_step(context: Context, step: dict, index: str, name: str) -> None:
    wait = step["wait"]
    time.sleep((wait if isinstance(wait, int) else int(wait.get("ms", 0))) / 1000)


KIND = StepKind("wait", wait_step)
