"""``rdkafka-mock[:N]``: librdkafka's mock cluster, the target that runs everywhere.

It starts in well under a second and takes injected faults, but it is a simplified broker (no CreateTopics,
no read_committed filtering on Fetch), so it serves the harness's own tests and fault cases rather than as
evidence of conformance.

The cluster lives in a process of its own (:mod:`.rdkafka_mock_cluster` owns it there). The mock is C code
that aborts on some inputs; in the harness's process, that would end the whole run without a word. In a
child it ends the target only: its ports close, the runner says the target stopped answering after the
item that did it, :meth:`RdkafkaMockTarget.ended` says how the process ended, and the runner starts a new
cluster (``revive``) for the items after it.
"""

from __future__ import annotations

import multiprocessing
import re
import threading
from typing import Any, Callable

from . import librdkafka
from .base import Capability, TargetUnavailable
from .process import ProcessTarget
from .rdkafka_mock_cluster import FAULTS, MockCluster
from .registry import TargetKind

_SPEC = re.compile(r"rdkafka-mock(?::(?P<brokers>[1-9]\d*))?")
_PROCESSES = multiprocessing.get_context("spawn")  # not fork: the harness runs threads
ANSWER_TIMEOUT_S = 30  # the cluster's process answers a call in milliseconds; this long means it hangs


class RdkafkaMockTarget(ProcessTarget):
    """The process is a :mod:`multiprocessing` one, not a :class:`subprocess.Popen`: the target talks to the
    cluster through a pipe, and ends the process and reads its exit code its own way."""

    kind = "rdkafka-mock"
    description = "librdkafka's mock cluster, in a child process (rdkafka-mock or rdkafka-mock:N brokers)"
    # revive, not restart: a new cluster has none of the old one's data, which a restart case expects kept
    capabilities = frozenset({Capability.FAULTS, Capability.TWIN, Capability.REVIVE})
    process_name = "its cluster's process"
    _process: Any  # a multiprocessing.Process
    signal_note = " (librdkafka's mock aborted)"

    def __init__(self, spec: str = "rdkafka-mock"):
        super().__init__(spec)
        match = _SPEC.fullmatch(spec)
        if not match:
            raise ValueError(f"not an rdkafka-mock spec: {spec!r} (expected rdkafka-mock or rdkafka-mock:N)")
        self.broker_count = int(match["brokers"] or 1)
        self._process = None
        self._connection = None
        self._bootstrap: str | None = None
        self._calls = threading.Lock()  # items on several threads may inject faults: one call at a time

    @classmethod
    def matches(cls, spec: str) -> bool:
        return _SPEC.fullmatch(spec) is not None

    @classmethod
    def availability(cls) -> str | None:
        try:
            librdkafka.load()
        except librdkafka.LibrdkafkaMissing as exc:
            return str(exc)
        return None

    # lifecycle -----------------------------------------------------------------------------
    def provision(self) -> None:
        problem = self.availability()
        if problem is not None:
            raise TargetUnavailable(problem)

    def launch(self) -> None:
        self._process, self._connection = self._new_process()

    def ready(self, began: float) -> str:
        try:
            self._bootstrap = self._started(self._process, self._connection)
        except BaseException:
            self._process = self._connection = None
            raise
        return ""

    def _new_process(self):
        """A new process that will serve a cluster, and the harness's end of the pipe to it."""
        ours, theirs = _PROCESSES.Pipe()
        process = _PROCESSES.Process(target=serve, args=(theirs, self.broker_count), daemon=True,
                                     name=f"{self.spec} cluster")
        process.start()
        theirs.close()
        return process, ours

    def _started(self, process, connection) -> str:
        """The bootstrap of the cluster the process starts; the process ended if it does not."""
        try:
            return self._call_on(process, connection, "start")
        except BaseException:
            self._end(process, connection)
            raise

    def _end_process(self) -> str:
        process, connection = self._process, self._connection
        self._process = self._connection = self._bootstrap = None
        if process is not None:
            self._end(process, connection)
        return ""  # the cluster's process prints to the harness's stderr

    @staticmethod
    def _end(process, connection) -> None:
        if process.is_alive():
            try:
                connection.send(("stop", (), {}))
                connection.poll(5)
            except (OSError, EOFError):
                pass
            process.join(5)
        if process.is_alive():
            process.kill()
            process.join(5)
        connection.close()

    def revive(self) -> None:
        """A new cluster in a new process (new ports too) after the old one crashed. The new one is up
        before the target points at it: items on other threads never find the target unstarted."""
        self.provision()
        process, connection = self._new_process()
        bootstrap = self._started(process, connection)
        with self._calls:
            old = self._process, self._connection
            self._process, self._connection, self._bootstrap = process, connection, bootstrap
        if old[0] is not None:
            self._end(*old)

    @property
    def bootstrap(self) -> str:
        if not self._bootstrap:
            raise RuntimeError(f"target {self.spec!r} is not started")
        return self._bootstrap

    @property
    def version(self) -> str | None:
        try:
            return "librdkafka " + librdkafka.load().rd_kafka_version_str().decode()
        except librdkafka.LibrdkafkaMissing:
            return None

    def _exit_code(self, wait: float) -> int | None:
        process = self._process
        if process is None:
            return None
        if wait:
            process.join(wait)
        return None if process.is_alive() else process.exitcode

    # the cluster's process ------------------------------------------------------------------
    def _call(self, method: str, *args, **kwargs):
        with self._calls:
            if self._connection is None:
                raise RuntimeError(f"target {self.spec!r} is not started")
            return self._call_on(self._process, self._connection, method, *args, **kwargs)

    def _call_on(self, process, connection, method: str, *args, **kwargs):
        try:
            connection.send((method, args, kwargs))
            if not connection.poll(ANSWER_TIMEOUT_S):
                raise TargetUnavailable(f"target {self.spec}: its cluster's process did not answer {method} "
                                        f"within {ANSWER_TIMEOUT_S} s")
            status, value = connection.recv()
        except (EOFError, OSError):
            raise TargetUnavailable(f"target {self.spec} is gone: {self._ending(process)}") from None
        if status == "raised":
            raise value
        return value

    def _ending(self, process) -> str:
        process.join(1)
        code = process.exitcode
        return f"{self.process_name} stopped answering" if code is None else self.describe_exit(code)

    # request tracking: what clients sent, to check retries and fallbacks ---------------------
    def start_request_tracking(self) -> None:
        self._call("start_request_tracking")

    def tracked_requests(self) -> list[tuple[int, int]]:
        """``(broker id, API key)`` of every request received since tracking started, in order."""
        return self._call("tracked_requests")

    # faults --------------------------------------------------------------------------------
    def fault(self, name: str, **arguments) -> None:
        self._call("fault", name, **arguments)

    def offers_fault(self, name: str) -> bool:
        return name in FAULTS

    def provisioned_brokers(self) -> int:
        return self.broker_count


def serve(connection, broker_count: int) -> None:
    """The cluster's process: start the cluster, then carry out the target's calls until told to stop."""
    cluster = MockCluster(broker_count)

    def start() -> str:
        cluster.start()
        return cluster.bootstrap

    calls: dict[str, Callable[..., Any]] = {
        "start": start, "fault": cluster.fault, "start_request_tracking": cluster.start_request_tracking,
        "tracked_requests": cluster.tracked_requests}
    try:
        while True:
            try:
                method, args, kwargs = connection.recv()
            except EOFError:  # the harness went away
                return
            if method == "stop":
                return
            try:
                connection.send(("returned", calls[method](*args, **kwargs)))
            except Exception as error:  # noqa: BLE001 - the target raises it in the harness's process
                connection.send(("raised", error))
    finally:
        cluster.stop()
        connection.close()


def rdkafka_mock_target_kind() -> TargetKind:
    return TargetKind.of(RdkafkaMockTarget)
