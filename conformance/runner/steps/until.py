"""The ``until`` step: repeat one step (``step:``) or a sequence (``steps:``) until its expectations hold,
or fail with its last departure once ``for_ms`` has passed.

One step repeated asks the same question each time, so a departure that waiting cannot change ends it
at once; a sequence may ask another question each time round (a new offset) and is repeated, unless the
target left a request unanswered for the step's whole time (asking again would wait as long).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from ...suite import expressions
from ...suite.kinds import StepKind
from .. import verdict
from ..context import Context, Departure
from ..dispatch import run_step, run_steps
from ..pacing import pause


def until_step(context: Context, step: dict, index: str, name: str) -> None:
    """Repeat a step until its expectations hold, or fail with its last deviation."""
    until = step["until"]
    # a broker's timer is waited for as the target has it set: ``for_ms`` may be an expression over ${config.*}
    deadline = time.monotonic() + int(expressions.resolve(until.get("for_ms", 5_000), context.variables)) / 1000
    while True:
        try:
            if "steps" in until:  # a whole sequence, repeated from its start
                run_steps(context, until["steps"], f"{index}(until).")
            else:
                run_step(context, until["step"], f"{index}(until)")
            return
        except Departure as deviation:
            final = verdict.no_use_waiting(deviation, one_step="step" in until)
            if final:
                deviation.args = (f"{deviation.args[0]} (no use waiting: {final})",)
                raise
            if time.monotonic() > deadline:
                raise
            pause(until.get("interval_ms", 200) / 1000)


def _until_nested(step: Mapping):
    until = step["until"] if isinstance(step.get("until"), Mapping) else {}
    if isinstance(until.get("step"), Mapping):  # a step as written, or as built (a Step)
        return [(("until", "step"), [until["step"]])]
    if isinstance(until.get("steps"), list):
        return [(("until", "steps"), until["steps"])]
    return []


def _until_with(step: dict, expanded: list[list]) -> dict:
    until = {key: value for key, value in step["until"].items() if key not in ("step", "steps")}
    [body] = expanded
    # a template that expands to several steps is repeated as a whole sequence
    until.update({"step": body[0]} if "step" in step["until"] and len(body) == 1 else {"steps": body})
    return {**step, "until": until}


KIND = StepKind("until", until_step, nested=_until_nested, with_nested=_until_with)
