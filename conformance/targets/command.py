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
from pathlib import Path

from ..checked_yaml import load as load_checked
from .base import Capability, TargetInfo
from .process import LoopbackProcess

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


class CommandTarget(LoopbackProcess):
    kind = "command"
    description = ("a broker of yours started as a local process from a YAML file: its command line with {port} "
                   "(command:broker.yaml)")
    capabilities = frozenset({Capability.LOGS, Capability.REVIVE})
    start_attempts = 3  # a fresh port each time: another process may take a free port before the broker binds it
    log_prefix = "command-target-"

    def __init__(self, spec: str):
        super().__init__(spec)
        self.file = Path(spec[len(PREFIX):]).expanduser()
        # read and checked here, before any item runs: a problem names the file, its line and the field
        self.settings: dict = load_checked(self.file, SCHEMA)
        self.process_name = f"{self.settings.get('product', self.file.name)}'s process"
        self.stop_signal = int(getattr(signal, self.settings.get("stop_signal", "SIGTERM")))
        self.start_timeout_s = float(self.settings.get("start_timeout_s", START_TIMEOUT_S))

    @classmethod
    def matches(cls, spec: str) -> bool:
        return spec.startswith(PREFIX) and len(spec) > len(PREFIX)

    def provisioned_brokers(self) -> int:
        return 1

    # lifecycle -----------------------------------------------------------------------------
    def launch(self) -> None:
        environment = {**os.environ, **self.settings.get("environment", {})}
        self._start_on_a_free_port(lambda port: [part.replace(PORT, str(port)) for part in self.settings["command"]],
                                   cwd=self.file.resolve().parent, env=environment)

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
