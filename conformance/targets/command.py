"""``command:FILE``: a broker of your own that the harness starts as a local process, as it starts Tansu, and brings
back after a crash.

FILE is YAML: the command line, with ``{port}`` where the broker's Kafka listener port goes (the harness picks a
free port on 127.0.0.1 for each launch), and what to call the product in reports::

    product: Redpanda
    version: 24.2.1
    command: [rpk, redpanda, start, --mode, dev-container, --kafka-addr, "127.0.0.1:{port}",
              --advertise-kafka-addr, "127.0.0.1:{port}"]

The command runs in FILE's folder, in its own output file (kept for ``logs()`` and a crash's verdict). The broker
is ready once it answers Metadata on the port, as a client would see it. A crash is a finding: the process is
started afresh (its data lost, as a new process has none of it) and the run goes on.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from pathlib import Path

from ..checked_yaml import load as load_checked
from .base import Capability, TargetInfo
from .ports import free_port
from .process import ProcessTarget
from .readiness import wait_for_metadata

PREFIX = "command:"
PORT = "{port}"
START_TIMEOUT_S = 30.0
SCHEMA = {
    "type": "object",
    "required": ["command"],
    "additionalProperties": False,
    "properties": {
        "product": {"type": "string", "minLength": 1, "description": "the broker's name in reports"},
        "version": {"type": "string", "minLength": 1},
        "command": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1},
                    "contains": {"type": "string", "pattern": r"\{port\}"}},
        "environment": {"type": "object", "additionalProperties": {"type": "string"}},
        "start_timeout_s": {"type": "number", "exclusiveMinimum": 0},
        "stop_signal": {"enum": ["SIGTERM", "SIGINT"]},
    },
}


class CommandTarget(ProcessTarget):
    kind = "command"
    description = ("a broker of yours started as a local process from a YAML file: its command line with {port} "
                   "(command:broker.yaml)")
    capabilities = frozenset({Capability.LOGS, Capability.REVIVE})
    start_attempts = 3  # a fresh port each time: another process may take a free port before the broker binds it

    def __init__(self, spec: str):
        super().__init__(spec)
        self.file = Path(spec[len(PREFIX):]).expanduser()
        # read and checked here, before any item runs: a problem names the file, its line and the field
        self.settings: dict = load_checked(self.file, SCHEMA)
        self.process_name = f"{self.settings.get('product', self.file.name)}'s process"
        self.stop_signal = int(getattr(signal, self.settings.get("stop_signal", "SIGTERM")))
        self._port: int | None = None
        self._log_path: str | None = None

    @classmethod
    def matches(cls, spec: str) -> bool:
        return spec.startswith(PREFIX) and len(spec) > len(PREFIX)

    def provisioned_brokers(self) -> int:
        return 1

    # lifecycle -----------------------------------------------------------------------------
    def launch(self) -> None:
        self._port = port = free_port()
        command = [part.replace(PORT, str(port)) for part in self.settings["command"]]
        log_fd, self._log_path = tempfile.mkstemp(prefix="command-target-", suffix=".log")
        environment = {**os.environ, **self.settings.get("environment", {})}
        with os.fdopen(log_fd, "wb") as log:
            self._launched(subprocess.Popen(command, cwd=self.file.resolve().parent, env=environment,
                                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT))

    def ready(self, began: float) -> str:
        """Empty once the broker answers Metadata on its port, else why it is not ready."""
        process = self._process
        assert process is not None
        failure = wait_for_metadata(self.bootstrap, float(self.settings.get("start_timeout_s", START_TIMEOUT_S)),
                                    is_running=lambda: process.poll() is None)
        if process.poll() is not None:  # an answer from a process that has exited came from someone else's port
            return f"exited with code {process.returncode}"
        return failure

    def log_file(self) -> Path | None:
        return Path(self._log_path) if self._log_path else None

    def _discard_output(self) -> None:
        if self._log_path:
            os.unlink(self._log_path)
            self._log_path = None

    @property
    def bootstrap(self) -> str:
        if self._port is None:
            raise RuntimeError(f"target {self.spec!r} is not started")
        return f"127.0.0.1:{self._port}"

    @property
    def version(self) -> str | None:
        return self.settings.get("version")

    @property
    def name(self) -> str | None:
        return self.settings.get("product")

    def info(self) -> TargetInfo:
        info = super().info()
        info.extra.update(command=str(self.file))
        return info
