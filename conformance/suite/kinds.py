"""Step kinds: everything the harness knows about one kind of suite step, in one object.

The loader asks a kind for the step lists nested in a step (to expand templates in them and check
them) and for its own semantic checks; the runner asks it to run the step; reports ask it for a
short description. What a step means is the kind's to declare: the requests it sends and judges
(:class:`Request`), the steps nested in it, the faults it asks for (:class:`Fault`) and whether it treats
the target roughly or sends what a broker may not survive. Everything that reads a case's steps (the
runner's preparing-step roles, the coverage document, the citation checks, scheduling) walks them through
their kinds (:mod:`conformance.suite.walk`), so a new kind that declares these is seen everywhere.

This module is the contract both sides see: the suite format (loader, checks) asks a kind about its shape, the
runner (``conformance.runner``) runs it. The built-in kinds (send, produce, fetch, wait, until, parallel, pipeline,
fault, fast_forward; ``conformance.runner.steps``, one module each) register
through the ``conformance_register_step_kinds`` hook like a plugin's, and the JSON Schema still describes
every kind's keys for editors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

if TYPE_CHECKING:
    from ..protocol.schema import MessageSpec, VersionRange

# (path inside the step, the step list there): the lists a loader expands and checks
Nested = list[tuple[tuple, list]]


def _none(step: Mapping) -> Nested:
    return []


def _unchanged(step: dict, expanded: list[list]) -> dict:
    return step


@dataclass(frozen=True)
class Facts:
    """What the loader knows when it checks a step, for a kind's ``check``: None where it does not know."""

    api_names: Mapping[str, list[int]] | None = None  # every API the codec knows, with its versions
    requests: "Mapping[str, MessageSpec] | None" = None  # each API's request spec, for the field names a step sends
    under_test: "tuple[str, VersionRange] | None" = None  # the case's API under test and its versions


@dataclass(frozen=True)
class StepRef:
    """Which step of a case: its place as the runner numbers it (``3``, ``2.1.1`` inside a parallel branch,
    ``3(until).2`` inside an until) and its label as reports show it (``3 send EndTxn``). The runner hands it on
    with a departure, so nothing parses it back out of a message."""

    index: str
    label: str

    @property
    def number(self) -> int:
        """The case's top-level step it is in (``3`` for ``3(until).2``); 0 where not known."""
        head = self.index.split(".", 1)[0].split("(", 1)[0]
        return int(head) if head.isdigit() else 0


def _nothing_to_check(step: dict, report: Callable, where: list, facts: Facts) -> None:
    return None


@dataclass(frozen=True)
class Request:
    """A request a step sends and judges itself (not one nested in it, nor set-up it sends as a client would)."""

    api: str  # the API as the step names it
    version: Any = None  # the version the step pins it to, as written (``3``, ``max``); None: the case's or the client's
    expect: Mapping = field(default_factory=dict)  # what the answer is checked against, with the kind's defaults
    # the topics it names by the id the harness learnt from Metadata (``${topic_ids.NAME}``): each NAME, so that a
    # zero id the broker gave is charged to Metadata before the request goes out (conformance.runner.observe)
    topic_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Fault:
    """A fault a step asks the target for, as written: its name (or an expression giving it) and arguments."""

    name: Any
    args: Mapping = field(default_factory=dict)


def _no_requests(step: Mapping) -> Sequence[Request]:
    return ()


def _no_faults(step: Mapping) -> Sequence[Fault]:
    return ()


def _never(step: Mapping) -> bool:
    return False


@dataclass(frozen=True)
class StepKind:
    keyword: str  # the key that makes a step this kind (``send: EndTxn``)
    # run(context, step, index, label): raises Departure, Skip or Incomplete. A kind that sends and judges a request
    # records each expectation it checked (``context.checked``; the runner's ``exchange.judge`` does both): an item
    # whose step under test records none ends ERROR, "the step under test never ran", since it proved nothing
    run: Callable
    describe: Callable[[Mapping], str] = lambda step: ""  # the detail after the keyword in a step's label
    nested: Callable[[Mapping], Nested] = _none
    with_nested: Callable[[dict, list[list]], dict] = _unchanged  # the step with its nested lists replaced
    # check(step, report(where, message), where, facts): what the schema cannot know about a step of this kind
    check: Callable[[dict, Callable, list, Facts], None] = _nothing_to_check
    # parse(step): the step's own arguments as a frozen dataclass, parsed once at load (a built Step keeps them as
    # ``parsed``; :meth:`parsed` reads them); ValueError for what the schema let through, reported with its line.
    # Expressions (``${...}``) stay as written: they are resolved when the step runs. None: the kind reads ``args``.
    parse: Callable[[Mapping], Any] | None = None
    # What a step of this kind means, read from the step alone (its nested steps declare their own):
    requests: Callable[[Mapping], Sequence[Request]] = _no_requests  # the requests it sends and judges
    faults: Callable[[Mapping], Sequence[Fault]] = _no_faults  # the faults it asks the target for
    # treats the target roughly (malformed frames, expected disconnects, refusals or silence, faults): the target
    # is checked to still answer after each of the case's items
    rough: Callable[[Mapping], bool] = _never
    # sends what a broker may not survive (a malformed frame, raw bytes, a request answered by closing the
    # connection): the case's items run after every other item of the target, one at a time; rough too
    hazard: Callable[[Mapping], bool] = _never

    def parsed(self, step: Mapping) -> Any:
        """The step's arguments as :attr:`parse` makes them: kept by a step the loader built, parsed now for one
        written elsewhere (a test's, a plugin's)."""
        kept = getattr(step, "parsed", None)
        return kept if kept is not None or self.parse is None else self.parse(step)

    def sends(self, step: Mapping) -> str | None:
        """The API a step of this kind sends at the version under test (None where it pins another version, or
        sends no request of its own): a step under test that a ``when`` leaves out is named in the diagnosis."""
        return next((request.api for request in self.requests(step) if request.version is None), None)


def as_step_kind(keyword: str, provided) -> StepKind:
    """A plugin's step kind: a StepKind, or (older plugins) a plain ``callable(step, context)`` that gets the
    step with its expressions resolved."""
    if isinstance(provided, StepKind):
        return provided
    if not callable(provided):
        raise TypeError(f"step kind {keyword!r} is neither a StepKind nor callable: {provided!r}")

    def run(context, step, index, label):
        from . import expressions

        provided(expressions.resolve(dict(step), context.variables), context)

    return StepKind(keyword=keyword, run=run)


def detail_from(key: str) -> Callable[[Mapping], str]:
    """A ``describe`` that shows the step's value when it is a name (``send: EndTxn`` -> ``EndTxn``)."""
    return lambda step: step[key] if isinstance(step.get(key), str) else ""
