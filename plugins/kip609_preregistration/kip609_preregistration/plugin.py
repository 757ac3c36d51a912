"""Adds the draft's AddPartitionsToTxn and EndTxn (placeholder v6 of each) to the harness's codec."""

from pathlib import Path

from conformance import hookimpl

SPECS = Path(__file__).with_name("specs")


@hookimpl
def conformance_spec_dirs():
    return [SPECS]


@hookimpl
def conformance_register_emulations(registry):
    # Imported here: the proxy is only needed by runs that use emulate:kip609+SPEC.
    from .emulation import PreregistrationEmulation

    registry.add("kip609", PreregistrationEmulation)
