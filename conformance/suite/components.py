"""What the suite layer works with: a codec, step kinds and matchers, handed to it from above.

The run's plugins (``conformance.extension``) provide them; the suite layer never
reaches up to the plugin manager, nor to the runner: ``conformance.runner.steps.bundled()`` is the
harness without any plugin.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable, Mapping

from ..protocol.codec import Codec
from .kinds import StepKind


@dataclass(frozen=True)
class Components:
    codec: Codec
    step_kinds: Mapping[str, StepKind]
    matchers: Mapping[str, Callable] = field(default_factory=dict)  # extra matchers, by name

    @functools.cached_property
    def api_names(self) -> dict[str, list[int]]:
        """Every API the codec knows, with its versions."""
        return {api.name: api.versions() for api in self.codec.registry.apis()}

    @functools.cached_property
    def requests(self) -> dict:
        """The request spec of every API, for checking the field names suites send."""
        return {api.name: api.request for api in self.codec.registry.apis()}
