"""Load YAML suites into :mod:`model` objects, reporting every problem with file, line and key.

A suite file is checked in three passes: YAML syntax, the JSON Schema (``suite.schema.json``, the
same file editors use to validate as you type), then what a schema cannot know: API names, error
names, version ranges, step templates and ``${...}`` expressions. A broken file yields errors and
never stops the other files from loading.
"""

from __future__ import annotations

import difflib
import json
import re
from functools import lru_cache
from pathlib import Path

import yaml

from .. import resources
from ..protocol.errors import error_by_name
from ..protocol.exceptions import SpecError
from ..protocol.schema import FieldSpec, MessageSpec, VersionRange
from . import expressions, internals
from .components import Components
from .model import Case, Requirement, Suite

SCHEMA_PATH = resources.suite_schema()
TEMPLATE_DIR = "templates"
BUNDLED_TEMPLATES = resources.templates()
LAST_STEP_KEYS = ("expect", "save", "retry", "timeout_ms")  # given on a `use:` step, they apply to its last step
TEMPLATE_KEYS = ("params", "steps")
USE_STEP_KEYS = ("use", "with", "when", "label", *LAST_STEP_KEYS)  # anything else on a `use:` step would be dropped
SEND_EXPECT_KEYS = ("error_code", "fields", "disconnect", "no_response", "refused")  # fetch steps may also check their summary


class SuiteError(Exception):
    def __init__(self, path: str, line: int, key: str, message: str):
        super().__init__(f"{path}:{line}: {key}: {message}")
        self.path, self.line, self.key, self.message = str(path), line, key, message


# ------------------------------------------------------------------------------ YAML with lines
class _Mapping(dict):
    line = 0
    key_lines: dict
    # On an expanded step: where the suite wrote it (a template's steps: the `use:` step), the template
    # it comes from, and the keys the suite's `use:` step gave it (the schema checked those already).
    origin: list | None = None
    template: str | None = None
    given: frozenset = frozenset()


class _Sequence(list):
    line = 0
    item_lines: list


class _LineLoader(yaml.SafeLoader):
    """Keeps the line of every mapping, key and list item (1-based) for error messages."""

    def construct_mapping(self, node, deep=False):
        mapping = _Mapping(super().construct_mapping(node, deep=True))
        mapping.line = node.start_mark.line + 1
        mapping.key_lines = {self.construct_object(key, deep=True): key.start_mark.line + 1
                             for key, _ in node.value}
        return mapping

    def construct_sequence(self, node, deep=False):
        sequence = _Sequence(super().construct_sequence(node, deep=True))
        sequence.line = node.start_mark.line + 1
        sequence.item_lines = [item.start_mark.line + 1 for item in node.value]
        return sequence


# YAML 1.1 reads on/off/yes/no as booleans, which turns `retry: {on: [...]}` into {True: [...]}.
# Suites are YAML 1.2-like here: only true/false are booleans.
_LineLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_LineLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                  list("tTfF"))
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _LineLoader.construct_mapping)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _LineLoader.construct_sequence)


def line_of(document, path) -> int:
    """The line of the deepest node on ``path`` (keys and indexes) that the document knows."""
    node, line = document, getattr(document, "line", 1)
    for part in path:
        if isinstance(node, _Mapping) and part in node:
            line = node.key_lines.get(part, line)
            node = node[part]
        elif isinstance(node, _Sequence) and isinstance(part, int) and part < len(node):
            line = node.item_lines[part]
            node = node[part]
        else:
            break
    return line


def dotted(path) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top)"


@lru_cache(maxsize=1)
def _validator():
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text())
    return jsonschema.Draft202012Validator(schema)


# ------------------------------------------------------------------------------ templates
def load_templates(directory: Path) -> tuple[dict[str, dict], list[SuiteError]]:
    """``templates/*.yaml`` files: ``templates: {name: {params: [...], steps: [...]}}``."""
    templates: dict[str, dict] = {}
    errors: list[SuiteError] = []
    for path in sorted(directory.glob("*.yaml")):
        document, problem = _read_yaml(path)
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


def _templates_for(path: Path, cache: dict) -> tuple[dict, list[SuiteError]]:
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
        copy = _Sequence(substitute_params(item, params) for item in value)
        copy.line, copy.item_lines = getattr(value, "line", 0), getattr(value, "item_lines", [0] * len(value))
        return copy
    return value


def _located(step: dict, origin: list, template: str | None) -> _Mapping:
    """A copy of an expanded step that knows where the suite wrote it, for the lines of later errors."""
    located = _Mapping(step)
    located.line, located.key_lines = getattr(step, "line", 0), getattr(step, "key_lines", {})
    located.origin, located.template, located.given = origin, template, getattr(step, "given", frozenset())
    return located


def expand_templates(steps: list, templates: dict, report, path: list, depth: int = 0,
                     origin: list | None = None, within: str | None = None, kinds: dict | None = None) -> list:
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
        if nested:  # templates inside parallel branches and until bodies expand too
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
            if isinstance(inner, _Mapping) and "when" in step:
                inner["when"] = step["when"]
                if within is None:
                    inner.given = inner.given | {"when"}
            expanded.append(inner)
    return expanded


# ------------------------------------------------------------------------------ semantic checks
def _check_versions(value, report, where) -> VersionRange | None:
    try:
        return VersionRange.parse(value, where="")
    except SpecError:
        report(where, f"bad version range {value!r} (use N, N+, N-M or none)")
        return None


def is_version_map(value) -> bool:
    return isinstance(value, dict) and bool(value) and all(
        isinstance(key, (str, int)) and _is_range_text(str(key)) for key in value)


def _is_range_text(text: str) -> bool:
    try:
        VersionRange.parse(text)
        return text != "none"
    except SpecError:
        return False


def _check_error_names(value, report, where) -> None:
    if is_version_map(value):
        for key, item in value.items():
            _check_error_names(item, report, [*where, key])
        return
    if isinstance(value, dict):  # matchers: {ne: NONE}, {any_of: [...]}
        for operator, argument in value.items():
            _check_error_names(argument, report, [*where, operator])
        return
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, int) or (isinstance(item, str) and item.startswith("${")):
            continue
        try:
            error_by_name(str(item))
        except KeyError as error:
            report(where, str(error.args[0] if error.args else error))


def _known_matchers(components: Components) -> set[str]:
    from .matchers import BUILTIN_MATCHERS

    return {*BUILTIN_MATCHERS, *components.matchers}


def _did_you_mean(name, choices) -> str:
    close = difflib.get_close_matches(str(name), sorted(map(str, choices)), n=1)
    return f"; did you mean {close[0]}?" if close else ""


def _check_matchers(expected, known: set[str], report, where) -> None:
    """``{matcher: argument}`` values (or per-version maps of them) name known matchers only."""
    if not isinstance(expected, dict):
        return
    if is_version_map(expected):
        for key, item in expected.items():
            _check_matchers(item, known, report, [*where, key])
        return
    for name in expected:
        if name not in known:
            report([*where, name], f"unknown matcher {name!r}{_did_you_mean(name, known)} "
                                   f"(known: {', '.join(sorted(known))})")


def _check_expect_fields(fields, known: set[str], report, where) -> None:
    if is_version_map(fields):  # {"0-3": {path: matcher}, "4+": {...}}
        for key, item in fields.items():
            if isinstance(item, dict):
                _check_expect_fields(item, known, report, [*where, key])
        return
    for path, expected in fields.items():
        _check_matchers(expected, known, report, [*where, path])


def _span(versions: list[int]) -> str:
    return f"v{versions[0]}" if len(versions) == 1 else f"v{versions[0]}-v{versions[-1]}"


def _check_request_fields(values: dict, fields: list[FieldSpec], spec: MessageSpec, versions: list[int],
                          report, where) -> None:
    """Every name in ``values`` is a field of ``spec`` in at least one of ``versions``, nested structs too.

    The codec ignores names it does not know, so a misspelt field would be sent with its default."""
    for name, value in values.items():
        at = [*where, name]
        named = [field for field in fields if field.attribute == name]
        present = [field for field in named if any(version in field.versions for version in versions)]
        if not present:
            if named:
                report(at, f"{spec.name} has {name} only in versions "
                           f"{', '.join(str(field.versions) for field in named)}, not in {_span(versions)} "
                           "that this step sends")
            else:
                report(at, f"unknown field of {spec.name}{_did_you_mean(name, {f.attribute for f in fields})}")
            continue
        field = present[0]
        if not field.is_struct:
            continue
        children = field.fields if field.fields is not None else spec.struct(field.element_type, name).fields
        inner_versions = [version for version in versions if version in field.versions]
        items = enumerate(value) if field.is_array and isinstance(value, list) else [(None, value)]
        for item_index, item in items:
            # {hex: ...} and {raw_hex: ...} stand for the encoded value itself, not for a struct
            if isinstance(item, dict) and set(item) not in ({"hex"}, {"raw_hex"}):
                _check_request_fields(item, children, spec, inner_versions, report,
                                      at if item_index is None else [*at, item_index])


def _sent_versions(step: dict, api: str, spec: MessageSpec, under_test) -> list[int]:
    """The versions of ``api`` this send step can go out at."""
    versions = spec.versions()
    wanted = step.get("version")
    if isinstance(wanted, int) and not isinstance(wanted, bool):
        return [wanted] if wanted in versions else []  # a version beyond the specs is reported elsewhere
    if wanted is None and under_test is not None and under_test[0] == api:
        return [version for version in versions if version in under_test[1]]
    return versions  # the client's choice, or min/max/an expression


@lru_cache(maxsize=1)
def _step_validator():
    """The schema of one step, for the steps templates add (template files are not checked by the schema)."""
    import jsonschema

    schema = _validator().schema
    return jsonschema.Draft202012Validator({"$schema": schema["$schema"], "$defs": schema["$defs"],
                                            "$ref": "#/$defs/step"})


def _report_schema_errors(validator, instance, report, base: list) -> None:
    for error in sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path))):
        where = [*base, *error.absolute_path]
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = set(error.schema.get("properties", {}))
            for key in error.instance:
                if key not in allowed:
                    report([*where, key], f"unknown key (allowed: {', '.join(sorted(allowed))})")
            continue
        report(where, error.message)


def check_steps(steps, report, path, api_names: dict[str, list[int]] | None,
                requests: dict[str, MessageSpec] | None = None, under_test: tuple | None = None,
                in_template_step: bool = False, components: Components | None = None) -> None:
    """What the schema cannot check in (expanded) steps. ``requests`` holds the request spec of each API
    for checking field names; ``under_test`` is the case's (API, VersionRange). ``in_template_step``: the
    steps are inside a template's until or parallel step, whose schema check covered them."""
    suite_report = report
    for index, step in enumerate(steps):
        where = getattr(step, "origin", None) or [*path, index]
        template = getattr(step, "template", None)
        given: frozenset = getattr(step, "given", frozenset())

        def report(at, message, template=template, given=given, where=where):  # noqa: E306
            # Keys the template wrote are not on the suite's line: say which template they come from.
            inner = at[len(where):]
            if template is not None and not (inner and inner[0] in given):
                message = f"{message} (in template {template!r})"
            suite_report(at, message)

        if not isinstance(step, dict):
            report(where, "a step must be a mapping")
            continue
        kinds = components.step_kinds
        known = set(_validator().schema["$defs"]["step"]["properties"]) | set(kinds)
        for key in step:
            if key not in known:
                report([*where, key], f"unknown key (a step takes: {', '.join(sorted(known))})")
        if template is not None and not in_template_step:  # the suite's own steps went through the schema
            _report_schema_errors(_step_validator(), {k: v for k, v in step.items() if k not in given and k in known},
                                  report, where)
        actions = [key for key in step if key in kinds]
        if len(actions) != 1:
            report(where, f"a step needs exactly one action of {', '.join(kinds)} "
                          f"(or use:); found {', '.join(actions) or 'none'}")
        for key in actions:
            kinds[key].check(step, report, where)
        if "send" in step and api_names is not None and step["send"] not in api_names:
            report([*where, "send"], f"unknown API {step['send']!r}")
        elif "send" in step and requests is not None and step["send"] in requests \
                and isinstance(step.get("fields"), dict):
            spec = requests[step["send"]]
            versions = _sent_versions(step, step["send"], spec, under_test)
            if versions:  # none: the case's versions are beyond the loaded specs, reported with the case
                _check_request_fields(step["fields"], spec.fields, spec, versions, report, [*where, "fields"])
        expect = step.get("expect") or {}
        if isinstance(expect, dict) and ("send" in step or "produce" in step):
            # the schema knows one expect for all steps; what only a fetch's summary has is refused here
            fetch_only = set(_validator().schema["$defs"]["expect"]["properties"]) - set(SEND_EXPECT_KEYS)
            for key in expect:
                if key in fetch_only:
                    report([*where, "expect", key], f"unknown key for a send or produce step (its expect takes: "
                                                    f"{', '.join(SEND_EXPECT_KEYS)}; {key} is for fetch steps)")
        if isinstance(expect, dict) and isinstance(expect.get("fields"), dict):
            _check_expect_fields(expect["fields"], _known_matchers(components), report, [*where, "expect", "fields"])
        if isinstance(expect, dict) and "error_code" in expect:
            _check_error_names(expect["error_code"], report, [*where, "expect", "error_code"])
        for key, matcher in (expect.get("fields") or {}).items() if isinstance(expect, dict) else ():
            if str(key).endswith("error_code") and not isinstance(matcher, dict) or is_version_map(matcher):
                if str(key).endswith("error_code"):
                    _check_error_names(matcher, report, [*where, "expect", "fields", key])
        if isinstance(step.get("retry"), dict):
            _check_error_names(step["retry"].get("on", []), report, [*where, "retry", "on"])
        when = step.get("when") or {}
        if isinstance(when, dict) and "versions" in when:
            _check_versions(when["versions"], report, [*where, "when", "versions"])
        for problem in expressions.check(step):
            report(where, problem)
        nested = (api_names, requests, under_test, in_template_step or template is not None, components)
        for key in actions:
            for inner, body in kinds[key].nested(step):
                check_steps(body, suite_report, [*where, *inner], *nested)


# ------------------------------------------------------------------------------ files
def _read_yaml(path: Path):
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return None, SuiteError(str(path), 0, "(file)", f"cannot read: {error}")
    try:
        return yaml.load(text, Loader=_LineLoader), None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark else 0
        return None, SuiteError(str(path), line, "(yaml)", str(getattr(error, "problem", error)))


def load_suite_file(path: Path, api_names: dict[str, list[int]] | None = None, template_cache=None,
                    requests: dict[str, MessageSpec] | None = None,
                    components: Components | None = None) -> tuple[Suite | None, list[SuiteError]]:
    """``components`` (the run's plugins'; the bundled ones by default) name the step kinds, matchers and,
    unless ``api_names`` is given, the APIs and their request specs."""
    path = Path(path)
    components = components or Components.bundled()
    if api_names is None:
        api_names, requests = components.api_names, components.requests
    document, problem = _read_yaml(path)
    if problem:
        return None, [problem]
    errors: list[SuiteError] = []

    def report(where, message):
        errors.append(SuiteError(str(path), line_of(document, where), dotted(where), message))

    if not isinstance(document, dict):
        report([], "a suite file is a mapping with suite, title, spec and cases")
        return None, errors
    _report_schema_errors(_validator(), document, report, [])
    schema_failed = bool(errors)
    if not isinstance(document.get("cases"), list) or not all(
            isinstance(key, str) for key in ("suite", "title", "spec")) or schema_failed and not all(
            isinstance(raw, dict) and {"id", "title", "cites", "steps"} <= set(raw) and isinstance(raw["steps"], list)
            for raw in document.get("cases") or []):
        return None, errors  # too broken to look further; the schema errors say why

    templates, template_errors = _templates_for(path, template_cache if template_cache is not None else {})
    errors.extend(template_errors)
    suite = Suite(id=str(document.get("suite")), title=str(document.get("title")), spec=str(document.get("spec")),
                  path=str(path),
                  topics={name: dict(options or {}) for name, options in (document.get("topics") or {}).items()},
                  transactional_ids=list(document.get("transactional_ids") or []),
                  groups=list(document.get("groups") or []), tags=list(document.get("tags") or []))
    defaults = document.get("defaults") or {}
    seen: set[str] = set()
    for index, raw in enumerate(document["cases"]):
        where = ["cases", index]
        if raw["id"] in seen:
            report([*where, "id"], f"duplicate case id {raw['id']!r}")
        seen.add(raw["id"])
        under_test = raw.get("under_test") if isinstance(raw.get("under_test"), dict) else {}
        api = under_test.get("api", defaults.get("api"))
        versions_text = under_test.get("versions", defaults.get("versions", "0+" if api else "none"))
        versions = _check_versions(versions_text, report, [*where, "under_test", "versions"])
        if api is not None and api_names is not None and api not in api_names:
            report([*where, "under_test", "api"], f"unknown API {api!r}")
        elif api is not None and api_names is not None and versions and not any(v in versions for v in api_names[api]):
            known = api_names[api]
            report([*where, "under_test", "versions"], f"{api} has no version {versions_text} in the loaded specs "
                   f"(v{known[0]}-v{known[-1]}); a draft's versions come with its plugin's specs")
        requires = raw.get("requires") if isinstance(raw.get("requires"), dict) else {}
        for name, expected in (requires.get("config") or {}).items() if isinstance(requires.get("config"), dict) else ():
            _check_matchers(expected, _known_matchers(components), report, [*where, "requires", "config", name])
        steps = expand_templates(raw["steps"], templates, report, [*where, "steps"], kinds=components.step_kinds)
        check_steps(steps, report, [*where, "steps"], api_names, requests, (api, versions) if api and versions else None,
                    components=components)
        if raw.get("requirement", defaults.get("requirement", "MUST")) != Requirement.IMPLEMENTATION.value:
            for at, message in internals.internals_named(raw["steps"], [*where, "steps"]):
                report(at, message)
        if schema_failed:
            continue  # problems are reported; no Case is built from a file that failed the schema
        suite.cases.append(Case(
            suite=suite, id=raw["id"], title=raw["title"],
            requirement=Requirement(raw.get("requirement", defaults.get("requirement", "MUST"))),
            cites=raw["cites"], api=api, versions=versions or VersionRange.NONE, steps=steps,
            tags=[*suite.tags, *(raw.get("tags") or [])], draft=bool(raw.get("draft", False)),
            deviations=list(raw.get("deviations") or []), line=line_of(document, where),
            serial=bool(raw.get("serial", False)),
            requires_config=dict((raw.get("requires") or {}).get("config") or {}),
        ))
    return (None if errors else suite), errors


def suite_files(paths) -> list[Path]:
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found.extend(p for p in sorted(path.rglob("*.yaml")) if TEMPLATE_DIR not in p.relative_to(path).parts[:-1])
        else:
            found.append(path)
    return found


def load_suites(paths, api_names: dict[str, list[int]] | None = None,
                components: Components | None = None) -> tuple[list[Suite], list[SuiteError]]:
    """Given ``api_names`` (name -> versions), request field names are not checked: that needs the specs."""
    components = components or Components.bundled()
    suites, errors, cache = [], [], {}
    for path in suite_files(paths):
        suite, problems = load_suite_file(path, api_names, cache, None, components)
        errors.extend(problems)
        if suite is not None:
            suites.append(suite)
    return suites, _unique(errors)


def _unique(errors: list[SuiteError]) -> list[SuiteError]:
    seen, unique = set(), []
    for error in errors:
        if str(error) not in seen:
            seen.add(str(error))
            unique.append(error)
    return unique


def lint(paths, components: Components | None = None) -> list[SuiteError]:
    return load_suites(paths, components=components)[1]
