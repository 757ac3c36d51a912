"""The package's public API (``conformance.__all__``): what plugin authors import, documented in the plugin how-to,
and what the bundled plugins use instead of the harness's own modules."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import conformance

ROOT = Path(__file__).resolve().parents[2]


def test_every_public_name_resolves_to_the_object_of_its_module():
    assert set(conformance.__all__) == {"__version__", *conformance._PUBLIC}
    for name, (module, attribute) in conformance._PUBLIC.items():
        found = __import__(module, fromlist=["_"])
        assert getattr(conformance, name) is (found if attribute is None else getattr(found, attribute)), name


def test_importing_the_package_imports_none_of_its_layers():
    """The command line and pytest import ``conformance`` first: the public names cost nothing until used."""
    loaded = subprocess.run([sys.executable, "-c", "import sys, conformance; "
                             "print(sorted(name for name in sys.modules if name.startswith('conformance.')))"],
                            capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert loaded.strip() == "[]"


def test_every_public_class_function_and_method_says_what_it_does():
    """A plugin author reads these in an editor: each public callable of the API has a docstring (a dataclass's
    fields, ``StepKind``'s callables among them, are described in the class's own)."""
    undocumented = []
    for name in conformance.__all__:
        found = getattr(conformance, name)
        if not (inspect.isclass(found) or inspect.isfunction(found)):
            continue
        if not inspect.getdoc(found):
            undocumented.append(name)
        if inspect.isclass(found) and not issubclass(found, BaseException):
            for attribute, value in vars(found).items():
                function = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
                if not attribute.startswith("_") and inspect.isfunction(function) and not function.__doc__ \
                        and attribute not in getattr(found, "__dataclass_fields__", {}):
                    undocumented.append(f"{name}.{attribute}")
    assert undocumented == []


def test_the_plugin_how_to_names_every_public_name():
    page = (ROOT / "docs" / "how-to" / "write-a-plugin.md").read_text(encoding="utf-8")
    missing = [name for name in conformance.__all__ if f"`{name}`" not in page]
    assert missing == [], "public names the plugin how-to does not describe"


def test_the_bundled_plugins_import_the_harness_through_its_public_api_only():
    deep = []
    for path in sorted(ROOT.glob("plugins/*/*/*.py")):
        if "tests" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("conformance."):
                deep.append(f"{path.relative_to(ROOT)}:{node.lineno} from {node.module}")
            if isinstance(node, ast.Import):
                deep += [f"{path.relative_to(ROOT)}:{node.lineno} import {alias.name}" for alias in node.names
                         if alias.name.startswith("conformance.")]
    assert deep == []
