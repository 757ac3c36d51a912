"""What a vendor claims (a capabilities file), which results items those claims cover, and each claim checked.

A capabilities file (YAML, checked against ``capabilities.schema.json``) says which features the
implementation offers: the ``transaction.version`` levels, KIP-939 two-phase commit, KIP-848 consumer groups,
the compression codecs, the API versions it intends to serve, and the departures it documents. Grading then
leaves the items of what is not claimed out (*not claimed*: neither failed nor missed), and every claim is
checked on its own: against what the target advertises (its fingerprint) and against the results.

The features a claim switches on or off are a table here (:data:`FEATURES`): which suites, cases and API
versions belong to each. The table is the meaning of the file's fields, so it lives beside the code reading it.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


from ... import checked_yaml, resources
from ...protocol.exceptions import SpecError
from ...protocol.schema import VersionRange
from ...results.record import Outcome, Requirement, ResultRecord
from .. import known_failures
from ..itemref import case_id, label

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")

# What each claim checks out to.
HOLDS = "holds"
NOT_ADVERTISED = "claimed but not advertised"
NOT_CLAIMED_BUT_ADVERTISED = "advertised but not claimed"
DEPARTING = "claimed and departing"
UNCHECKED = "not checked"
DOCUMENTED = "documented deviation"
STALE = "documented deviation not observed"
FALSE_CLAIMS = (NOT_ADVERTISED, NOT_CLAIMED_BUT_ADVERTISED, DEPARTING)


class ClaimsError(ValueError):
    """The capabilities file is malformed; the message names the file and the field."""


@dataclass(frozen=True)
class Feature:
    """A feature a claim turns on or off, and the items that belong to it."""
    id: str
    name: str
    suites: tuple[str, ...] = ()  # shell-style suite id patterns
    cases: tuple[str, ...] = ()  # suite::case patterns
    apis: dict = field(default_factory=dict)  # API -> VersionRange: items at these versions belong to it

    def covers(self, record: ResultRecord) -> bool:
        """Whether the item belongs to this feature (its suite, case or API version)."""
        if any(fnmatch.fnmatchcase(str(record.suite), pattern) for pattern in self.suites):
            return True
        if any(fnmatch.fnmatchcase(case_id(record), pattern) for pattern in self.cases):
            return True
        span, version = self.apis.get(record.api), record.api_version
        return span is not None and version is not None and version in span


def _span(text: str) -> VersionRange:
    return VersionRange.parse(text, where="claims")


# The transaction APIs: a broker that implements transactions serves them, one without transactions none of them.
TRANSACTION_APIS = ("AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit", "WriteTxnMarkers",
                    "DescribeTransactions", "ListTransactions")
# The two a transaction cannot do without: what a claim of transactions is checked against in ApiVersions.
CORE_TRANSACTION_APIS = ("AddPartitionsToTxn", "EndTxn")

# transaction.version 2 is KIP-890's second part: the versions only a TV2 broker serves and the suites of it.
# "transactions" (transaction_versions: [] claims none) covers every suite that needs a transaction to run: the
# Transactions level's and every level above it, the failovers and wire faults of transactions and the exactly-once
# tier, and every item whose API under test is a transaction API.
FEATURES = {
    "transactions": Feature(
        "transactions", "transactions (KIP-98)",
        suites=("kip98.transactions", "kip98.transactions-lifecycle", "kip98.consumers", "kip98.coordinator",
                "kip98.offsets", "kip98.faults", "kip360.producer-recovery", "kip447.*", "kip890.*", "kip939.*",
                "kip848.*", "semantic.*", "faults.proxy-kip890", "cluster.commit-in-progress",
                "cluster.coordinator-log-blocked", "cluster.coordinators-and-leaders", "cluster.epoch-rotation-failover",
                "cluster.leadership-moves", "cluster.verification-coordinator-unreachable"),
        # the wire faults' idempotence cases stay: an implementation without transactions may have idempotence
        cases=("faults.proxy-kip98::transactional-*",),
        apis={api: _span("0+") for api in TRANSACTION_APIS}),
    "transaction-version-2": Feature(
        "transaction-version-2", "transaction.version 2 (KIP-890)",
        suites=("kip890.transaction-v2", "kip890.epoch-overflow", "faults.proxy-kip890"),
        apis={"Produce": _span("12+"), "EndTxn": _span("5+"), "TxnOffsetCommit": _span("5+")}),
    "two-phase-commit": Feature("two-phase-commit", "two-phase commit (KIP-939)", suites=("kip939.*",),
                                apis={"InitProducerId": _span("6+")}),
    "kip848-consumer-groups": Feature(
        "kip848-consumer-groups", "KIP-848 consumer groups",
        suites=("kip848.*", "semantic.exactly-once.consumer-group"),
        apis={"ConsumerGroupHeartbeat": _span("0+"), "ConsumerGroupDescribe": _span("0+"),
              "OffsetCommit": _span("9+"), "OffsetFetch": _span("9+")}),
    **{f"compression-{codec}": Feature(f"compression-{codec}", f"{codec} compression",
                                       cases=(f"protocol.produce-fetch::produce-{codec}",
                                              f"*::produce-{codec}-*"))
       for codec in CODECS if codec != "none"},
}


@dataclass(frozen=True)
class Claims:
    """One capabilities file, read and checked."""
    path: str
    product: str
    version: str
    vendor: str
    source: str
    transaction_versions: tuple[int, ...]
    two_phase_commit: bool
    kip848_consumer_groups: bool
    compression: tuple[str, ...]
    apis: dict  # API name -> VersionRange
    deviations: tuple[known_failures.Entry, ...]
    raw: dict

    @property
    def transactions(self) -> bool:
        """Whether transactions are claimed at all: ``transaction_versions: []`` says the implementation has none."""
        return bool(self.transaction_versions)

    def claimed_features(self) -> dict[str, bool]:
        claimed = {"transactions": self.transactions, "transaction-version-2": 2 in self.transaction_versions,
                   "two-phase-commit": self.two_phase_commit, "kip848-consumer-groups": self.kip848_consumer_groups}
        claimed.update({f"compression-{codec}": codec in self.compression for codec in CODECS if codec != "none"})
        return claimed

    def unclaimed(self, record: ResultRecord) -> str | None:
        """Why this item is not claimed, or None when the claims cover it."""
        claimed = self.claimed_features()
        for feature_id, feature in FEATURES.items():
            if not claimed[feature_id] and feature.covers(record):
                return f"{feature.name} not claimed"
        api, version = record.api, record.api_version
        if api and version is not None:
            if api not in self.apis:
                return f"{api} not claimed"
            if version not in self.apis[api]:
                return f"{api} beyond the claimed v{self.apis[api]}"
        return None

    def suite_unclaimed(self, suite: str) -> bool:
        """Whether a whole suite belongs to a feature the claims leave out."""
        claimed = self.claimed_features()
        return any(not claimed[feature_id] and any(fnmatch.fnmatchcase(suite, pattern) for pattern in feature.suites)
                   for feature_id, feature in FEATURES.items())

    def level_unclaimed(self, level) -> list[str]:
        """Why a level as a whole is outside the claims: it demands a feature or an API version not claimed."""
        reasons = []
        own = [pattern for pattern in level.suites if pattern != "*"]
        if own and all(self.suite_unclaimed(pattern) for pattern in own):
            reasons.append(f"its suites ({', '.join(own)}) belong to features not claimed")
        transactional = sorted(api for api in level.demands if api in TRANSACTION_APIS)
        if transactional and not self.transactions:
            reasons.append(f"needs transactions ({', '.join(transactional)}); claims none (transaction_versions: [])")
        for name, minimum in level.features.items():
            if name == "transaction.version" and max(self.transaction_versions, default=-1) < minimum:
                reasons.append(f"needs {name} ≥ {minimum}; claims {list(self.transaction_versions)}")
        for api, span in level.demands.items():
            if api in TRANSACTION_APIS and not self.transactions:
                continue  # said once above
            claimed = self.apis.get(api)
            if claimed is None:
                reasons.append(f"demands {api}, not claimed")
            elif span is not None and not (claimed.low <= span.low and _top(span) <= _top(claimed)):
                reasons.append(f"demands {api} v{span}; claims v{claimed}")
        return reasons

    def identity(self) -> dict:
        return {"product": self.product, "version": self.version, "vendor": self.vendor, "source": self.source}


def _top(span: VersionRange) -> float:
    return float("inf") if span.high is None else span.high


def load(path: str | Path) -> Claims:
    """Read and check a capabilities file. Raises :class:`ClaimsError` naming the file and the field."""
    path = Path(path)
    try:
        raw = checked_yaml.load(path, json.loads(resources.capabilities_schema().read_text(encoding="utf-8")))
    except checked_yaml.CheckedYamlError as error:
        raise ClaimsError(str(error)) from None
    try:
        apis = {api: VersionRange.parse(str(span), where=f"{path}: apis.{api}") for api, span in raw["apis"].items()}
    except SpecError as error:
        raise ClaimsError(str(error)) from None
    contradicting = [api for api in TRANSACTION_APIS if api in apis]
    if not raw["transaction_versions"] and contradicting:
        raise ClaimsError(f"{path}: transaction_versions: [] claims no transactions, but apis names "
                          f"{', '.join(contradicting)}: remove them, or list the transaction.version levels")
    deviations = []
    for index, entry in enumerate(raw.get("deviations") or []):
        where = f"{path}: deviations[{index}]"
        try:
            versions = known_failures._versions(entry.get("versions"), where)  # noqa: SLF001 - the same format
        except known_failures.KnownFailuresError as error:
            raise ClaimsError(str(error)) from None
        deviations.append(known_failures.Entry("known_failures", entry["case"], versions, entry["reason"],
                                               entry.get("link"), None, where))
    return Claims(path=str(path), product=raw["product"], version=str(raw.get("version") or ""),
                  vendor=str(raw.get("vendor") or ""), source=str(raw.get("source") or ""),
                  transaction_versions=tuple(sorted(raw["transaction_versions"])),
                  two_phase_commit=bool(raw.get("two_phase_commit")),
                  kip848_consumer_groups=bool(raw.get("kip848_consumer_groups")),
                  compression=tuple(raw.get("compression") or ["none"]), apis=apis,
                  deviations=tuple(deviations), raw=raw)


# ------------------------------------------------------------------------------ checking each claim
def check(claims: Claims, records: list[ResultRecord], fingerprint: dict | None) -> list[dict]:
    """Every claim against the target's advertisement and the results: one row per finding or per claim that
    holds, ``{"claim", "status", "detail", "items"}``."""
    rows: list[dict] = []
    departed = [record for record in records if record.outcome == Outcome.FAILED
                and record.requirement != Requirement.IMPLEMENTATION and not record.draft]
    documented = [record for record in departed if known_failures.first_match(list(claims.deviations), record)]
    # a departure outside the claims is evidence the page lists, never a false claim
    undocumented = [record for record in departed if record not in documented and claims.unclaimed(record) is None]
    claimed = [record for record in records if claims.unclaimed(record) is None]
    advertised = {entry["name"]: (entry["min"], entry["max"]) for entry in (fingerprint or {}).get("apis", [])}

    def row(claim: str, status: str, detail: str, items: Sequence[ResultRecord] = ()) -> None:
        rows.append({"claim": claim, "status": status, "detail": detail, "items": [label(item) for item in items]})

    # Transactions, and their transaction.version levels: [] claims none, and then no transaction API may be served.
    claim = f"transaction_versions: {list(claims.transaction_versions)}"
    serving = [f"{api} v{advertised[api][0]}-{advertised[api][1]}" for api in TRANSACTION_APIS if api in advertised]
    lacking = [api for api in CORE_TRANSACTION_APIS if api not in advertised]
    if fingerprint is None:
        row(claim, UNCHECKED, "no fingerprint: what the target advertises is unknown")
    elif not claims.transactions:
        if serving:
            row(claim, NOT_CLAIMED_BUT_ADVERTISED, f"claims no transactions, but advertises {', '.join(serving)}")
        else:
            row(claim, HOLDS, "advertises no transaction API, as claimed")
    else:
        if lacking:
            row(claim, NOT_ADVERTISED, f"claims transactions, but advertises no {' and no '.join(lacking)}")
        supported = (fingerprint.get("supported_features") or {}).get("transaction.version")
        bottom, top = supported if supported else (0, 0)
        missing = [level for level in claims.transaction_versions if level > top]
        if missing:
            row(claim, NOT_ADVERTISED, f"advertises transaction.version up to {top}" if supported
                else "advertises no transaction.version feature (level 0 only)")
        elif top > max(claims.transaction_versions):
            row(claim, NOT_CLAIMED_BUT_ADVERTISED, f"advertises transaction.version {bottom}-{top}")
    _feature_rows(rows, row, claim if 2 in claims.transaction_versions else None, "transaction-version-2",
                  undocumented)
    # a claim of transactions holds on the verdicts of their items, never on the advertisement alone
    _feature_rows(rows, row, claim if claims.transactions else None, "transactions", undocumented, claimed)

    # Two-phase commit and KIP-848 groups: advertised through API versions.
    for flag, feature_id, claim, is_advertised, how in (
            (claims.two_phase_commit, "two-phase-commit", f"two_phase_commit: {str(claims.two_phase_commit).lower()}",
             advertised.get("InitProducerId", (0, -1))[1] >= 6, "InitProducerId v6"),
            (claims.kip848_consumer_groups, "kip848-consumer-groups",
             f"kip848_consumer_groups: {str(claims.kip848_consumer_groups).lower()}",
             "ConsumerGroupHeartbeat" in advertised, "ConsumerGroupHeartbeat")):
        if fingerprint is None:
            row(claim, UNCHECKED, "no fingerprint: what the target advertises is unknown")
        elif flag and not is_advertised:
            row(claim, NOT_ADVERTISED, f"{how} is not advertised")
        elif not flag and is_advertised:
            row(claim, NOT_CLAIMED_BUT_ADVERTISED, f"{how} is advertised")
        if flag:  # holds on the verdicts of the feature's items
            _feature_rows(rows, row, claim, feature_id, undocumented, claimed)
        else:
            _holds_unless_found(rows, row, claim, f"{how} is not advertised, as claimed")

    # Compression: no advertisement exists; the cases say.
    for codec in claims.compression:
        if codec != "none":
            _feature_rows(rows, row, f"compression: {codec}", f"compression-{codec}", undocumented, claimed)

    # API versions.
    tested = {str(record.api) for record in records if record.api}
    for api in sorted(set(claims.apis) | (tested & set(advertised))):
        span = claims.apis.get(api)
        claim = f"apis.{api}: {span}" if span is not None else f"apis.{api}"
        low_high = advertised.get(api)
        if fingerprint is None:
            row(claim, UNCHECKED, "no fingerprint: what the target advertises is unknown")
            continue
        if span is None and low_high is not None:
            row(claim, NOT_CLAIMED_BUT_ADVERTISED, f"advertises v{low_high[0]}-{low_high[1]}; the claims name no version")
            continue
        if span is None or low_high is None:
            row(claim, NOT_ADVERTISED, "not advertised at all")
            continue
        if span.low < low_high[0] or _top(span) > low_high[1]:
            row(claim, NOT_ADVERTISED, f"advertises v{low_high[0]}-{low_high[1]}")
        elif low_high[0] < span.low or low_high[1] > _top(span):
            row(claim, NOT_CLAIMED_BUT_ADVERTISED, f"advertises v{low_high[0]}-{low_high[1]}")
        departing = [record for record in undocumented if _at_claimed_version(record, api, span)]
        passed = [record for record in claimed if record.outcome == Outcome.PASSED and _at_claimed_version(record, api, span)]
        if departing:
            row(claim, DEPARTING, f"{len(departing)} departing item(s) at claimed versions", departing)
        elif any(existing["claim"] == claim for existing in rows):
            pass
        elif passed:  # advertised as claimed, and items at those versions passed
            row(claim, HOLDS, f"advertises v{low_high[0]}-{low_high[1]}; {len(passed)} item(s) at claimed "
                              "versions passed")
        else:
            row(claim, UNCHECKED, f"advertises v{low_high[0]}-{low_high[1]} as claimed; no item at a claimed "
                                  "version passed")

    # Documented deviations: shown with what they cover, and those that no departure needs.
    for entry in claims.deviations:
        matched = [record for record in documented if entry.matches(record)]
        row(f"deviation {entry.case}", DOCUMENTED if matched else STALE,
            entry.reason + (f" <{entry.link}>" if entry.link else ""), matched)
    return rows


def _holds_unless_found(rows: list[dict], row, claim: str, detail: str) -> None:
    if not any(existing["claim"] == claim for existing in rows):
        row(claim, HOLDS, detail)


def _at_claimed_version(record: ResultRecord, api: str, span: VersionRange) -> bool:
    return record.api == api and record.api_version is not None and record.api_version in span


def _feature_rows(rows: list[dict], row, claim: str | None, feature_id: str, undocumented: list[ResultRecord],
                  records: Sequence[ResultRecord] = ()):
    """A claimed feature whose items depart is a false claim. Given ``records``, a claim nothing else was found of
    holds where items of the feature passed, and is not checked where none did: a claim is never shown to hold on a
    run with no verdict for it."""
    if claim is None:
        return
    feature = FEATURES[feature_id]
    shown = {item for existing in rows if existing["claim"] == claim for item in existing["items"]}
    departing = [record for record in undocumented if feature.covers(record) and label(record) not in shown]
    if departing:
        row(claim, DEPARTING, f"{len(departing)} departing item(s) of {feature.name}", departing)
    elif records and not any(existing["claim"] == claim for existing in rows):
        covered = [record for record in records if feature.covers(record)]
        passed = [record for record in covered if record.outcome == Outcome.PASSED]
        if passed:
            row(claim, HOLDS, f"{len(passed)} of {len(covered)} item(s) of {feature.name} passed")
        else:
            row(claim, UNCHECKED, f"no item of {feature.name} passed or departed ({len(covered)} without a verdict)")


def not_claimed_summary(claims: Claims, records: list[ResultRecord]) -> list[dict]:
    """The items left out, counted by reason: ``[{"reason", "count", "versions", "example"}]``, largest first."""
    by_reason: dict[str, list[ResultRecord]] = {}
    for record in records:
        reason = claims.unclaimed(record)
        if reason is not None:
            by_reason.setdefault(reason, []).append(record)
    return [{"reason": reason, "count": len(rows), "example": label(rows[0]),
             "versions": ", ".join(str(version) for version in sorted({int(row.api_version) for row in rows
                                                                       if row.api_version is not None}))}
            for reason, rows in sorted(by_reason.items(), key=lambda pair: (-len(pair[1]), pair[0]))]


TEMPLATE = """\
# Capabilities: what {product} claims to implement (conformance certify --claims THIS_FILE).
# Cases for what is not claimed are graded "not claimed", never failed or missed; every claim is itself
# checked against what the target advertises and against the results, and shown on the certification page.
# Schema: conformance/report/certify/capabilities.schema.json (shipped in the package).
capabilities: 1
product: {product}
version: "0.0.0"
vendor: ""
source: ""                       # where these claims come from: your documentation, a release note

# transaction.version levels implemented: 0 (KIP-98 transactions), 1, 2 (KIP-890: Produce v12, EndTxn v5,
# an epoch bump on every transaction); [] for no transactions (then list no transaction API under apis).
transaction_versions: [0, 1, 2]
two_phase_commit: false          # KIP-939 (InitProducerId v6, keep_prepared_txn)
kip848_consumer_groups: true     # KIP-848 consumer groups (ConsumerGroupHeartbeat, member epochs)
compression: [none, gzip, snappy, lz4, zstd]

# The API versions you intend to serve ("N", "N-M" or "N+"); an API not listed is not claimed.
apis:
{apis}
# Departures you document: each waived where a level allows waivers, and listed on the page.
deviations: []
#  - case: kip98.error-paths::an-example-case
#    versions: "3-5"
#    reason: why the implementation answers differently
#    link: https://your.tracker/issue
"""

# The APIs the bundled suites put under test: the template starts from the ranges of the bundled message specs
# (Apache Kafka's, release resources.UPSTREAM_KAFKA), for the vendor to narrow to what it serves.
TEMPLATE_APIS = ("Produce", "Fetch", "ListOffsets", "Metadata", "OffsetCommit", "OffsetFetch", "FindCoordinator",
                 "JoinGroup", "Heartbeat", "SyncGroup", "ApiVersions", "CreateTopics", "DeleteTopics",
                 "InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit",
                 "DescribeProducers", "DescribeTransactions", "ListTransactions", "ConsumerGroupHeartbeat")


def _bundled_ranges() -> dict[str, str]:
    from ...protocol.codec import default_codec

    registry = default_codec().registry
    by_name = {}
    for api_key in range(100):
        try:
            specs = registry.api(api_key)
        except Exception:  # noqa: BLE001 - an API key the specs do not define
            continue
        by_name[specs.name] = str(specs.request.valid_versions)
    # InitProducerId v6 is KIP-939's (unstable in Kafka 4.x): the template claims no two-phase commit.
    by_name["InitProducerId"] = by_name.get("InitProducerId", "0-5").replace("-6", "-5")
    return {name: by_name[name] for name in TEMPLATE_APIS if name in by_name}


def template(product: str = "Your product", apis: dict[str, str] | None = None) -> str:
    """A capabilities file to fill in; ``apis`` (name -> "N-M") replaces the bundled specs' ranges."""
    lines = "\n".join(f"  {name}: \"{span}\"" for name, span in (apis or _bundled_ranges()).items())
    return TEMPLATE.format(product=product, apis=lines)
