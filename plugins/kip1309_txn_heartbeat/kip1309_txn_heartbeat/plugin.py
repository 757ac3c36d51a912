"""Adds the draft's TxnHeartbeat API and InitProducerId v7 to the harness's codec."""

from pathlib import Path

from conformance import hookimpl

SPECS = Path(__file__).with_name("specs")


@hookimpl
def conformance_spec_dirs():
    return [SPECS]


@hookimpl
def conformance_register_emulations(registry):
    # Imported here: the proxy is only needed by runs that use emulate:kip1309+SPEC.
    from .emulation import TxnHeartbeatEmulation

    registry.add("kip1309", TxnHeartbeatEmulation)
