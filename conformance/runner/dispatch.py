"""Running a list of steps: each step through its kind, unless its ``when`` leaves it out.

A step's kind is the first of its keys that names a registered step kind. The innermost step that
departs decides whom the departure blames; an enclosing step that ``verifies`` turns a check's
departure into one of the step under test.
"""

from __future__ import annotations

from ..protocol.schema import VersionRange
from ..suite.kinds import StepKind
from .context import Context, Deviation
from .policy import blame, preparing_steps


def kind_of(step: dict, kinds: dict) -> StepKind | None:
    return next((kinds[key] for key in step if key in kinds), None)


def label(step: dict, index: str, kinds: dict) -> str:
    if "label" in step:
        return f"{index} {step['label']}"
    kind = kind_of(step, kinds)
    if kind is None:
        return f"{index} {next(iter(step), '?')}"
    return f"{index} {kind.keyword} {kind.describe(step)}".rstrip()


def run_steps(context: Context, steps: list[dict], prefix: str = "") -> None:
    """Runs ``steps`` in order; at the top level (no ``prefix``), those that only prepare a later step of the
    API under test run as set-up (:func:`~.policy.preparing_steps`)."""
    if prefix:  # nested steps (until, parallel branches) keep the role of the step around them
        for index, step in enumerate(steps, 1):
            run_step(context, step, f"{prefix}{index}")
        return
    preparing = preparing_steps(context, steps, applies)
    for index, step in enumerate(steps, 1):
        # a control of an observer (observer_control) is never the step under test either, whatever it sends
        context.preparing = index - 1 in preparing or bool(step.get("observer_control"))
        try:
            run_step(context, step, str(index))
        finally:
            context.preparing = False


def run_step(context: Context, step: dict, index: str) -> None:
    if not applies(context, step.get("when")):
        if step.get("send") == context.api and "version" not in step:
            context.progress.left_out.append(f"step {label(step, index, context.step_kinds)} left out by when: "
                                             f"{dict(step['when'])}")
        return
    name = label(step, index, context.step_kinds)
    kind = kind_of(step, context.step_kinds)
    if kind is None:
        raise ValueError(f"step {name}: no step kind handles {sorted(step)}")
    try:
        kind.run(context, step, index, name)
    except Deviation as deviation:
        if step.get("observer_control"):
            observer_departed(context, step, deviation)
        if deviation.role is None:  # the innermost step that departed decides ...
            deviation.role = blame(context, step, deviation)
        elif deviation.role == "check" and step.get("verifies") and not deviation.blind:  # ... unless an enclosing step verifies
            deviation.role = "under_test"
        raise


def applies(context: Context, when: dict | None) -> bool:
    if not when:
        return True
    if "versions" in when and (context.version is None or context.version not in VersionRange.parse(str(when["versions"]))):
        return False
    for feature, condition in (when.get("feature") or {}).items():
        level = context.cluster.finalized_features.get(feature, 0)
        text = str(condition).strip()
        for symbol, compare in ((">=", int.__ge__), ("<=", int.__le__), ("==", int.__eq__), ("<", int.__lt__), (">", int.__gt__)):
            if text.startswith(symbol):
                if not compare(level, int(text[len(symbol):])):
                    return False
                break
        else:
            if level != int(text):
                return False
    if "target" in when and not context.target.spec.startswith(when["target"]):
        return False
    return True


def observer_departed(context: Context, step: dict, deviation: Deviation) -> None:
    """A control of an observer departed (``observer_control``): the check that relies on that observer cannot
    see what it looks for on this target, so it is no evidence either way. The item is blocked, naming the
    observer's finding, never failed on the step under test (issue 35: Tansu's LSO passes an open transaction,
    so a check that reads the LSO cannot tell whether a refused write left one open)."""
    deviation.role = "check" if context.progress.tested else "setup"
    deviation.blind = True
    deviation.observer = str(step["observer_control"])
