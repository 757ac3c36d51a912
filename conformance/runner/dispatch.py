"""Running a list of steps: each step through its kind, unless its ``when`` leaves it out.

A step's kind is the first of its keys that names a registered step kind (:class:`~conformance.suite.step.Step`, as
the loader builds it, nested steps too; a step written as a plain mapping, by a test or a plugin, is made one here). Each step a departure
leaves is recorded on it (:func:`passed`); :mod:`.verdict` reads from those records whom it blames.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..suite.kinds import StepKind, StepRef
from ..suite.step import Step
from ..suite.when import parse as parse_when
from .context import Context, Departure
from .policy import preparing_steps
from .verdict import Passage


def kind_of(step: Step, kinds: dict) -> StepKind | None:
    """The registered kind that runs ``step``; None where none does."""
    return None if step.kind is None else kinds.get(step.kind)


def label(step: Step, index: str, kinds: dict) -> str:
    """How reports name the step: its place and the suite's label, else its kind's keyword and detail."""
    if step.label is not None:
        return f"{index} {step.label}"
    kind = kind_of(step, kinds)
    if kind is None:
        return f"{index} {next(iter(step), '?')}"
    return f"{index} {kind.keyword} {kind.describe(step)}".rstrip()


def run_steps(context: Context, steps: Sequence[Mapping[str, Any]], prefix: str = "") -> None:
    """Runs ``steps`` in order; at the top level (no ``prefix``), those that only prepare a later step of the
    API under test run as set-up (:func:`~.policy.preparing_steps`)."""
    built = [Step.of(step, context.step_kinds) for step in steps]
    if prefix:  # nested steps (until, parallel branches) keep the role of the step around them
        for index, step in enumerate(built, 1):
            run_step(context, step, f"{prefix}{index}")
        return
    preparing = preparing_steps(context, built, applies)
    context.relied_on.update(step.observed_by for step in built if step.observed_by is not None)
    for index, step in enumerate(built, 1):
        # a control of an observer (observer_control) is never the step under test either, whatever it sends
        context.preparing = index - 1 in preparing or step.observer_control is not None
        try:
            run_step(context, step, str(index))
        finally:
            context.preparing = False
    if context.unobserved and not context.progress.refused:
        # the verdict needed a check its observer could not make: blocked, naming the observer and the check
        departed, check = context.unobserved[0]
        departed.args = (f"{departed.args[0]}; the step under test was not refused, so its verdict needed the check "
                         f"{check!r}, which relies on that observer",)
        raise departed


def run_step(context: Context, written: Mapping[str, Any], index: str) -> None:
    """Runs one step through its kind, unless its ``when`` leaves it out; a departure names the step and whom it
    blames."""
    step = Step.of(written, context.step_kinds)
    kind = kind_of(step, context.step_kinds)
    if not applies(context, step.when):
        if kind is not None and kind.sends(step) == context.api:
            context.progress.left_out.append(f"step {label(step, index, context.step_kinds)} left out by when: "
                                             f"{dict(step.when or {})}")
        return
    name = label(step, index, context.step_kinds)
    if kind is None:
        raise ValueError(f"step {name}: no step kind handles {sorted(step)}")
    if step.observer_control in context.blind_observers:
        return  # the rest of a control that already departed
    if step.observed_by in context.blind_observers:
        context.unobserved.append((context.blind_observers[step.observed_by], name))  # it cannot be made here
        return
    try:
        kind.run(context, step, index, name)
    except Departure as deviation:
        passed(context, deviation, StepRef(index, name), verifies=bool(step.verifies))
        if step.observer_control is not None:
            observer_departed(context, step, deviation)
            if step.observer_control in context.relied_on:
                # only the checks that name this observer rely on it: they are left out, the rest of the case runs
                context.blind_observers[step.observer_control] = deviation
                return
        raise


def passed(context: Context, deviation: Departure, ref: StepRef, *, verifies: bool = False) -> None:
    """Records the step ``deviation`` leaves and what the item knew then: :mod:`.verdict` reads whom it blames."""
    with context.lock:
        tested = context.progress.tested
    deviation.left(Passage(ref, verifies=verifies, under_test=context.under_test(deviation.api, deviation.version),
                           tested=tested))


def applies(context: Context, when) -> bool:
    """Whether a step with this ``when`` runs here (parsed when the suite loaded; a step made elsewhere, by a test
    or a plugin, is parsed now)."""
    if not when:
        return True
    return parse_when(when).holds(context.version, context.cluster.finalized_features, context.target.spec,
                                  context.variables)


def observer_departed(context: Context, step: Step, deviation: Departure) -> None:
    """A control of an observer departed (``observer_control``): the check that relies on that observer cannot
    see what it looks for on this target, so it is no evidence either way. The item is blocked, naming the
    observer's finding, never failed on the step under test (Tansu's LSO passes an open transaction,
    so a check that reads the LSO cannot tell whether a refused write left one open). Where the case names
    the checks that rely on it (``observed_by``), only those are left out: a failure elsewhere stands, and a
    refusal that meets ``refused: or_no_effect`` needs no check of the effect (run_steps)."""
    deviation.blind = True
    deviation.observer = str(step.observer_control)
