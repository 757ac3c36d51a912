"""``container:IMAGE[,broker=KIND]``: a broker in a Docker container (apache/kafka, cp-kafka, Redpanda) via
testcontainers.

``broker`` says how the image is started: ``kafka`` (a KRaft node configured through the environment, as the
apache/kafka and cp-kafka images take it) or ``redpanda`` (testcontainers' Redpanda module). Without it, an image
whose repository is named ``redpanda`` is started as Redpanda, any other as Kafka.

Needs a reachable Docker engine; :func:`docker_unavailable_reason` says, within seconds, why not.
"""

from __future__ import annotations

import base64
import os
import socket
import time
import uuid
from typing import Any

from .base import Capability, Target, TargetInfo, TargetUnavailable
from .ports import free_port
from .readiness import wait_for_metadata
from .registry import TargetKind

PREFIX = "container:"
DOCKER_TIMEOUT = 3  # seconds; a missing engine must never stall a run
START_TIMEOUT = 180.0  # a JVM broker on 2 cores, after the image is pulled
CONTROLLER_PORT = 29093  # inside the container only
BROKERS = ("kafka", "redpanda")  # how an image is started: the values of the broker= option


def docker_unavailable_reason() -> str | None:
    """None when a Docker engine answers, else a one-line reason mentioning Docker."""
    try:
        import docker
    except ImportError:
        return "no Docker engine reachable: the docker package is not installed (pip install testcontainers)"
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if where.startswith("unix://"):
        # docker-py leaks its socket when a unix connect fails, so try the socket ourselves first.
        problem = _unix_socket_problem(where[len("unix://") :])
        if problem:
            return f"no Docker engine reachable at {where}: {problem}"
    try:
        # A fixed API version keeps from_env offline, so the client exists (and is closed) even when
        # the engine is missing; the unversioned /version call then answers on any engine release.
        client = docker.from_env(version=docker.constants.MINIMUM_DOCKER_API_VERSION, timeout=DOCKER_TIMEOUT)
        try:
            client.api.version(api_version=False)
        finally:
            client.close()
    except Exception as exc:  # DockerException, requests errors: the engine is not there
        return f"no Docker engine reachable at {where}: {_one_line(exc)}"
    try:
        import testcontainers.core.container  # noqa: F401
    except ImportError:
        return "Docker is reachable but testcontainers>=4.15 is not installed (pip install 'testcontainers>=4.15,<5')"
    return None


def _unix_socket_problem(path: str) -> str | None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(DOCKER_TIMEOUT)
        try:
            probe.connect(path)
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def _one_line(exc: Exception, limit: int = 160) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def image_tag(image: str) -> str | None:
    """``4.1.1`` for ``apache/kafka:4.1.1``; None for an untagged image or a registry port."""
    name = image.split("@", 1)[0]
    last_part = name.rsplit("/", 1)[-1]
    return last_part.split(":", 1)[1] if ":" in last_part else None


def split_spec(spec: str) -> tuple[str, str]:
    """``container:IMAGE[,broker=KIND]`` → (image, broker kind); ValueError names what is wrong."""
    if not spec.startswith(PREFIX) or len(spec) == len(PREFIX):
        raise ValueError(f"not a container spec: {spec!r} (expected container:IMAGE)")
    image, _, option = spec[len(PREFIX) :].partition(",")
    if not option:
        return image, "redpanda" if repository_name(image) == "redpanda" else "kafka"
    name, _, broker = option.partition("=")
    if name != "broker" or broker not in BROKERS:
        raise ValueError(f"{spec!r}: the one option of container: is broker={' or broker='.join(BROKERS)}, "
                         f"not {option!r}")
    return image, broker


def repository_name(image: str) -> str:
    """``redpanda`` for ``docker.redpanda.com/redpandadata/redpanda:v24.2.4``: the image's name, without its
    registry, owner, tag or digest."""
    return image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]


def kraft_environment(port: int, advertised_host: str) -> dict[str, str]:
    """A single-node KRaft broker+controller whose client listener is ``port`` inside and outside.

    The same number on both sides of the port mapping is what makes the advertised listener true
    without knowing the mapped port before the broker starts. Replication settings of 1 let the
    internal topics (offsets, transaction state, share-group state) exist on one broker.
    """
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    return {
        "CLUSTER_ID": cluster_id,
        "KAFKA_NODE_ID": "1",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_LISTENERS": f"PLAINTEXT://0.0.0.0:{port},CONTROLLER://0.0.0.0:{CONTROLLER_PORT}",
        "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://{advertised_host}:{port}",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "PLAINTEXT",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": f"1@localhost:{CONTROLLER_PORT}",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR": "1",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    }


class ContainerTarget(Target):
    kind = "container"
    description = ("a broker image run by Docker via testcontainers (container:apache/kafka:4.1.1; "
                   "container:IMAGE,broker=redpanda for a Redpanda image not named redpanda)")

    def __init__(self, spec: str):
        super().__init__(spec)
        self.image, self.broker = split_spec(spec)
        self.is_redpanda = self.broker == "redpanda"
        # Redpanda's module maps a random host port, which a restart may change; Kafka's fixed port stays. After a
        # crash Redpanda is started afresh in a new container (revive); Kafka's is restarted.
        self.capabilities = frozenset({Capability.LOGS, Capability.REVIVE} if self.is_redpanda
                                      else {Capability.LOGS, Capability.RESTART})
        self._container: Any = None  # testcontainers' DockerContainer or RedpandaContainer, imported on start
        self._bootstrap: str | None = None
        self._final_logs: str | None = None

    @classmethod
    def matches(cls, spec: str) -> bool:
        return spec.startswith(PREFIX) and len(spec) > len(PREFIX)

    @classmethod
    def availability(cls) -> str | None:
        return docker_unavailable_reason()

    # lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        if self._container:
            return
        reason = docker_unavailable_reason()
        if reason:
            raise TargetUnavailable(reason)
        self._final_logs = None
        try:
            if self.is_redpanda:
                self._start_redpanda()
            else:
                self._start_kafka()
        except Exception as exc:  # pull failures, API errors, wait timeouts
            self.stop()
            raise TargetUnavailable(f"container {self.image} did not start: {_one_line(exc, 400)}") from exc
        failure = wait_for_metadata(self.bootstrap, START_TIMEOUT, is_running=self._is_running)
        if failure:
            logs = self.logs() or ""
            self.stop()
            raise TargetUnavailable(f"container {self.image} is not serving: {failure}; last output:\n{logs[-2000:]}")

    def _start_kafka(self) -> None:
        from testcontainers.core.container import DockerContainer

        port = free_port()
        while port == CONTROLLER_PORT:
            port = free_port()
        container = DockerContainer(self.image, docker_client_kw={"timeout": 60})
        host = container.get_docker_client().host()
        host = "127.0.0.1" if host == "localhost" else host  # avoid ::1 first on dual-stack hosts
        container.with_bind_ports(port, port).with_envs(**kraft_environment(port, host))
        self._container = container
        container.start()
        self._bootstrap = f"{host}:{port}"

    def _start_redpanda(self) -> None:
        from testcontainers.community.kafka import RedpandaContainer

        container = RedpandaContainer(image=self.image)
        self._container = container
        container.start(timeout=int(START_TIMEOUT))
        self._bootstrap = container.get_bootstrap_server()

    def _is_running(self) -> bool:
        try:
            wrapped = self._container.get_wrapped_container()
            wrapped.reload()
        except Exception:  # removed behind our back, or the engine went away
            return False
        return wrapped.status in ("created", "running", "restarting")

    def stop(self) -> None:
        container, self._container = self._container, None
        if container is None:
            return
        self._final_logs = _decoded_logs(container)
        container.stop()

    def revive(self) -> None:
        """A new container after the old one died (a new host port, its data lost)."""
        self.stop()
        self.start()

    def ended(self, wait: float = 0.0) -> str | None:
        """How the container ended ("its container exited with status 137"), once it has; None while it runs."""
        container = self._container
        if container is None:
            return None
        deadline = time.monotonic() + wait
        while True:
            try:
                wrapped = container.get_wrapped_container()
                wrapped.reload()
            except Exception:  # noqa: BLE001 - removed behind our back, or the engine went away
                return "its container is gone"
            if wrapped.status not in ("created", "running", "restarting", "paused"):
                state = wrapped.attrs.get("State", {})
                killed = " (killed for want of memory)" if state.get("OOMKilled") else ""
                return f"its container exited with status {state.get('ExitCode')}{killed}"
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.2)

    def restart(self) -> None:
        if self.is_redpanda:
            super().restart()
        if self._container is None:
            raise RuntimeError(f"target {self.spec!r} is not started")
        self._container.get_wrapped_container().restart(timeout=30)
        failure = wait_for_metadata(self.bootstrap, START_TIMEOUT, is_running=self._is_running)
        if failure:
            raise TargetUnavailable(f"container {self.image} did not come back after restart: {failure}")

    @property
    def bootstrap(self) -> str:
        if not self._bootstrap:
            raise RuntimeError(f"target {self.spec!r} is not started")
        return self._bootstrap

    @property
    def version(self) -> str | None:
        return image_tag(self.image)

    def info(self) -> TargetInfo:
        info = super().info()
        info.extra["image"] = self.image
        return info

    def logs(self) -> str | None:
        if self._container is not None:
            return _decoded_logs(self._container)
        return self._final_logs


def _decoded_logs(container) -> str | None:
    try:
        stdout, stderr = container.get_logs()
    except Exception:  # never created (pull failed, engine gone): nothing to show
        return None
    return stdout.decode(errors="replace") + stderr.decode(errors="replace")


def container_target_kind() -> TargetKind:
    return TargetKind.of(ContainerTarget)
