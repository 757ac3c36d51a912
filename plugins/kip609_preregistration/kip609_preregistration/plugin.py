"""Adds the draft's AddPartitionsToTxn and EndTxn (placeholder v6 of each) to the harness's codec."""

from pathlib import Path

from conformance.hookspecs import hookimpl

SPECS = Path(__file__).with_name("specs")


@hookimpl
def conformance_spec_dirs():
    return [SPECS]
