"""The one interface every target implements: start or attach to a broker, say what it can do, stop it."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, ClassVar

from ..client.security import Security

if TYPE_CHECKING:
    from .nodes import NodeFaults
    from .node_control import NodeControl
    from .principals import Principal


class TargetUnavailable(RuntimeError):
    """This target cannot run on this machine (no Docker engine, no binary, ...); the reason says why."""


class TargetRefused(TargetUnavailable):
    """The target answers, but not to the harness as configured (credentials, certificates, TLS or not,
    a SASL mechanism it does not enable); the message says which in one line, with no secret."""

    what = "cannot be reached as configured"


class CapabilityMissing(RuntimeError):
    """A case asked for something (restart, fault injection) this target cannot do."""


class ControlFailed(RuntimeError):
    """A command the user gave the harness to control the target (``--node-control``) failed or timed out. The
    message is one line naming the command, the node, the exit status and the tail of its error output, never
    the command's text or a secret; the items that needed it get no verdict (blocked), the run goes on."""


class Capability(StrEnum):
    """What a target can do beyond starting, answering and stopping (:attr:`Target.capabilities`).

    A member is its own name as a string, so the values read the same in messages and in a ``frozenset``."""

    RESTART = "restart"  # restart(): the broker again on the same ports with the same data
    REVIVE = "revive"  # revive(): afresh after a crash, its data lost
    LOGS = "logs"  # logs(): the broker's log
    PRINCIPALS = "principals"  # principal(): users the broker authorizes apart from the harness
    TWIN = "twin"  # a second target of the same spec beside this one is cheap (the serial items run there)
    NODES = "nodes"  # a cluster of nodes a case can stop and start one by one
    FAULTS = "faults"  # fault(): faults beyond restart (offers_fault() says which)
    PROXY = "proxy"  # the fault proxy stands in front of the broker
    EMULATE = "emulate"  # a draft KIP emulated in front of the broker
    CONFIGURE = "configure"  # configure(): takes the user's client config and principals (a broker it attaches to)


@dataclass
class TargetInfo:
    """What a target says about itself once started; reports and results carry it."""

    kind: str
    spec: str
    version: str | None = None
    bootstrap: str | None = None
    name: str | None = None  # the product the user named it (Target.name)
    extra: dict = field(default_factory=dict)


class Target:
    """Base class of all targets.

    Lifecycle: ``start()`` (provision or attach), ``bootstrap`` (``host:port``), ``stop()``. How a client
    reaches ``bootstrap``: ``security`` (the raw client) and ``client_config()`` (librdkafka's settings).
    Optional abilities are listed in ``capabilities`` (:class:`Capability`) and implemented by ``restart``,
    ``logs``, ``fault``, ``principal`` and ``configure``; the defaults raise :class:`CapabilityMissing` so a
    case can skip with a reason.
    ``twin``: the harness can start a second target of the same spec beside this one, cheaply enough to
    run the serial items there while the others run here (one process it provisions; not a cluster, not a
    container with fixed ports).
    """

    kind: str = "abstract"
    capabilities: frozenset[Capability] = frozenset()
    # The class is its kind's registry entry (``registry.add(TansuTarget)``): ``kind`` names it, these describe it.
    description: ClassVar[str] = ""  # what ``conformance targets`` says of the kind
    fallback: ClassVar[bool] = False  # a catch-all (HOST:PORT), tried only after every other kind

    def __init__(self, spec: str):
        self.spec = spec

    @classmethod
    def matches(cls, spec: str) -> bool:
        """Whether ``spec`` names a target of this kind (then ``cls(spec)`` builds it); by default the kind's name."""
        return spec == cls.kind

    @classmethod
    def availability(cls) -> str | None:
        """None where targets of this kind can run on this machine, else why not (a binary, an engine missing)."""
        return None

    # lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Brings the target up (or checks that an attached one answers); :attr:`bootstrap` answers from then on."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stops what :meth:`start` started and releases its ports and folders; an attached broker is left running."""
        raise NotImplementedError

    @property
    def bootstrap(self) -> str:
        raise NotImplementedError

    @property
    def version(self) -> str | None:
        return None

    @property
    def name(self) -> str | None:
        """The product the user named this target (``PRODUCT[:VERSION]@HOST:PORT``), for reports and the results'
        ``target_name``; None where the spec itself says what runs (``kafka:4.4.0``) or nothing was named."""
        return None

    def info(self) -> TargetInfo:
        """What the reports say of this target: kind, spec, version, bootstrap address and the user's name for it."""
        return TargetInfo(kind=self.kind, spec=self.spec, version=self.version, bootstrap=self.bootstrap,
                          name=self.name)

    # how clients reach the broker ---------------------------------------------------------------
    @property
    def security(self) -> Security:
        """How the harness's raw client connects to ``bootstrap`` (TLS, SASL): plaintext by default."""
        return Security()

    def client_config(self) -> dict[str, str]:
        """librdkafka settings to reach ``bootstrap`` (for the clients of the exactly-once tier), secrets
        included: never log the result. Only the address by default."""
        return {"bootstrap.servers": self.bootstrap}

    def configure(self, *, client_config: dict[str, str] | None = None,
                  principals: dict[str, Principal] | None = None, node_control: NodeControl | None = None) -> None:
        """Take the user's client config (``--client-config``), the principals the authorization cases run
        as (``--principal``) and the commands that control its nodes (``--node-control``), any of them; a target
        with capability ``configure`` (a broker the harness attaches to) takes them, every other one raises
        :class:`CapabilityMissing`: the harness configures the brokers it starts itself."""
        raise CapabilityMissing(f"target {self.spec!r} takes no client config or principals (the harness "
                                "configures the brokers it starts)")

    # optional abilities --------------------------------------------------------------------
    def restart(self) -> None:
        """Stops and starts the broker, its data kept (``Capability.RESTART``); raises :class:`CapabilityMissing` where it cannot."""
        raise CapabilityMissing(f"target {self.spec!r} cannot restart its broker")

    def revive(self) -> None:
        """Start afresh after a crash, its data lost (capability ``revive``); never a fault a case asks for:
        a case that restarts the broker expects its data kept (``restart``)."""
        raise CapabilityMissing(f"target {self.spec!r} cannot be started afresh")

    def logs(self) -> str | None:
        """The broker's log where the harness can read it (evidence for restart and crash departures), else None."""
        return None

    def known_issues(self) -> list[dict]:
        """Known bugs of the implementation whose signature its own log shows since it started (for a Kafka
        the harness provisioned: :mod:`conformance.targets.kafka.known_issues`); none by default."""
        return []

    def ended(self, wait: float = 0.0) -> str | None:
        """How the target's process ended, once it has ("exited with status 1"); None while it runs, and
        where the harness owns no process. ``wait``: seconds to give a process that may be exiting (its
        connections close a moment before it can be reaped)."""
        return None

    def nodes_by_role(self) -> NodeFaults | None:
        """Who finds this target's nodes by role (the coordinator of an id, a partition's leader or followers) for
        its node faults (``Capability.NODES``): a provisioned cluster itself, an attached one's node control; None
        by default."""
        return None

    def heal(self) -> None:
        """Undo what faults left behind (nodes down) before the next case; nothing to undo by default."""

    def fault(self, name: str, **arguments) -> None:
        """Injects the fault ``name`` (see ``offers_fault``); raises :class:`CapabilityMissing` where the target has none."""
        raise CapabilityMissing(f"target {self.spec!r} has no fault {name!r}")

    def offers_fault(self, name: str) -> bool:
        """Whether ``fault(name)`` is one this target carries out; asked before a case sets anything up, so
        a case needing a fault the target lacks is skipped at once rather than after its set-up."""
        return False

    def why_no_fault(self, name: str) -> str:
        """Why ``fault(name)`` is not offered (``offers_fault`` is False), in words a user can act on."""
        return f"target {self.spec!r} has no fault {name!r}"

    def provisioned_brokers(self) -> int | None:
        """How many brokers the harness provisioned for this target; None where it only attaches to one
        (``HOST:PORT``): then a case's need for replicas is checked against the broker's Metadata."""
        return None

    def principal(self, name: str) -> tuple[str, Security]:
        """Where and how to connect as the named principal (a user the broker authorizes apart from
        the harness, for authorization cases): ``(bootstrap, Security)``."""
        raise CapabilityMissing(f"target {self.spec!r} has no principal {name!r} (no authorizer)")

    def kafka_principal(self, name: str) -> str | None:
        """The Kafka principal (``User:alice``) the broker's ACLs know the named principal by, where it is
        not ``User:NAME`` (what the suites grant rights to); None: ``User:NAME`` itself."""
        return None

    def __enter__(self) -> "Target":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def wait_for_port(host: str, port: int, timeout: float) -> bool:
    """True once something accepts TCP connections on host:port, False after ``timeout`` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def stop_process(process, first_signal: int, grace_seconds: float) -> None:
    """Ask a child process to stop with ``first_signal``; SIGKILL it if it has not exited in time."""
    import subprocess

    if process.poll() is not None:
        return
    process.send_signal(first_signal)
    try:
        process.wait(grace_seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
