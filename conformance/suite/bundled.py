"""The built-in step kinds, registered through the same hook a plugin's step kinds use."""

from __future__ import annotations

from conformance.hookspecs import hookimpl

from .steps import BUILTIN_STEP_KINDS


@hookimpl
def conformance_step_kinds():
    return dict(BUILTIN_STEP_KINDS)
