"""Load YAML suites into :mod:`model` objects, reporting every problem with file, line and key.

A suite file is checked in three passes: YAML syntax, the JSON Schema (``suite.schema.json``, the
same file editors use to validate as you type), then what a schema cannot know: API names, error
names, version ranges, step templates and ``${...}`` expressions. A broken file yields errors and
never stops the other files from loading.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import yaml

from ..protocol.errors import error_by_name
from ..protocol.exceptions import SpecError
from ..protocol.schema import VersionRange
from . import expressions
from .model import Case, Requirement, Suite

SCHEMA_PATH = Path(__file__).with_name("suite.schema.json")
STEP_ACTIONS = ("send", "produce", "fetch", "use", "wait", "until", "parallel", "fault")
TEMPLATE_DIR = "templates"
BUNDLED_TEMPLATES = Path(__file__).resolve().parents[2] / "suites" / TEMPLATE_DIR  # in a checkout
LAST_STEP_KEYS = ("expect", "save", "retry", "timeout_ms")  # given on a `use:` step, they apply to its last step


class SuiteError(Exception):
    def __init__(self, path: str, line: int, key: str, message: str):
        super().__init__(f"{path}:{line}: {key}: {message}")
        self.path, self.line, self.key, self.message = str(path), line, key, message


# ------------------------------------------------------------------------------ YAML with lines
class _Mapping(dict):
    line = 0
    key_lines: dict


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
        for name, template in document["templates"].items():
            if not isinstance(template, dict) or not isinstance(template.get("steps"), list):
                errors.append(SuiteError(str(path), line_of(document, ["templates", name]), f"templates.{name}",
                                         "a template needs 'steps' (a list)"))
                continue
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


def expand_templates(steps: list, templates: dict, report, path: list, depth: int = 0) -> list:
    expanded = []
    for index, step in enumerate(steps):
        where = [*path, index]
        if not isinstance(step, dict):
            expanded.append(step)
            continue
        if "parallel" in step and isinstance(step["parallel"], list):
            step = dict(step)
            step["parallel"] = [expand_templates(branch, templates, report, [*where, "parallel", n], depth)
                                for n, branch in enumerate(step["parallel"]) if isinstance(branch, list)]
        if "until" in step and isinstance(step["until"], dict) and isinstance(step["until"].get("step"), dict):
            inner = expand_templates([step["until"]["step"]], templates, report, [*where, "until"], depth)
            step = dict(step)
            # a template expanding to several steps is repeated as a whole sequence
            step["until"] = {**{k: v for k, v in step["until"].items() if k != "step"},
                             **({"step": inner[0]} if len(inner) == 1 else {"steps": inner})}
        elif "until" in step and isinstance(step["until"], dict) and isinstance(step["until"].get("steps"), list):
            step = dict(step)
            step["until"] = {**step["until"], "steps": expand_templates(
                step["until"]["steps"], templates, report, [*where, "until", "steps"], depth)}
        if "use" not in step:
            expanded.append(step)
            continue
        name = step["use"]
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
        body = expand_templates(substitute_params(template["steps"], arguments), templates, report, where, depth + 1)
        if not body:
            continue
        # What the using step says about the outcome applies to the template's last step.
        overrides = {key: step[key] for key in LAST_STEP_KEYS if key in step}
        if overrides and isinstance(body[-1], dict):
            last = body[-1]
            if isinstance(last.get("save"), dict) and isinstance(overrides.get("save"), dict):
                overrides["save"] = {**last["save"], **overrides["save"]}  # add names, keep the template's
            body[-1] = {**last, **overrides}
        for inner in body:
            if isinstance(inner, dict) and "when" in step:
                inner = {**inner, "when": step["when"]}
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


def _plugin_step_kinds() -> set[str]:
    from ..plugins import merged_mapping

    return set(merged_mapping("conformance_step_kinds"))


def check_steps(steps, report, path, api_names: dict[str, list[int]] | None) -> None:
    for index, step in enumerate(steps):
        where = [*path, index]
        if not isinstance(step, dict):
            report(where, "a step must be a mapping")
            continue
        plugin_kinds = _plugin_step_kinds()
        known = set(_validator().schema["$defs"]["step"]["properties"]) | plugin_kinds
        for key in step:
            if key not in known:
                report([*where, key], f"unknown key (a step takes: {', '.join(sorted(known))})")
        actions = [key for key in step if key in STEP_ACTIONS or key in plugin_kinds]
        if len(actions) != 1:
            report(where, f"a step needs exactly one action of {', '.join(STEP_ACTIONS)} "
                          f"(or a plugin step kind); found {', '.join(actions) or 'none'}")
        if "send" in step and api_names is not None and step["send"] not in api_names:
            report([*where, "send"], f"unknown API {step['send']!r}")
        expect = step.get("expect") or {}
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
        for branch_index, branch in enumerate(step.get("parallel") or []):
            check_steps(branch, report, [*where, "parallel", branch_index], api_names)
        if isinstance(step.get("until"), dict) and isinstance(step["until"].get("step"), dict):
            check_steps([step["until"]["step"]], report, [*where, "until", "step"], api_names)
        if isinstance(step.get("until"), dict) and isinstance(step["until"].get("steps"), list):
            check_steps(step["until"]["steps"], report, [*where, "until", "steps"], api_names)


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


def load_suite_file(path: Path, api_names: dict[str, list[int]] | None = None, template_cache=None) -> tuple[Suite | None, list[SuiteError]]:
    path = Path(path)
    document, problem = _read_yaml(path)
    if problem:
        return None, [problem]
    errors: list[SuiteError] = []

    def report(where, message):
        errors.append(SuiteError(str(path), line_of(document, where), dotted(where), message))

    if not isinstance(document, dict):
        report([], "a suite file is a mapping with suite, title, spec and cases")
        return None, errors
    for error in sorted(_validator().iter_errors(document), key=lambda e: list(map(str, e.absolute_path))):
        where = list(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = set(error.schema.get("properties", {}))
            for key in error.instance:
                if key not in allowed:
                    report([*where, key], f"unknown key (allowed: {', '.join(sorted(allowed))})")
            continue
        if error.validator == "required":
            report(where, error.message)
            continue
        report(where, error.message)
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
        steps = expand_templates(raw["steps"], templates, report, [*where, "steps"])
        check_steps(steps, report, [*where, "steps"], api_names)
        if schema_failed:
            continue  # problems are reported; no Case is built from a file that failed the schema
        suite.cases.append(Case(
            suite=suite, id=raw["id"], title=raw["title"],
            requirement=Requirement(raw.get("requirement", defaults.get("requirement", "MUST"))),
            cites=raw["cites"], api=api, versions=versions or VersionRange.NONE, steps=steps,
            tags=[*suite.tags, *(raw.get("tags") or [])], draft=bool(raw.get("draft", False)),
            deviations=list(raw.get("deviations") or []), line=line_of(document, where),
            serial=bool(raw.get("serial", False)),
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


def load_suites(paths, api_names: dict[str, list[int]] | None = None) -> tuple[list[Suite], list[SuiteError]]:
    if api_names is None:
        from ..plugins import codec_with_plugins

        api_names = {api.name: api.versions() for api in codec_with_plugins().registry.apis()}
    suites, errors, cache = [], [], {}
    for path in suite_files(paths):
        suite, problems = load_suite_file(path, api_names, cache)
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


def lint(paths) -> list[SuiteError]:
    return load_suites(paths)[1]
