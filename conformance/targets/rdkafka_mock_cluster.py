"""librdkafka's mock cluster through its C API (``rdkafka_mock.h``, by ctypes), in the process that owns it.

The target :mod:`.rdkafka_mock` keeps this in a process of its own: the mock is C code that may abort on
input it does not expect, and that must end the target, not the run.
"""

from __future__ import annotations

import ctypes

from . import librdkafka
from .base import CapabilityMissing, TargetUnavailable
from .fault_arguments import api_key, error_code

# The mock cluster names coordinator types this way (rdkafka_mock.c).
_COORDINATOR_TYPES = {"txn": "transaction", "transaction": "transaction", "group": "group"}


# The faults the mock cluster takes, each carried out by the method of the same name with a leading underscore.
FAULTS = frozenset({"request_errors", "clear_request_errors", "broker_down", "broker_up", "rtt", "set_apiversion",
                    "coordinator", "topic_create"})

class MockCluster:
    """One librdkafka mock cluster of ``broker_count`` brokers, owned through ctypes by this process."""

    def __init__(self, broker_count: int):
        self.spec = "rdkafka-mock" if broker_count == 1 else f"rdkafka-mock:{broker_count}"
        self.broker_count = broker_count
        self._lib: ctypes.CDLL | None = None
        self._handle = None  # the rd_kafka_t the cluster lives on
        self._cluster = None
        self._bootstrap: str | None = None

    # lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        if self._cluster:
            return
        try:
            self._lib = librdkafka.load()
        except librdkafka.LibrdkafkaMissing as exc:
            raise TargetUnavailable(str(exc)) from exc
        self._handle = self._new_handle()
        self._cluster = self._lib.rd_kafka_mock_cluster_new(self._handle, self.broker_count)
        if not self._cluster:
            self.stop()
            raise TargetUnavailable("rd_kafka_mock_cluster_new failed (see librdkafka's log on stderr)")
        self._bootstrap = self._lib.rd_kafka_mock_cluster_bootstraps(self._cluster).decode()
        if not all(address.startswith("127.0.0.1:") for address in self._bootstrap.split(",")):
            bootstrap = self._bootstrap
            self.stop()
            raise TargetUnavailable(f"mock cluster did not listen on loopback: {bootstrap}")

    def stop(self) -> None:
        # The cluster before its handle: the cluster's thread reports through the handle.
        if self._cluster:
            self._lib.rd_kafka_mock_cluster_destroy(self._cluster)
            self._cluster = None
        if self._handle:
            self._lib.rd_kafka_destroy(self._handle)
            self._handle = None

    def _new_handle(self):
        lib = self._lib
        conf = lib.rd_kafka_conf_new()
        errstr = ctypes.create_string_buffer(512)
        # This handle never connects anywhere; level 4 hides its "no bootstrap.servers" notice.
        for name, value in (("client.id", "conformance-rdkafka-mock"), ("log_level", "4")):
            result = lib.rd_kafka_conf_set(conf, name.encode(), value.encode(), errstr, len(errstr))
            if result != librdkafka.RD_KAFKA_CONF_OK:
                lib.rd_kafka_conf_destroy(conf)
                raise TargetUnavailable(f"rd_kafka_conf_set {name}: {errstr.value.decode()}")
        handle = lib.rd_kafka_new(librdkafka.RD_KAFKA_PRODUCER, conf, errstr, len(errstr))
        if not handle:
            lib.rd_kafka_conf_destroy(conf)  # only a successful rd_kafka_new takes ownership
            raise TargetUnavailable(f"rd_kafka_new failed: {errstr.value.decode()}")
        return handle

    @property
    def bootstrap(self) -> str:
        if not self._bootstrap:
            raise RuntimeError(f"target {self.spec!r} is not started")
        return self._bootstrap

    # request tracking: what clients sent, to check retries and fallbacks ---------------------
    def start_request_tracking(self) -> None:
        self._started().rd_kafka_mock_start_request_tracking(self._cluster)

    def tracked_requests(self) -> list[tuple[int, int]]:
        """``(broker id, API key)`` of every request received since tracking started, in order."""
        lib = self._started()
        count = ctypes.c_size_t(0)
        requests = lib.rd_kafka_mock_get_requests(self._cluster, ctypes.byref(count))
        if not requests:
            return []
        try:
            return [
                (lib.rd_kafka_mock_request_id(requests[i]), lib.rd_kafka_mock_request_api_key(requests[i]))
                for i in range(count.value)
            ]
        finally:
            lib.rd_kafka_mock_request_destroy_array(requests, count.value)

    def _started(self) -> ctypes.CDLL:
        """The library, while the cluster runs."""
        if not self._cluster or self._lib is None:
            raise RuntimeError(f"target {self.spec!r} is not started")
        return self._lib

    # faults --------------------------------------------------------------------------------
    def fault(self, name: str, **arguments) -> None:
        if name not in FAULTS:
            raise CapabilityMissing(f"target {self.spec!r} has no fault {name!r}; it has {sorted(FAULTS)}")
        self._started()
        getattr(self, f"_{name}")(**arguments)

    def _request_errors(self, api, errors) -> None:
        """The next ``len(errors)`` requests of ``api`` to any broker fail with these codes, in order."""
        codes = [error_code(error) for error in errors]
        array = (librdkafka.rd_kafka_resp_err_t * len(codes))(*codes)
        self._started().rd_kafka_mock_push_request_errors_array(self._cluster, api_key(api), len(codes), array)

    def _clear_request_errors(self, api) -> None:
        self._started().rd_kafka_mock_clear_request_errors(self._cluster, api_key(api))

    def _broker_down(self, broker_id: int = -1) -> None:
        """Drop the broker's connections and refuse new ones; -1 means every broker."""
        self._check("broker_down", self._started().rd_kafka_mock_broker_set_down(self._cluster, broker_id))

    def _broker_up(self, broker_id: int = -1) -> None:
        self._check("broker_up", self._started().rd_kafka_mock_broker_set_up(self._cluster, broker_id))

    def _rtt(self, ms: int, broker_id: int = -1) -> None:
        self._check("rtt", self._started().rd_kafka_mock_broker_set_rtt(self._cluster, broker_id, ms))

    def _set_apiversion(self, api, min: int, max: int) -> None:  # noqa: A002 - the fault's own words
        """Advertise only ``min..max`` for ``api``; -1, -1 removes the API."""
        result = self._started().rd_kafka_mock_set_apiversion(self._cluster, api_key(api), min, max)
        self._check("set_apiversion", result)

    def _coordinator(self, key_type: str, key: str, broker_id: int) -> None:
        try:
            mock_type = _COORDINATOR_TYPES[key_type]
        except KeyError:
            raise ValueError(f"coordinator key_type must be txn or group, not {key_type!r}") from None
        result = self._started().rd_kafka_mock_coordinator_set(self._cluster, mock_type.encode(), key.encode(), broker_id)
        self._check("coordinator", result)

    def _topic_create(self, topic: str, partitions: int = 1, replication: int = 1) -> None:
        result = self._started().rd_kafka_mock_topic_create(self._cluster, topic.encode(), partitions, replication)
        self._check("topic_create", result)

    def _check(self, fault: str, result: int) -> None:
        if result:
            raise ValueError(f"mock fault {fault} failed: {librdkafka.error_name(result)}")
