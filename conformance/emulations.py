"""Registers the ``emulate:DRAFT+SPEC`` target kind (bundled, through the same hook as any plugin).

It sits beside the composition root because the kind is assembled from what plugins provide: the
emulations (``conformance_emulations``), the codec with their spec overlays and the other target kinds.
"""

from __future__ import annotations

from .hookspecs import hookimpl
from .targets.emulated import emulate_target_kind


def emulations() -> dict:
    from .plugins import merged_mapping

    return merged_mapping("conformance_emulations")


def _codec():
    from .plugins import codec_with_plugins

    return codec_with_plugins()


def _inner_kinds():
    from .plugins import target_kinds

    return target_kinds()


@hookimpl
def conformance_target_kinds():
    return [emulate_target_kind(_inner_kinds, emulations, _codec)]
