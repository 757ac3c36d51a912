"""Step templates: ``templates/*.yaml`` files of named step lists with ``params``, and their expansion
where a suite's step says ``use: NAME`` with ``with: {param: value}``.

The bundled templates come first, then every ``templates/`` folder above a suite file or beside it
(nearest wins). What a ``use:`` step says about the outcome (``expect``, ``save``, ``retry``,
``timeout_ms``) applies to the template's last step; its ``when`` to every step. Expanded steps
remember the suite step they come from, so later errors point at the suite's line.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .. import resources
from . import expressions
from .source import SuiteError, _Mapping, _Sequence, line_of, read_yaml

TEMPLATE_DIR = "templates"
BUNDLED_TEMPLATES = resources.templates()
LAST_STEP_KEYS = ("expect", "save", "retry", "timeout_ms")  # given on a `use:` step, they apply to its last step
TEMPLATE_KEYS = ("params", "steps")
# given on a `use:` step, they apply to every step of its template
EVERY_STEP_KEYS = ("when", "observer_control")
USE_STEP_KEYS = ("use", "with", "label", *EVERY_STEP_KEYS, *LAST_STEP_KEYS)  # anything else on a `use:` step would be dropped


def load_templates(directory: Path) -> tuple[dict[str, dict], list[SuiteError]]:
    """``templates/*.yaml`` files: ``templates: {name: {params: [...], steps: [...]}}``."""
    templates: dict[str, dict] = {}
    errors: list[SuiteError] = []
    for path in sorted(directory.glob("*.yaml")):
        document, problem = read_yaml(path)
        if problem:
            errors.append(problem)
            continue
        if not isinstance(document, dict) or not isinstance(document.get("templates"), dict):
            errors.append(SuiteError(str(path), 1, "templates", "a template file holds a 'templates' mapping"))
            continue
        for key in document:
            if key != "templates":
                errors.append(SuiteError(str(path), line_of(document, [key]), str(key),
                                         "unknown key (a template file holds only 'templates')"))
        for name, template in document["templates"].items():
            if not isinstance(template, dict) or not isinstance(template.get("steps"), list):
                errors.append(SuiteError(str(path), line_of(document, ["templates", name]), f"templates.{name}",
                                         "a template needs 'steps' (a list)"))
                continue
            for key in template:
                if key not in TEMPLATE_KEYS:
                    errors.append(SuiteError(str(path), line_of(document, ["templates", name, key]),
                                             f"templates.{name}.{key}",
                                             f"unknown key (a template takes: {', '.join(TEMPLATE_KEYS)})"))
            templates[name] = {"params": list(template.get("params", [])), "steps": template["steps"],
                               "path": str(path), "line": line_of(document, ["templates", name])}
    return templates, errors


def templates_for(path: Path, cache: dict) -> tuple[dict, list[SuiteError]]:
    """The bundled templates, then every ``templates/`` folder above the file or beside it (nearest wins).

    The bundled ones come first so that suites kept elsewhere (a plugin's) can build on them."""
    merged: dict = {}
    errors: list[SuiteError] = []
    nearby = [folder / TEMPLATE_DIR for folder in reversed([path.parent, *list(path.parents)[1:4]])]
    for candidate in dict.fromkeys([BUNDLED_TEMPLATES, *nearby]):
        if candidate.is_dir():
            if candidate not in cache:
                cache[candidate] = load_templates(candidate)
            found, problems = cache[candidate]
            merged.update(found)
            errors.extend(problems)
    return merged, errors


def substitute_params(value, params: dict):
    """Replace ``${with.NAME}`` in a template body with the caller's arguments (before run time)."""
    if isinstance(value, str):
        return expressions.substitute_prefix(value, "with", params)
    if isinstance(value, dict):
        copy = _Mapping({key: substitute_params(item, params) for key, item in value.items()})
        copy.line, copy.key_lines = getattr(value, "line", 0), getattr(value, "key_lines", {})
        return copy
    if isinstance(value, list):
        items = _Sequence(substitute_params(item, params) for item in value)
        items.line, items.item_lines = getattr(value, "line", 0), getattr(value, "item_lines", [0] * len(value))
        return items
    return value


def _located(step: dict, origin: list, template: str | None) -> _Mapping:
    """A copy of an expanded step that knows where the suite wrote it, for the lines of later errors."""
    located = _Mapping(step)
    located.line, located.key_lines = getattr(step, "line", 0), getattr(step, "key_lines", {})
    located.origin, located.template, located.given = origin, template, getattr(step, "given", frozenset())
    return located


def expand_templates(steps: list, templates: dict, report, path: list, depth: int = 0,
                     origin: list | None = None, within: str | None = None, kinds: Mapping | None = None) -> list:
    """Steps with every ``use:`` replaced by its template's steps.

    ``origin`` is the suite's step a template body comes from: a template has no lines of its own in
    the suite, so its steps' errors point there. ``within`` names the template being expanded."""
    expanded = []
    for index, step in enumerate(steps):
        where = origin or [*path, index]
        if not isinstance(step, dict):
            expanded.append(step)
            continue
        kind = next((kinds[key] for key in step if key in kinds), None) if kinds else None
        nested = kind.nested(step) if kind is not None else []
        if kind is not None and nested:  # templates inside parallel branches and until bodies expand too
            step = kind.with_nested(step, [
                # a lone nested step (until: {step: ...}) has no list index of its own: errors point at it
                expand_templates(body, templates, report, [*where, *inner], depth,
                                 origin or ([*where, *inner] if inner[-1] == "step" else None), within, kinds)
                for inner, body in nested])
        if "use" not in step:
            expanded.append(_located(step, where, within))
            continue
        name = step["use"]
        for key in step:
            if key not in USE_STEP_KEYS:
                report([*where, key], f"unknown key on a use: step: the template's steps never see it (a use: step "
                                      f"takes {', '.join(USE_STEP_KEYS)}; put {key} in the template)")
        template = templates.get(name)
        if template is None:
            report(where + ["use"], f"unknown step template {name!r}; known: {', '.join(sorted(templates)) or 'none'}")
            continue
        arguments = dict(step.get("with") or {})
        missing = [param for param in template["params"] if param not in arguments]
        unknown = [argument for argument in arguments if argument not in template["params"]]
        if missing:
            report(where + ["with"], f"template {name!r} needs {', '.join(missing)}")
        if unknown:
            report(where + ["with"], f"template {name!r} takes no {', '.join(unknown)} "
                                     f"(its params: {', '.join(template['params'])})")
        if depth > 8:
            report(where + ["use"], f"template {name!r} nests too deep (a template using itself?)")
            continue
        body = expand_templates(substitute_params(template["steps"], arguments), templates, report, where,
                                depth + 1, where, name, kinds)
        if not body:
            continue
        # What the using step says about the outcome applies to the template's last step. The body's
        # steps are fresh copies (see _located), so they are updated in place.
        overrides = {key: step[key] for key in LAST_STEP_KEYS if key in step}
        if overrides and isinstance(body[-1], _Mapping):
            last = body[-1]
            if isinstance(last.get("save"), dict) and isinstance(overrides.get("save"), dict):
                overrides["save"] = {**last["save"], **overrides["save"]}  # add names, keep the template's
            last.update(overrides)
            if within is None:  # a use: step of the suite itself
                last.given = last.given | set(overrides)
        for inner in body:
            for key in EVERY_STEP_KEYS:
                if isinstance(inner, _Mapping) and key in step:
                    inner[key] = step[key]
                    if within is None:
                        inner.given = inner.given | {key}
            expanded.append(inner)
    return expanded
