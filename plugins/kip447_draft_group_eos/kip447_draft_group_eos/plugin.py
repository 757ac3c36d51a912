"""Adds the draft's group-aware InitProducerId (placeholder v7) to the harness's codec."""

from pathlib import Path

from conformance.hookspecs import hookimpl

SPECS = Path(__file__).with_name("specs")


@hookimpl
def conformance_spec_dirs():
    return [SPECS]
