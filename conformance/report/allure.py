"""Allure labels and attachments for conformance items, and the run-level files of an Allure results folder.

Every function here is a no-op unless allure-pytest is importable and ``--alluredir`` was given, so
the pytest plugin can call them unconditionally. Bare pytest markers (``kip98``, ``must``, suite
tags) already become Allure tags through allure-pytest, so no tag labels are set here.
"""

from __future__ import annotations

import json
import mimetypes
from pathlib import Path

import orjson

from ..suite.model import Case, CaseResult
from ..results.record import Requirement

try:
    import allure
except ImportError:  # allure-pytest is a dependency, but a trimmed install still runs
    allure = None  # type: ignore[assignment]

# An IMPLEMENTATION case whose step under test departs: an xfail, so Allure's status is skipped (never
# failed), and this category (shared with the offline report's) tells it from every other skip.
DIFFERS_CATEGORY = {
    "name": "Differs from Kafka (IMPLEMENTATION)", "matchedStatuses": ["skipped", "unknown"],
    "messageRegex": r"(?s).*differs from Kafka.*",
    "description": "What Apache Kafka does where the KIPs leave it open, and the target does otherwise: "
                   "information about the target, never a departure from a KIP."}

# Allure matches categories in order, first match wins; messages are the pytest exception texts.
CATEGORIES = [
    {"name": "Blocked: a set-up or check step departed", "matchedStatuses": ["failed", "skipped"],
     "messageRegex": r"(?s).*blocked, no verdict.*",
     "description": "A step on another API than the one under test departed: no verdict on the API under test."},
    {"name": "Spec deviations", "matchedStatuses": ["failed"],
     "description": "The target departs from what the KIP requires (MUST, or SHOULD/MAY with --strict)."},
    {"name": "Target unavailable or failed to start", "matchedStatuses": ["skipped", "broken"],
     "messageRegex": r"(?s).*target (unavailable|'[^']*' failed to start).*"},
    {"name": "Harness or infrastructure errors", "matchedStatuses": ["broken"],
     "description": "Not a verdict on the target: the harness, the network or the broker process failed."},
    DIFFERS_CATEGORY,
    {"name": "SHOULD/MAY not met (not enforced)", "matchedStatuses": ["skipped"],
     "messageRegex": r"(?s).*(SHOULD|MAY) not met.*"},
    {"name": "Unsupported by the target", "matchedStatuses": ["skipped"],
     "messageRegex": r"(?s).*unsupported: .*"},
]


def enabled(config) -> bool:
    """Whether pytest's ``config`` (None outside pytest) writes Allure results."""
    return config is not None and directory_of(vars(config.option)) is not None


def directory_of(options) -> Path | None:
    """The Allure results folder a run's options name (allure-pytest's ``--alluredir``), or None."""
    folder = options.get("allure_report_dir")
    return Path(folder) if allure is not None and folder else None


def _severity(requirement: Requirement):
    levels = {Requirement.MUST: allure.severity_level.CRITICAL, Requirement.SHOULD: allure.severity_level.NORMAL,
              Requirement.MAY: allure.severity_level.MINOR, Requirement.IMPLEMENTATION: allure.severity_level.TRIVIAL}
    return levels[requirement]


def label_case(case: Case, version: int | None, target_spec: str) -> None:
    """Labels for one item; call during setup so skipped items are labelled too.

    The parameters matter beyond display: Allure derives ``historyId`` from them, and without
    them every version and target of a case would collapse into retries of one test.
    """
    if allure is None:
        return
    allure.dynamic.epic(case.kip)
    allure.dynamic.feature(case.api or case.suite.title)
    allure.dynamic.story(case.title)
    allure.dynamic.parent_suite(case.kip)
    allure.dynamic.suite(case.suite.title)
    allure.dynamic.severity(_severity(case.requirement))
    allure.dynamic.label("requirement", case.requirement.value)
    allure.dynamic.parameter("target", target_spec)
    if version is not None:
        allure.dynamic.parameter("api_version", version)


def describe_case(case: Case, location: str) -> None:
    """Title and description; call once setup is over, since allure-pytest resets both at its end."""
    if allure is None:
        return
    allure.dynamic.title(case.title)
    allure.dynamic.description(describe(case, location))


def describe(case: Case, location: str) -> str:
    """Markdown: the requirement and its citation, then where the case is written."""
    lines = [f"**{case.requirement.value}** ({case.kip}): {case.cites}", "", f"Case `{case.full_id}` at `{location}`."]
    if case.draft:
        lines += ["", "Checks a *draft* KIP text, not an adopted one."]
    for deviation in case.deviations:
        lines += ["", f"Known deviation: the KIP says *{deviation.get('kip_text')}*; "
                      f"observed: *{deviation.get('observed')}*."]
    return "\n".join(lines)


def attach_result(result: CaseResult, *, transcript: bool = True) -> None:
    """The item's transcript (text and JSON) where ``transcript`` (``--transcripts`` keeps it), and its
    artifacts (captures, logs) always."""
    if allure is None:
        return
    if transcript:
        attach_transcript(result)
    for name, file in sorted(result.artifacts.items()):
        path = Path(file)
        if path.is_file():
            mime = "application/vnd.tcpdump.pcap" if path.suffix == ".pcap" else (
                mimetypes.guess_type(path.name)[0] or "text/plain")
            allure.attach.file(str(path), name=name, attachment_type=mime, extension=path.suffix.lstrip(".") or None)


def attach_transcript(result: CaseResult) -> None:
    if result.rendered_transcript():
        allure.attach(result.rendered_transcript(), name="transcript", attachment_type=allure.attachment_type.TEXT)
    if result.transcript:
        allure.attach(orjson.dumps(result.transcript, default=str, option=orjson.OPT_INDENT_2), name="transcript.json",
                      attachment_type=allure.attachment_type.JSON)


def write_environment(directory: Path, properties: dict[str, object]) -> None:
    """``environment.properties``: the Environment widget of the report."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = [f"{_properties_literal(key, is_key=True)}={_properties_literal(str(value))}"
             for key, value in properties.items() if value not in (None, "")]
    (directory / "environment.properties").write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_categories(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "categories.json").write_text(json.dumps(CATEGORIES, indent=2), encoding="utf-8")


def _properties_literal(text: str, *, is_key: bool = False) -> str:
    """``text`` as a Java .properties file reads it back (not markup: Allure's Environment widget shows the
    values as text): one line per entry, no separator inside a key, no key taken for a comment."""
    text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    if is_key:
        text = text.replace("=", "\\=").replace(":", "\\:").replace(" ", "\\ ")
        if text[:1] in ("#", "!"):
            text = "\\" + text
    return text
