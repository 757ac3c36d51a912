"""The ``pipeline`` step: several requests on one connection of its own, all sent before any answer is read, then
each answer checked in order, as its own ``send`` step would check it.

It is how a case races requests inside a broker: the second request is in flight while the first is handled (a
commit and an abort of one transaction, two fencing InitProducerIds). Kafka answers the requests of one connection
in the order they were sent; the harness reads each answer by its correlation id. The requests are sent at once,
so a later one cannot use what an earlier one's answer saves (``save`` is for the steps after the pipeline), and
none is retried or sent at another version.

Its requests are ``send`` steps nested in it: the walkers of a case's steps (set-up roles, coverage, citations,
scheduling) see them through the send kind, with no word about pipelines.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...suite import expressions
from ...suite.kinds import Facts, StepKind, StepRef
from ...suite.step import Step
from ..context import Context, Departure, attributed
from ..dispatch import label, passed
from ..exchange import answer, connection_for, judge, transmit, wait_s
from ..expect import save
from ..policy import step_version

# what a pipelined request may say: the rest of a send step's keys (a connection, a retry, a control, a principal,
# a condition) would make it another request than one of several in flight on one connection
PIPELINED_KEYS = ("send", "fields", "expect", "save", "label", "version", "timeout_ms")


def pipeline_step(context: Context, step: Mapping, index: str, name: str) -> None:
    registry = context.cluster.codec.registry
    prepared = []
    for number, inner in enumerate(step["pipeline"], 1):
        api = registry.api_name(inner["send"])
        version = step_version(context, inner, api)
        fields = expressions.resolve(inner.get("fields") or {}, {**context.variables, "version": version})
        prepared.append((StepRef(f"{index}.{number}", label(Step.of(inner, context.step_kinds), f"{index}.{number}",
                                                             context.step_kinds)), inner, api, version, fields))
    _, _, first_api, _, first_fields = prepared[0]
    # one connection of its own: no other step's request comes between, and it goes where the first request belongs
    connection = connection_for(context, step, first_api, first_fields, fresh=True)
    try:
        in_flight = []
        for ref, inner, api, version, fields in prepared:
            with _named(context, ref), attributed(api, version):  # stamped with its request, then named
                in_flight.append(transmit(context, connection, inner, ref.label, api, version, fields))
        for (ref, inner, api, version, fields), sent in zip(prepared, in_flight):
            expect = expressions.resolve(inner.get("expect") or {}, context.variables)
            with _named(context, ref), attributed(api, version):  # stamped with its request, then named
                response = answer(context, connection, sent, inner, ref.label, api, version, wait_s(inner, api, fields))
                judge(context, ref.label, api, version, response, expect)
            if response is not None:
                save(context, response, inner.get("save"))
    finally:
        connection.close()


class _named:
    """Records the pipelined request a departure comes from as the innermost step it left."""

    def __init__(self, context: Context, ref: StepRef):
        self.context, self.ref = context, ref

    def __enter__(self):
        return self

    def __exit__(self, kind, error, trace):
        if isinstance(error, Departure):
            passed(self.context, error, self.ref)
        return False


def check_pipeline(step: Mapping, report, where: list, facts: Facts) -> None:
    """Two requests at least, each a send step with only what a request in flight can say."""
    requests = step.get("pipeline")
    if not isinstance(requests, list) or len(requests) < 2:
        report([*where, "pipeline"], "a pipeline is a list of two or more send steps")
        return
    for number, inner in enumerate(requests):
        if not isinstance(inner, Mapping) or "send" not in inner:
            report([*where, "pipeline", number], "a pipelined request is a send step (send: API, fields, expect)")
            continue
        for key in inner:
            if key not in PIPELINED_KEYS:
                report([*where, "pipeline", number, key], f"not for a pipelined request (it takes: "
                                                          f"{', '.join(PIPELINED_KEYS)})")


def _nested(step: Mapping):
    requests = step.get("pipeline")
    return [(("pipeline",), requests)] if isinstance(requests, list) else []


KIND = StepKind("pipeline", pipeline_step, check=check_pipeline, nested=_nested,
                with_nested=lambda step, expanded: {**step, "pipeline": expanded[0]},
                describe=lambda step: f"{len(step['pipeline'])} requests" if isinstance(step.get("pipeline"), list)
                else "")
