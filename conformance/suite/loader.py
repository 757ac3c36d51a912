"""Load YAML suites into :mod:`model` objects, reporting every problem with file, line and key.

A suite file is checked in three passes: YAML syntax (:mod:`source`), the JSON Schema
(``suite.schema.json``, the same file editors use to validate as you type), then what a schema cannot
know (:mod:`checks`: API names, error names, version ranges, step kinds' own checks and ``${...}``
expressions), after step templates are expanded (:mod:`templates`). A broken file yields errors and never
stops the other files from loading.

The caller hands in the step kinds, matchers and codec (:class:`~conformance.suite.components.Components`):
the run's plugins' (``conformance.extension``), or the bundled ones (``conformance.runner.steps.bundled()``).
"""

from __future__ import annotations

import dataclasses

from pathlib import Path
from typing import Any

from ..protocol.schema import MessageSpec, VersionRange
from . import citations, controls, internals, settings
from .checks import (check_matchers, check_no_effect_verified, check_proxy_faults_kept_to_the_case, check_shares_restart,
                     check_steps, check_versions,
                     known_matchers, report_schema_errors, schema_validator)
from .components import Components
from .model import Case, Requirement, Suite
from .step import Step
from .source import SuiteError, dotted, line_of, read_yaml
from .templates import TEMPLATE_DIR, expand_templates, templates_for

__all__ = ["SuiteError", "TEMPLATE_DIR", "lint", "load_suite_file", "load_suites", "suite_files"]


def load_suite_file(path: Path, api_names: dict[str, list[int]] | None = None, template_cache=None,
                    requests: dict[str, MessageSpec] | None = None,
                    components: Components | None = None) -> tuple[Suite | None, list[SuiteError]]:
    """``components`` (the run's plugins', or the bundled ones) name the step kinds, matchers and,
    unless ``api_names`` is given, the APIs and their request specs."""
    path = Path(path)
    components = _required(components)
    if api_names is None:
        api_names, requests = components.api_names, components.requests
    document, problem = read_yaml(path)
    if problem:
        return None, [problem]
    errors: list[SuiteError] = []

    def report(where, message):
        errors.append(SuiteError(str(path), line_of(document, where), dotted(where), message))

    if not isinstance(document, dict):
        report([], "a suite file is a mapping with suite, title, spec and cases")
        return None, errors
    report_schema_errors(schema_validator(), document, report, [])
    schema_failed = bool(errors)
    if not isinstance(document.get("cases"), list) or not all(
            isinstance(key, str) for key in ("suite", "title", "spec")) or schema_failed and not all(
            isinstance(raw, dict) and {"id", "title", "cites", "steps"} <= set(raw) and isinstance(raw["steps"], list)
            for raw in document.get("cases") or []):
        return None, errors  # too broken to look further; the schema errors say why

    templates, template_errors = templates_for(path, template_cache if template_cache is not None else {})
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
        versions = check_versions(versions_text, report, [*where, "under_test", "versions"])
        if api is not None and api_names is not None and api not in api_names:
            report([*where, "under_test", "api"], f"unknown API {api!r}")
        elif api is not None and api_names is not None and versions and not any(v in versions for v in api_names[api]):
            known = api_names[api]
            report([*where, "under_test", "versions"], f"{api} has no version {versions_text} in the loaded specs "
                   f"(v{known[0]}-v{known[-1]}); a draft's versions come with its plugin's specs")
        requires = raw.get("requires") if isinstance(raw.get("requires"), dict) else {}
        for name, expected in (requires.get("config") or {}).items() if isinstance(requires.get("config"), dict) else ():
            check_matchers(expected, known_matchers(components), report, [*where, "requires", "config", name])
        steps = expand_templates(raw["steps"], templates, report, [*where, "steps"], kinds=components.step_kinds)
        check_steps(steps, report, [*where, "steps"], api_names, requests, (api, versions) if api and versions else None,
                    components=components)
        check_no_effect_verified(steps, report, [*where, "steps"])
        for at, message in controls.uncontrolled(steps, api, where, components.step_kinds):
            report(at, message)
        if raw.get("requirement", defaults.get("requirement", "MUST")) != Requirement.IMPLEMENTATION.value:
            for at, message in internals.internals_named(raw["steps"], [*where, "steps"]):
                report(at, message)
            for at, message in settings.settings_relied_on(raw, steps, suite.topics, where):
                report(at, message)
        if raw.get("requirement", defaults.get("requirement", "MUST")) == Requirement.MUST.value:
            for at, message in citations.unquoted(raw, steps, api, where, components.step_kinds):
                report(at, message)
            for at, message in citations.switched_off(raw, steps, api, where, components.step_kinds):
                report(at, message)
        if raw.get("serial") == "restart":
            check_shares_restart(steps, report, [*where, "serial"], components.step_kinds)
        if raw.get("serial") not in (True, "restart"):  # (serial: restart refuses any other fault itself)
            check_proxy_faults_kept_to_the_case(steps, report, [*where, "steps"], components.step_kinds)
        if schema_failed:
            continue  # problems are reported; no Case is built from a file that failed the schema
        suite.cases.append(Case(
            suite=suite, id=raw["id"], title=raw["title"],
            requirement=Requirement(raw.get("requirement", defaults.get("requirement", "MUST"))),
            cites=raw["cites"], api=api, versions=versions or VersionRange.NONE,
            steps=_built(steps, components, errors),
            tags=[*suite.tags, *(raw.get("tags") or [])], draft=bool(raw.get("draft", False)),
            deviations=list(raw.get("deviations") or []), line=line_of(document, where),
            serial=bool(raw.get("serial", False)), shares_restart=raw.get("serial") == "restart",
            requires_config=dict((raw.get("requires") or {}).get("config") or {}),
            requires_switch=dict((raw.get("requires") or {}).get("switch") or {}),
        ))
        kafka_steps = citations.twin(steps)
        if kafka_steps is not None and not schema_failed:  # Kafka's code, where the MUST is only a refusal
            twin_id = f"{raw['id']}-kafka-answer"
            if twin_id in seen:
                report([*where, "id"], f"{twin_id} is the twin the loader makes from kafka_code or kafka_fields: remove one")
            seen.add(twin_id)
            original = suite.cases[-1]
            suite.cases.append(dataclasses.replace(
                original, id=twin_id, title=f"Apache Kafka's own code: {original.title}",
                requirement=Requirement.IMPLEMENTATION, versions=citations.twin_versions(steps, original.versions),
                steps=_built(kafka_steps, components, errors)))
    return (None if errors else suite), errors


def _built(steps: list, components: Components, errors: list[SuiteError]) -> list:
    """The checked steps as :class:`Step`s; as written where the file has errors (its suite is not returned, and a
    step the checks refused, a malformed ``when`` or one that is not a mapping, cannot be built)."""
    return list(steps) if errors else [Step.built(step, components.step_kinds) for step in steps]


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
    components = _required(components)
    suites, errors, cache = [], [], dict[Any, Any]()
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


def _required(components: Components | None) -> Components:
    # The suite format does not know the runner's step kinds: whoever loads says which kinds exist.
    if components is None:
        raise TypeError("load suites with components: the run's (Extensions.components()) or the bundled ones "
                        "(conformance.runner.steps.bundled())")
    return components


def lint(paths, components: Components | None = None) -> list[SuiteError]:
    return load_suites(paths, components=components)[1]
