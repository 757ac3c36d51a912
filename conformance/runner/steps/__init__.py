"""The built-in step kinds, one module each: its run, and what it checks and nests for the loader.

They register through the ``conformance_register_step_kinds`` hook like a plugin's
(``conformance.extension.builtin``); :func:`bundled` is the harness without any plugin. A new built-in
kind is a module here with a ``KIND``, listed below.
"""

from __future__ import annotations

from ...protocol.codec import default_codec
from ...suite.components import Components
from ...suite.kinds import StepKind
from . import fast_forward, fault, fetch, parallel, pipeline, produce, send, until, wait

# In the order the suite format reference lists them.
BUILTIN_STEP_KINDS: dict[str, StepKind] = {module.KIND.keyword: module.KIND for module in
                                           (send, produce, fetch, wait, until, parallel, pipeline, fault,
                                            fast_forward)}


def bundled() -> Components:
    """The codec and step kinds of the harness without any plugin (no extra matchers)."""
    return Components(default_codec(), BUILTIN_STEP_KINDS)
