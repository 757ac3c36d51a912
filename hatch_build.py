"""Build hook: a standard wheel carries the harness's data inside the package.

``package-data`` (in pyproject.toml, beside this hook's name) maps repository folders to places in
the package, where :mod:`conformance.resources` finds them through importlib.resources. Editable
installs get nothing: they read the same folders where the repository keeps them.
"""

from __future__ import annotations

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class PackageDataHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel" or version != "standard":
            return
        mapping = self.config.get("package-data") or {}
        if not mapping:
            raise ValueError("hatch_build.py: [tool.hatch.build.targets.wheel.hooks.custom] package-data is empty")
        build_data["force_include"].update(mapping)
