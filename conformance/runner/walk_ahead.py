"""Producers walked to the end of the epoch space before the items that need one ask: all at once, beside each other.

A case at the end of the producer epoch space first walks a transactional id through some 32,765 InitProducerId bumps
(the ``fast_forward`` step). On a three-node cluster a walk is about a minute of the brokers' CPU (each bump is a
transaction-log append replicated twice), and the failover cases that need one are serial: round after round of them
(:mod:`.shared_fault`), each round walking again, and a round whose versions' coordinators were on different nodes
regrouped and walked again for each node it killed. The walk does not depend on the item: what the step leaves is any
transactional id whose producer is at the epoch asked for, with no transaction open. So the run walks as many ids as
its serial items' top-level ``fast_forward`` steps will ask for, all at once as soon as the run starts, and each such
step takes one of them (:func:`eligible`) instead of walking its own; the item goes on with that id in place of its own
(its ``${txn_ids.NAME}``), as if its own walk had ended there.

The ids walked for one case are coordinated by one ``__transaction_state`` partition, so its versions that kill or move
their coordinator ask for the same node or partition and share one fault in one round; each case's ids are in a
partition of their own (while there are enough), so a case's move of its partition does not move the ids another case
will take. A walk that fails leaves nothing to take: the step then walks its own id, as without this, and meets what
the broker does there itself.

A walked id waits for its item idle, and a broker forgets an idle transactional id after
``transactional.id.expiration.ms`` (the provisioned Kafka sets 10 s, for the cases about that expiry): an id it forgot
is no longer at the end of the epoch space (an AddPartitionsToTxn with its producer id is answered
INVALID_PRODUCER_ID_MAPPING, a bump from its last epoch gets a new producer id). So the run walks ahead only on a
broker that keeps idle ids at least :data:`MIN_EXPIRATION_MS` (read with DescribeConfigs; Kafka's default is 7 days),
and a step takes an id only within half that time of its walk's end; otherwise each step walks its own.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..client.cluster import Cluster
from ..client.epochs import DEFAULT_WINDOW, RETRIABLE, FastForward, fast_forward
from ..client.transcript import Transcript
from ..suite.when import parse as parse_when
from ..targets.nodes import TRANSACTION_TOPIC, partition_for
from .broker_config import ConfigUnmet, read_broker_config
from .policy import client_version_of
from .resources import unique_name

if TYPE_CHECKING:
    from ..suite.model import Case

log = logging.getLogger(__name__)

API = "InitProducerId"
KEPT_EXCHANGES = 3  # of a walk's own, handed to the step that takes it (its evidence, as when it walks itself)
PLAIN_ID = re.compile(r"\$\{txn_ids\.([A-Za-z0-9_-]+)\}")
# the step's defaults (fast_forward.py): the transaction timeout its bumps carry
DEFAULT_TIMEOUT_MS = 60_000
# a broker that forgets idle transactional ids sooner than this gets no walks ahead (see the module)
MIN_EXPIRATION_MS = 600_000
KAFKA_EXPIRATION_MS = 604_800_000  # Kafka's transactional.id.expiration.ms default, where the broker does not say


class _Tail(Transcript):
    """A walk's transcript: its last few exchanges only (a walk makes tens of thousands)."""

    def add(self, exchange) -> None:
        super().add(exchange)
        with self._lock:
            del self.exchanges[:-KEPT_EXCHANGES]


def eligible(step) -> str | None:
    """The name in ``${txn_ids.NAME}`` of a ``fast_forward`` step a walked id can stand in for, else None: its
    transactional id is one of the case's own, it starts from where ``txn.init`` left it (no producer id or epoch of
    its own) and it sends the version a client would (no ``version``)."""
    spec = step.get("fast_forward")
    if not isinstance(spec, Mapping) or "version" in step or "producer_id" in spec or "producer_epoch" in spec:
        return None
    found = PLAIN_ID.fullmatch(str(spec.get("transactional_id", "")))
    if found is None or not isinstance(spec.get("to_epoch"), int):
        return None
    return found.group(1)


def _key(step) -> tuple[int, int]:
    spec = step["fast_forward"]
    return int(spec["to_epoch"]), int(spec.get("transaction_timeout_ms", DEFAULT_TIMEOUT_MS))


@dataclass(frozen=True)
class Walked:
    """A transactional id walked ahead: where its walk ended and its last exchanges."""

    transactional_id: str
    done: FastForward
    version: int
    exchanges: tuple
    ended: float  # time.monotonic() when its walk ended


class WalkAhead:
    """The walks of a run's serial items, started at once on ``target`` (see the module); :meth:`take` hands them
    out, :meth:`close` stops what is left. ``items``: the serial items (case, version) whose steps may ask."""

    def __init__(self, target, items: list[tuple[Case, int | None]], *, run_id: str, timeout: float = 10.0):
        self.target = target
        self._items = items
        self._prefix = f"walked-ahead.{run_id[:8]}"
        self._timeout = timeout
        self._ready: dict[tuple[int, int, int], list[tuple[str, Walked]]] = {}  # by (epoch, timeout, version)
        self._lock = threading.Lock()
        self._done = threading.Event()  # every walk ended, each walked or failed
        self._closing = threading.Event()
        self.walked = self.failed = 0
        self.seconds = 0.0
        self.expiration_ms = KAFKA_EXPIRATION_MS  # how long the broker keeps an idle transactional id
        self._thread = threading.Thread(target=self._walk_all, name="walk-ahead", daemon=True)

    @staticmethod
    def wanted(items: list[tuple[Case, int | None]], cluster: Cluster, spec: str) -> list[tuple[str, tuple[int, int]]]:
        """The walks the items' top-level eligible ``fast_forward`` steps will ask for, each as its case's id and
        (epoch, timeout): those of items whose version ``cluster`` advertises, whose ``when`` holds on this target (an
        item the target does not support runs no step, a step a ``when`` leaves out asks for none)."""
        features, wants = cluster.finalized_features, []
        for case, version in items:
            found = cluster.version_range(case.api) if case.api is not None and version is not None else None
            if case.api is not None and version is not None and (found is None or not found[0] <= version <= found[1]):
                continue
            for step in case.steps:
                when = step.get("when")
                if eligible(step) is None or (when and not parse_when(when).holds(version, features, spec)):
                    continue
                wants.append((case.full_id, _key(step)))
        return wants

    def start(self) -> WalkAhead:
        self._thread.start()
        return self

    def take(self, case: str, to_epoch: int, timeout_ms: int, version: int) -> Walked | None:
        """A walked id at ``to_epoch`` whose bumps carried ``timeout_ms`` at ``version``, one walked for ``case`` (its
        full id) first, once every walk has ended (none runs while an item's fault is made); None where none is
        left."""
        self._done.wait()
        with self._lock:
            ready = self._ready.get((to_epoch, timeout_ms, version)) or []
            mine = [index for index, (walked_for, _) in enumerate(ready) if walked_for == case]
            walked = ready.pop(mine[0] if mine else 0)[1] if ready else None
        if walked is not None and time.monotonic() - walked.ended > self.expiration_ms / 2000:
            log.info("%s waited too long to be taken (the broker forgets idle ids): the step walks its own",
                     walked.transactional_id)
            return None
        return walked

    def close(self) -> None:
        self._closing.set()
        self._done.set()

    def _cluster(self, transcript: Transcript | None = None) -> Cluster:
        return Cluster(self.target.bootstrap, transcript=transcript, timeout=self._timeout,
                       client_id=f"kafka-conformance-{self._prefix}", security=self.target.security)

    def _walk_all(self) -> None:
        began = time.monotonic()
        try:
            cluster = self._cluster()
            try:
                cluster.api_versions()
                version = client_version_of(cluster, API)
                self.expiration_ms = _expiration_ms(cluster)
                if self.expiration_ms < MIN_EXPIRATION_MS:
                    log.info("no walks ahead: the broker forgets an idle transactional id after %d ms",
                             self.expiration_ms)
                    return
                wants = self.wanted(self._items, cluster, self.target.spec)
                names = self._names(cluster, [case for case, _ in wants])
            finally:
                cluster.close()
            keys = [key for _, key in wants]
            if keys:
                log.info("walking %d transactional ids to the end of the epoch space ahead of the items", len(keys))
            with ThreadPoolExecutor(max_workers=max(1, len(keys)), thread_name_prefix="walk-ahead") as pool:
                walks = pool.map(lambda name, key: self._walk(name, key[0], key[1], version), names, keys)
                for (case, (to_epoch, timeout_ms)), walked in zip(wants, walks):
                    if walked is None:
                        self.failed += 1
                    else:
                        self.walked += 1
                        with self._lock:
                            self._ready.setdefault((to_epoch, timeout_ms, version), []).append((case, walked))
        except Exception as error:  # noqa: BLE001 - nothing walked ahead: each step walks its own, as without this
            log.warning("no transactional id walked ahead (%s: %s): each item walks its own", type(error).__name__,
                        error)
        finally:
            self.seconds = time.monotonic() - began
            self._done.set()

    def _names(self, cluster: Cluster, cases: list[str]) -> list[str]:
        """A transactional id for each walk of ``cases``: those of one case coordinated by one ``__transaction_state``
        partition, each case's a partition of its own while there are partitions enough (see the module)."""
        if not cases:
            return []
        first = unique_name(self._prefix, "0")
        cluster.coordinator(first)  # creates the transaction log where none is yet
        [topic] = cluster.metadata([TRANSACTION_TOPIC])["topics"]
        partitions = len(topic["partitions"])
        order = list(dict.fromkeys(cases))
        start = partition_for(first, partitions)
        names, number = [], 0
        for case in cases:
            chosen = (start + order.index(case)) % partitions
            while partition_for(name := unique_name(self._prefix, str(number)), partitions) != chosen:
                number += 1
            names.append(name)
            number += 1
        return names

    def _walk(self, transactional_id: str, to_epoch: int, timeout_ms: int, version: int) -> Walked | None:
        """One id from its first InitProducerId to ``to_epoch``; None where the broker did not take it there."""
        tail = _Tail()
        cluster = self._cluster(tail)
        try:
            cluster.api_versions()
            connection = cluster.connection(cluster.coordinator(transactional_id))
            body = {"transactional_id": transactional_id, "transaction_timeout_ms": timeout_ms,
                    "producer_id": -1, "producer_epoch": -1}
            deadline = time.monotonic() + 20
            first = connection.request(API, version, body).answer
            while first["error_code"] in RETRIABLE and time.monotonic() < deadline and not self._closing.is_set():
                time.sleep(0.1)
                first = connection.request(API, version, body).answer
            if first["error_code"] != 0:
                raise ValueError(f"the first InitProducerId was answered {first}")
            done = fast_forward(connection, transactional_id, first["producer_id"], first["producer_epoch"], to_epoch,
                                version=version, timeout_ms=timeout_ms, window=DEFAULT_WINDOW,
                                step="walked ahead")
        except Exception as error:  # noqa: BLE001 - the step that would have taken it walks its own
            log.warning("walking %s ahead failed (%s: %s)", transactional_id, type(error).__name__, error)
            return None
        finally:
            cluster.close()
        return Walked(transactional_id, done, version, tuple(tail.exchanges), time.monotonic())


def _expiration_ms(cluster: Cluster) -> int:
    """The broker's ``transactional.id.expiration.ms``; Kafka's default where it cannot be read."""
    try:
        value = read_broker_config(cluster).get("transactional.id.expiration.ms")
    except ConfigUnmet:
        return KAFKA_EXPIRATION_MS
    return int(value) if value not in (None, "") else KAFKA_EXPIRATION_MS
