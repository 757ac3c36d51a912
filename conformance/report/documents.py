"""Markdown documents generated from the suites and from results: deviations, coverage, findings."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from .. import ledger
from ..protocol.codec import Codec, default_codec
from ..protocol.error_catalogue import CatalogueEntry, ErrorCatalogue, bundled_catalogue
from ..protocol.errors import UnknownErrorName, error_by_name
from ..protocol.exceptions import SpecError
from ..protocol.schema import SpecRegistry, VersionRange
from ..suite.kinds import Request
from ..suite.matchers import for_version
from ..suite.model import Case, Suite
from ..suite.walk import walk
from ..results.record import OUTCOME_LABELS, OUTCOME_ORDER, Outcome, ResultRecord
from .itemref import case_id, known_bug, reproduce
from .root_causes import noted, others, root_causes


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


# ------------------------------------------------------------------------------ deviations
def deviations_markdown(suites: list[Suite]) -> str:
    """Every place where a case expects Apache Kafka's behaviour rather than the KIP's words."""
    lines = ["# Documented deviations of Apache Kafka from the KIP texts", "",
             "Generated from the `deviations` entries of the bundled suites (`conformance deviations`).",
             "Each case expects what Apache Kafka does; the KIP sentence it departs from is quoted.", "",
             "| Suite | Case | Versions | KIP text | Observed in Apache Kafka |", "|---|---|---|---|---|"]
    count = 0
    for suite in suites:
        for case in suite.cases:
            for deviation in case.deviations:
                count += 1
                lines.append(f"| {suite.id} | {case.id} | {deviation.get('versions', str(case.versions))} | "
                             f"{_cell(deviation['kip_text'])} | {_cell(deviation['observed'])} |")
    lines += ["", f"{count} deviations in {sum(len(suite.cases) for suite in suites)} cases."]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ coverage
def _api_name(request: Request, registry: SpecRegistry) -> str | None:
    """The API of a request as the codec names it (None for one it does not know: lint reports it)."""
    try:
        return registry.api_name(request.api)
    except SpecError:
        return None


def _runs_at(step: Mapping, request: Request, version: int) -> bool:
    """Whether the request goes out at the case's ``version``: one pinned to another version (set-up at
    ``max``, say) or a step limited by ``when: {versions: ...}`` does not test it."""
    if request.version is not None and str(request.version) != str(version):
        return False
    limited = (step.get("when") or {}).get("versions")
    return limited is None or version in VersionRange.parse(str(limited))


def _error_names(value) -> set[str]:
    """The NAMEs in an expected value: one name or code, or a list of alternatives."""
    names = set()
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, (str, int)) and not isinstance(item, bool):
            try:
                names.add(error_by_name(str(item)).name)
            except UnknownErrorName:  # lint reports it
                pass
    return names


def _expected_errors(expect: dict, version: int) -> list[set[str]]:
    """Each error expectation of one step at ``version``, as the set of codes it accepts: the response's
    ``error_code`` and every field whose path ends in ``error_code``."""
    wanted = [for_version(expect.get("error_code"), version)]
    fields = for_version(expect.get("fields") or {}, version)
    if isinstance(fields, dict):
        wanted += [for_version(value, version) for path, value in fields.items() if str(path).endswith("error_code")]
    return [names for names in map(_error_names, wanted) if names]


def case_expectations(case: Case, version: int, registry: SpecRegistry) -> list[set[str]]:
    """Each error expectation the case places on its API under test at ``version`` (sets of alternatives)."""
    return [names for visit in walk(case.steps)  # a control of an observer checks no claim of the case
            if not visit.step.get("observer_control") for request in visit.requests
            if _api_name(request, registry) == case.api and _runs_at(visit.step, request, version)
            for names in _expected_errors(dict(request.expect), version)]


def covered_codes(accepted: set[str], listed: dict[str, CatalogueEntry]) -> set[str]:
    """The codes an expectation covers. Of several alternatives, those the local brokers can answer (the
    others only tolerate other brokers or a KIP's wording); all of them when none of them is catalogued
    as answerable locally, so that a gap or a contradiction in the catalogue shows."""
    answerable = {name for name in accepted if name in listed and listed[name].triggerable_locally}
    return answerable or accepted


def coverage(suites: list[Suite], codec: Codec | None = None, catalogue: ErrorCatalogue | None = None) -> dict:
    """{api: {version: {"cases": {case ids}, "errors": {name: {case ids}}}}} over the bundled APIs.

    Draft cases count for their versions, but not for error codes: they expect what a KIP first proposed.
    """
    codec = codec or default_codec()
    catalogue = catalogue or bundled_catalogue()
    table: dict = {api.name: {version: {"cases": set(), "errors": defaultdict(set)} for version in api.versions()}
                   for api in codec.registry.apis()}
    for suite in suites:
        for case in suite.cases:
            if case.api is None:
                continue
            for version, entry in table.get(case.api, {}).items():
                if version not in case.versions:
                    continue
                entry["cases"].add(case.full_id)
                if case.draft:
                    continue
                listed = catalogue.codes(case.api, version)
                for accepted in case_expectations(case, version, codec.registry):
                    for name in covered_codes(accepted, listed):
                        entry["errors"][name].add(case.full_id)
    return table


COVERED, NOT_LOCAL, UNCOVERED = "covered", "not triggerable locally", "not covered"
MISSING = "missing from the catalogue"  # covered, but the catalogue does not list the code: it is incomplete


@dataclass(frozen=True)
class CoverageRow:
    """One error code of one API over consecutive versions that share its cases and catalogue entry."""

    api: str
    versions: tuple[int, ...]
    error: str
    cases: frozenset[str]
    entry: CatalogueEntry | None  # None: cases expect the code but the catalogue does not list it

    @property
    def status(self) -> str:
        if self.entry is None:
            return MISSING
        if self.cases:
            return COVERED
        return NOT_LOCAL if self.entry.local else UNCOVERED


def coverage_rows(table: dict, catalogue: ErrorCatalogue | None = None) -> list[CoverageRow]:
    """Rows for every catalogued API and every API whose cases expect codes, by API, code and version."""
    catalogue = catalogue or bundled_catalogue()
    expecting = {api for api, versions in table.items() if any(entry["errors"] for entry in versions.values())}
    rows = []
    for api in sorted((set(catalogue.apis()) | expecting) & set(table)):
        cells: dict[str, dict[int, tuple]] = defaultdict(dict)  # error -> version -> (cases, entry)
        for version, entry in table[api].items():
            listed = catalogue.codes(api, version)
            for name in listed.keys() | entry["errors"].keys():
                cells[name][version] = (frozenset(entry["errors"].get(name, ())), listed.get(name))
        for name, by_version in cells.items():
            rows += [CoverageRow(api, versions, name, *value) for versions, value in _runs(by_version)]
    return sorted(rows, key=lambda row: (row.api, error_by_name(row.error).code, row.versions))


def _runs(by_version: dict[int, tuple]) -> list[tuple[tuple[int, ...], tuple]]:
    """Consecutive versions with equal values, merged: [((0, 1, 2), value), ((4,), other)]."""
    runs: list[tuple[list[int], tuple]] = []
    for version in sorted(by_version):
        if runs and runs[-1][0][-1] == version - 1 and runs[-1][1] == by_version[version]:
            runs[-1][0].append(version)
        else:
            runs.append(([version], by_version[version]))
    return [(tuple(versions), value) for versions, value in runs]


def _version_label(versions) -> str:
    return f"v{versions[0]}" if len(versions) == 1 else f"v{versions[0]}-{versions[-1]}"


def _cases_cell(cases: frozenset[str], shown: int = 3) -> str:
    if not cases:
        return "-"
    names = sorted(cases)
    more = f", +{len(names) - shown} more" if len(names) > shown else ""
    return f"{len(names)}: " + ", ".join(names[:shown]) + more


def _status_cell(row: CoverageRow) -> str:
    if row.status == MISSING:
        return "covered, but **not in the catalogue**: the catalogue is incomplete"
    if row.status == NOT_LOCAL and row.entry is not None:  # the entry is always there when NOT_LOCAL
        return f"cannot be triggered locally: {row.entry.local}"
    return row.status


def _summary(rows: list[CoverageRow]) -> str:
    """Counts over API × version × code combinations (a row spans versions: each one counts)."""
    counts: Counter = Counter()
    for row in rows:
        counts[row.status] += len(row.versions)
    text = (f"**{sum(counts.values())} API × version × error code combinations: "
            f"{counts[COVERED] + counts[MISSING]} covered by a case, {counts[NOT_LOCAL]} cannot be triggered on "
            f"the local brokers, {counts[UNCOVERED]} not covered yet.**")
    if counts[MISSING]:
        text += f" {counts[MISSING]} of the covered are missing from the catalogue (flagged below)."
    return text


def _api_section(api: str, versions: dict, rows: list[CoverageRow]) -> list[str]:
    cases = _runs({version: (len(entry["cases"]),) for version, entry in versions.items()})
    counts = ", ".join(f"{_version_label(run)}: {value[0]}" for run, value in cases)
    lines = [f"## {api}", "", f"Cases with {api} under test, per version: {counts}.", "",
             "| Versions | Error code | Cases expecting it | Status |", "|---|---|---|---|"]
    lines += [f"| {_version_label(row.versions)} | {error_by_name(row.error)} | {_cell(_cases_cell(row.cases))} | "
              f"{_cell(_status_cell(row))} |" for row in rows]
    return lines + [""]


def coverage_markdown(suites: list[Suite], codec: Codec | None = None, catalogue: ErrorCatalogue | None = None) -> str:
    catalogue = catalogue or bundled_catalogue()
    table = coverage(suites, codec, catalogue)
    rows = coverage_rows(table, catalogue)
    lines = ["# Coverage of the bundled APIs by the bundled suites", "", _summary(rows), "",
             "Generated by `conformance coverage` from the suites and `conformance/protocol/error_catalogue.yaml`,",
             "the error codes Apache Kafka 4.4.0's broker answers per API and request version. For each API under",
             "test, every code it can answer is listed with the cases that expect it at those versions; a code no",
             "case expects is either not covered yet or cannot be triggered on the brokers the harness provisions",
             "(KRaft, one node or a `kafka,nodes=3` cluster, ACLs on), with the reason. A code the cases expect but the catalogue",
             "lacks is flagged: the catalogue is then incomplete. A step accepting several codes covers those the",
             "local brokers can answer. Draft cases (KIPs as first drafted) count for versions, not for codes.", ""]
    for api in sorted({row.api for row in rows}):
        lines += _api_section(api, table[api], [row for row in rows if row.api == api])
    uncovered = [(api, run) for api in sorted(table)
                 for run, _ in _runs({version: () for version, entry in table[api].items() if not entry["cases"]})]
    lines += [f"## API versions no case covers ({sum(len(run) for _, run in uncovered)})", "",
              "APIs the harness uses for set-up and routing (Metadata, CreateTopics, ...) are exercised by",
              "every case but have no case of their own yet.", "",
              ", ".join(f"{api} {_version_label(run)}" for api, run in uncovered) or "none"]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ findings
def latest_runs(results: list[ResultRecord]) -> list[ResultRecord]:
    """Only each target's latest run (run ids sort by start time): a results file that several runs
    appended to must not count them as one. An exploration (suite ``explore``) is a run beside the suites':
    the latest of each kind is kept, so explored departures show beside the suites' ones."""
    def kind(row: ResultRecord) -> tuple[str, bool]:
        return row.target, row.suite == "explore"

    latest: dict[tuple[str, bool], str] = {}
    for row in results:
        latest[kind(row)] = max(latest.get(kind(row), ""), row.run_id or "")
    return [row for row in results if (row.run_id or "") == latest[kind(row)]]


def findings_markdown(results: list[ResultRecord]) -> str:
    """The matrix of outcomes per target and suite, and every departure a target showed.
    The caller picks the runs (``latest_runs`` unless every run is wanted)."""
    by_target: dict[str, Counter] = defaultdict(Counter)
    matrix: dict[tuple[str, str], Counter] = defaultdict(Counter)
    versions: dict[str, str] = {}
    for row in results:
        by_target[row.target][row.outcome] += 1
        matrix[(row.suite, row.target)][row.outcome] += 1
        versions[row.target] = row.target_version or ""
    targets = sorted(by_target)
    outcomes = list(OUTCOME_ORDER)
    per_suite = [outcome for outcome in OUTCOME_ORDER if outcome != Outcome.SKIPPED]
    runs = sorted({row.run_id or "" for row in results})
    lines = ["# Findings", "", "Generated from harness results by `conformance findings` "
             f"(runs: {', '.join(runs)}).", "",
             "## Outcomes per target", "",
             "| Target | Version | " + " | ".join(OUTCOME_LABELS[o] for o in outcomes) + " |",
             "|---|---|" + "---|" * len(outcomes)]
    for target in targets:
        lines.append(f"| {target} | {versions[target]} | " + " | ".join(str(by_target[target][o]) for o in outcomes) + " |")
    lines += ["", f"## Per suite ({' / '.join(OUTCOME_LABELS[o] for o in per_suite)})", "",
              "| Suite | " + " | ".join(targets) + " |", "|---|" + "---|" * len(targets)]
    for suite in sorted({suite for suite, _ in matrix}):
        cells = []
        for target in targets:
            count = matrix.get((suite, target), Counter())
            cells.append(" / ".join(str(count[o]) for o in per_suite))
        lines.append(f"| {suite} | " + " | ".join(cells) + " |")
    # By outcome alone: an IMPLEMENTATION item that departed is "differs", listed apart; one that is
    # "failed" took the target down, which is a failure whatever the level.
    lines += causes_section(results)
    lines += noted_section(results)
    rest = others(results)  # the items a root cause decided are listed under it, once
    lines += departures(rest, Outcome.FAILED, "Departures",
                        "One row per target and case; the versions where it departed, and what it did at the first of them.")
    lines += departures(rest, Outcome.BLOCKED, "Blocked items (no verdict on the API under test)",
                        "A set-up or check step on another API departed; the step is named in Observed.")
    lines += departures(rest, Outcome.DIFFERS, "Differs from Kafka (IMPLEMENTATION, not conformance)",
                        "Cases of the IMPLEMENTATION level: what Apache Kafka does where the KIPs leave it open, "
                        "and the target does otherwise. Information about the target, never a departure from a KIP.")
    return "\n".join(lines) + "\n"


def causes_section(results: list[ResultRecord]) -> list[str]:
    """One row per root cause (:mod:`.root_causes`): one fault of one API version, and the items it decided."""
    causes = root_causes(results)
    if not causes:
        return []
    lines = ["", "## Root causes", "",
             "One fault of one API version departs wherever that version is sent: each is one finding. The items "
             "whose API under test is that version failed there; the others it touched are blocked by it. Its items "
             "are listed here, not again below.", "",
             "| Target | Root cause | Items | Outcomes | Cases | Reproduce (the first item) |", "|---|---|---|---|---|---|"]
    for cause in sorted(causes, key=lambda cause: (cause.target, cause.cause)):
        lines.append(f"| {cause.target} | {_cell(cause.cause)} | {_cell(cause.title)} | {cause.outcomes} | "
                     f"{_cell(', '.join(cause.cases))[:400]} | `{_cell(reproduce(cause.first))}` |")
    return lines


def noted_section(results: list[ResultRecord]) -> list[str]:
    """One row per API version that set-up or check steps found broken and went around (:func:`.root_causes.noted`)."""
    notes = noted(results)
    if not notes:
        return []
    lines = ["", "## Noted by set-up and check steps", "",
             "An API version that a set-up or check step found broken (an answer that does not decode, a closed "
             "connection, UNSUPPORTED_VERSION, a topic it cannot address): the step went on at another version, so "
             "the items kept their verdicts, and the broken version is one finding here.", "",
             "| Target | API version | Items | Cases | What the first item noted |", "|---|---|---|---|---|"]
    for note in sorted(notes, key=lambda note: (note.target, note.subject)):
        lines.append(f"| {note.target} | {_cell(note.subject)} | {len(note.records)} | "
                     f"{_cell(', '.join(note.cases))[:300]} | {_cell(note.example)[:300]} |")
    return lines


def _bug_cell(record: ResultRecord) -> str:
    """The known-bugs ledger's entry behind a departure on an Apache Kafka release, linked to its JIRA."""
    bug = known_bug(record)
    return f"[{_cell(bug)}]({ledger.jira_link(bug)})" if bug else ""


def departures(results: list[ResultRecord], outcome: Outcome, title: str, intro: str) -> list[str]:
    """A section of one outcome's items, one row per target and case, with the versions where it happened."""
    lines = ["", f"## {title}", "", intro, "",
             "| Target | Case | Versions | Expected | Observed | Citation | Reproduce (the first version) | Known Kafka bug |",
             "|---|---|---|---|---|---|---|---|"]
    grouped: dict[tuple[str, str], list[ResultRecord]] = defaultdict(list)
    for row in results:
        if row.outcome == outcome:
            grouped[(row.target, case_id(row))].append(row)
    for (target, case), rows in sorted(grouped.items()):
        rows.sort(key=lambda r: -1 if r.api_version is None else r.api_version)
        first = rows[0]
        versions = ", ".join("-" if r.api_version is None else str(r.api_version) for r in rows)
        observed = first.actual if first.actual is not None else (first.message if first.message is not None else "")
        if isinstance(observed, dict) and "summary" in observed:  # the exactly-once tier's anomalies
            observed = observed["summary"]
        if outcome == Outcome.BLOCKED:
            observed = f"step {first.step_label} ({first.step_api}): {_cell(observed)}"
        cites = first.cites if first.cites is not None else ""
        lines.append(f"| {target} | {case} | {versions} | {_cell(first.expected)[:200]} | "
                     f"{_cell(observed)[:300]} | {_cell(cites)[:160]} | `{_cell(reproduce(first))}` | "
                     f"{_bug_cell(first)} |")
    lines += ["", f"{sum(len(rows) for rows in grouped.values())} {outcome.label} items in "
                  f"{len(grouped)} target × case pairs."]
    return lines
