"""Apache Kafka as a local single-node KRaft process (combined broker and controller) on 127.0.0.1.

Specs: ``kafka`` (the pinned :data:`DEFAULT_KAFKA_VERSION`, or the version in ``KAFKA_HOME``) and
``kafka:VERSION``, each optionally followed by feature levels the storage is formatted with
(``kafka,transaction.version=1``, ``kafka:3.9.1,transaction.version=0``: one node; with ``nodes=N``
the spec is a cluster's, see :mod:`conformance.targets.kafka.cluster_target`), and by a secured listener the
harness then reaches it through (``kafka,security=SASL_SSL,sasl.mechanism=SCRAM-SHA-512``,
``kafka,security=SSL,ssl.client.auth=required``: see :mod:`conformance.targets.kafka.security`). Each started target owns a folder (in memory where
it can be: :func:`brokers_folder`) holding server.properties, the
logging configs, the KRaft data and ``broker.log`` (everything the JVM prints); ``stop()`` ends the
process without a clean shutdown and deletes the folder unless ``CONFORMANCE_KEEP_BROKER_DIR`` is set (then
it shuts down cleanly and keeps it), and ``logs()`` still answers afterwards. ``restart()`` always shuts
down cleanly.

Start-up: write the config, format the storage once (``kafka.tools.StorageTool``), launch
``kafka.Kafka``, then wait until the controller answers a validate-only CreateTopics. Brokers still
running when Python exits are stopped by an ``atexit`` hook.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import warnings
from pathlib import Path
from typing import NoReturn

from confluent_kafka.admin import AdminClient, NewTopic

from ..base import Capability, TargetInfo, TargetUnavailable
from ..ports import free_port
from ..process import ProcessTarget
from ..properties import read_properties
from ...client.security import Security
from .config import (
    DEFAULT_PROFILE,
    PRINCIPALS,
    add_listeners,
    as_property,
    authorizer_settings,
    base_settings,
    render_properties,
    write_logging_configs,
)
from .jars import DEFAULT_KAFKA_VERSION, cache_root, ensure_kafka_jars, kafka_home_libs, version_of_libs
from . import cds as kafka_cds
from . import disks as kafka_disks
from . import storage as kafka_storage
from . import known_issues as kafka_known_issues
from .preview import PREVIEW_OPTIONS, preview_settings
from .security import SECURITY_OPTIONS, SecuredListener
from ..registry import TargetKind

__all__ = ["DEFAULT_KAFKA_VERSION", "BrokerStartFailed", "KafkaTarget", "ensure_kafka_jars", "kafka_target_kind"]

SPEC = re.compile(r"kafka(?::(?P<version>\d+\.\d+\.\d+[\w.-]*))?")
# Finalized features a spec may set (``kafka,transaction.version=1``): formatted into the storage with
# ``--feature NAME=LEVEL`` (KIP-1022), so the broker runs at that level from its first start.
FEATURE_OPTIONS = ("transaction.version", "group.version")
# Start-up speed on a 2-core machine: the C1 compiler only and the serial collector cut JVM warm-up,
# which dominates the start of an idle broker; a conformance broker never needs peak throughput.
JVM_FLAGS = [
    "-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
    "-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true", "-Djava.awt.headless=true",
]  # fmt: skip
MEMORY_FOLDER = "/dev/shm"
MEMORY_FOLDER_MIN_FREE = 2 << 30  # a run's brokers use tens of MiB there; the rest is a margin for long runs
STARTUP_TIMEOUT_SECONDS = 60.0
STARTUP_GRACE_SECONDS = 20.0  # more time for a broker whose log still grows at the timeout
STARTUP_PATIENCE = 4  # ... up to this many times the timeout in all
_LAUNCH_MARK = "--- conformance: starting Kafka "  # the line each launch writes first in the log
STOP_GRACE_SECONDS = 15.0
LOG_TAIL_BYTES = 1 << 20
READINESS_PROBE_TOPIC = "conformance-readiness-probe"

class BrokerStartFailed(TargetUnavailable):
    """The broker process exited or never became ready; the message ends with its log tail."""


def version_in_spec(spec: str) -> str | None:
    match = SPEC.fullmatch(spec)
    if match is None:
        raise ValueError(f"not a kafka target spec: {spec!r} (expected 'kafka' or 'kafka:VERSION')")
    return match.group("version")


def split_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``kafka:3.9.1,transaction.version=1,nodes=3`` → (``kafka:3.9.1``, {"transaction.version": "1",
    "nodes": "3"}); the options are not checked here beyond ``name=value``."""
    base, *parts = spec.split(",")
    version_in_spec(base)
    options: dict[str, str] = {}
    for part in parts:
        name, equals, value = part.partition("=")
        if not equals or not name or not value:
            raise ValueError(f"{spec!r}: malformed option {part!r} (expected name=value)")
        options[name] = value
    return base, options


def feature_levels(spec: str, options: dict[str, str]) -> dict[str, int]:
    """The feature options among ``options`` as ``{name: level}``; ValueError for a level that is no number."""
    levels = {}
    for name in FEATURE_OPTIONS:
        if name in options:
            if not options[name].isdigit():
                raise ValueError(f"{spec!r}: {name} takes a feature level (a number), not {options[name]!r}")
            levels[name] = int(options[name])
    return levels


def is_single_node_spec(spec: str) -> bool:
    """``kafka``, ``kafka:VERSION``, each with feature options only (``kafka,transaction.version=1``)."""
    try:
        _, options = split_spec(spec)
    except ValueError:
        return False
    return all(name in FEATURE_OPTIONS or name in SECURITY_OPTIONS or name in PREVIEW_OPTIONS for name in options)


def random_cluster_id() -> str:
    """A random cluster id, as Kafka writes one."""
    return kafka_storage.random_id()


def java_executable() -> str | None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    return shutil.which("java")


class KafkaTarget(ProcessTarget):
    kind = "kafka"
    capabilities = frozenset({Capability.RESTART, Capability.LOGS, Capability.PRINCIPALS, Capability.TWIN})
    description = (f"Apache Kafka as a local KRaft process (kafka = {DEFAULT_KAFKA_VERSION}, or kafka:VERSION; "
                   f"feature levels as options: kafka,transaction.version=1; a secured listener: "
                   f"kafka,security=SASL_SSL,sasl.mechanism=SCRAM-SHA-512 or kafka,security=SSL,ssl.client.auth=required; "
                   f"KIP-939 two-phase commit, unstable in Kafka 4.x: kafka,two.phase.commit=true; KIP-848 consumer groups "
                   f"where 3.7 to 3.9 had them as a preview: kafka:3.9.2,consumer.groups=true)")
    process_name = "Kafka's process"
    log_tail_bytes = LOG_TAIL_BYTES

    @classmethod
    def matches(cls, spec: str) -> bool:
        return is_single_node_spec(spec)

    @classmethod
    def availability(cls) -> str | None:
        if java_executable() is None:
            return "java is not on PATH (set JAVA_HOME or install a JDK 17+)"
        if os.environ.get("KAFKA_HOME") or shutil.which("mvn") or any(cache_root().glob("kafka-*/libs")):
            return None
        return ("no Kafka jars: set KAFKA_HOME, put mvn on PATH, or pre-fetch with "
                "python -m conformance.targets.kafka.jars")

    def __init__(
        self,
        spec: str = "kafka",
        *,
        profile: Path | str | None = DEFAULT_PROFILE,
        overrides: dict[str, object] | None = None,
        features: dict[str, int] | None = None,
        extra_listeners: dict[str, int] | None = None,
        authorizer: bool = True,
        startup_timeout: float = STARTUP_TIMEOUT_SECONDS,
    ):
        """``profile`` is a properties file layered over the base settings (None: none), ``overrides``
        win over both, and ``features`` become ``--feature name=level`` when the storage is formatted
        (e.g. ``{"transaction.version": 1}`` to run 4.x with the pre-KIP-890 protocol).
        ``extra_listeners`` maps a security protocol (SSL, SASL_PLAINTEXT, ...) to a loopback port;
        its settings (keystores, JAAS) go in ``overrides``. The harness itself uses PLAINTEXT.
        ``authorizer`` turns ACLs on with the harness a super user and adds the principals
        ``guest`` and ``nobody``."""
        super().__init__(spec)
        base, options = split_spec(spec)
        unknown = sorted(set(options) - set(FEATURE_OPTIONS) - set(SECURITY_OPTIONS) - set(PREVIEW_OPTIONS))
        if unknown:
            raise ValueError(f"{spec!r}: one node takes only feature, security and preview options "
                             f"({', '.join(FEATURE_OPTIONS + SECURITY_OPTIONS + tuple(PREVIEW_OPTIONS))}), not "
                             f"{', '.join(unknown)} (a cluster: kafka,nodes=N,...)")
        self.secured = SecuredListener.from_options(spec, options)
        self.client_properties: Path | None = None  # written once started, for a secured listener
        self._version = version_in_spec(base) or self._unpinned_version()
        self.profile = Path(profile) if profile is not None else None
        self.overrides = {**preview_settings(spec, options),
                          **{key: as_property(value) for key, value in (overrides or {}).items()}}
        self.features = {**feature_levels(spec, options), **dict(features or {})}
        self.extra_listeners = dict(extra_listeners or {})
        self.authorizer = authorizer
        self.startup_timeout = startup_timeout
        self.startup_seconds: float | None = None
        self._directory: Path | None = None
        self._libs: Path | None = None
        self._java: str | None = None
        self._broker_port = 0
        self._controller_port = 0
        self._secured_port = 0
        self._logging_flags: list[str] = []
        self._class_archive: Path | None = None  # kafka_cds: Kafka's classes, ready to map
        self._archive_pending: Path | None = None  # the archive the running broker writes at exit, if any
        # What a node of a cluster shares with the others (a single node keeps the defaults).
        self.node_id = 1
        self.cluster_id: str | None = None
        self.voters: str | None = None
        self.replicas = 1
        self.log_dirs = 1

    @staticmethod
    def _unpinned_version() -> str:
        home_libs = kafka_home_libs()
        return (version_of_libs(home_libs) if home_libs and home_libs.is_dir() else None) or DEFAULT_KAFKA_VERSION

    # lifecycle (start(): provision, launch, ready) -------------------------------------------
    def provision(self) -> None:
        """Jars, configuration and formatted storage: everything but the process."""
        self._java = java_executable()
        if self._java is None:
            raise TargetUnavailable("no java on PATH (or JAVA_HOME) to run Kafka")
        self._libs = ensure_kafka_jars(self._version)
        self._class_archive = kafka_cds.archive_path(self._java, self._libs)
        if self._directory is None:
            try:
                self._prepare_directory()
            except BaseException:  # a half-made folder is of no use to anyone
                self.stop()
                raise

    def stop(self) -> None:
        keep = bool(os.environ.get("CONFORMANCE_KEEP_BROKER_DIR"))
        if keep or self._archive_pending is not None:
            self.terminate()
        else:
            # The data goes with the broker, so a clean shutdown (closing each of a run's thousand partitions,
            # 2 to 3 s at a run's end) buys nothing; a JVM writing the class archive must exit by itself.
            self.kill()
        if self.secured is not None:
            self.secured.stop()  # an OIDC provider of its own
        self._remember_log()
        if self._directory is not None and not keep:
            shutil.rmtree(self._directory, ignore_errors=True)
        self._directory = None

    def provisioned_brokers(self) -> int:
        return 1

    def restart(self) -> None:
        """Stop the broker gracefully and start it again on the same ports with the same data."""
        if self._directory is None:
            raise RuntimeError("restart() needs a started target")
        self.terminate()
        began = time.monotonic()
        self.launch()
        self.wait_until_ready(began)

    @property
    def bootstrap(self) -> str:
        """The listener the harness uses: the secured one where the spec asks for one."""
        if not self._broker_port:
            raise RuntimeError(f"target {self.spec!r} is not started")
        return f"127.0.0.1:{self._secured_port or self._broker_port}"

    @property
    def plaintext_bootstrap(self) -> str:
        """The PLAINTEXT listener (the brokers' own traffic, the start-up probe; ANONYMOUS is a super user)."""
        return f"127.0.0.1:{self._broker_port}"

    @property
    def security(self) -> Security:
        """How the harness authenticates on ``bootstrap`` (as the super user ``admin`` on a secured listener)."""
        return self.secured.security() if self.secured is not None and self.secured.folder else Security()

    def client_config(self) -> dict[str, str]:
        """librdkafka settings to reach ``bootstrap``, secrets included: never log the result."""
        settings = self.secured.client_settings() if self.secured is not None and self.secured.folder else {}
        return {"bootstrap.servers": self.bootstrap, **settings}

    @property
    def version(self) -> str:
        return self._version

    @property
    def disks(self) -> kafka_disks.NodeDisks | None:
        """Its data directories, for the disk faults of a cluster's node (:mod:`.disks`)."""
        return kafka_disks.NodeDisks(self.data) if self.data is not None else None

    @property
    def data(self) -> Path | None:
        """Where the node keeps its logs (with ``log_dirs`` above 1, ``dir-N`` below it and ``metadata``)."""
        return self._directory / "data" if self._directory else None

    def info(self) -> TargetInfo:
        information = super().info()
        information.extra.update(
            controller_port=self._controller_port,
            directory=str(self._directory) if self._directory else None,
            jars=str(self._libs) if self._libs else None,
            profile=str(self.profile) if self.profile else None,
            startup_seconds=self.startup_seconds,
        )
        if self.features:  # the levels the storage was formatted with (else the release's defaults)
            information.extra["features"] = dict(self.features)
        if self.secured is not None:  # the listener, and the client properties a user would use against it
            information.extra["security"] = self.secured.describe()
            if self.client_properties is not None:
                information.extra["client_config"] = str(self.client_properties)
                if self.secured.carries_principals:  # what --principal takes for the authorization cases
                    information.extra["principal_configs"] = {
                        user: str(self.client_properties.parent / f"client-{user}.properties")
                        for user in PRINCIPALS}
                information.extra["plaintext_bootstrap"] = self.plaintext_bootstrap
        return information

    def principal(self, name: str) -> tuple[str, Security]:
        if not self.authorizer or name not in PRINCIPALS:
            return super().principal(name)
        if self.secured is not None and self.secured.carries_principals:
            return self.bootstrap, self.secured.security(name)
        return (f"127.0.0.1:{self.extra_listeners['SASL_PLAINTEXT']}",
                Security(sasl_username=name, sasl_password=PRINCIPALS[name]))

    def log_file(self) -> Path | None:
        """``broker.log``: everything the broker printed (logs() gives its last MiB, also after ``stop()``)."""
        return self._log_path()

    def known_issues(self) -> list[dict]:
        """The known Kafka bugs whose signature is anywhere in this broker's log (read line by line, whole)."""
        log_path = self._log_path()
        if log_path is None or not log_path.exists():
            return []
        with open(log_path, encoding="utf-8", errors="replace") as log:
            return kafka_known_issues.seen_in(log)

    # start-up steps ------------------------------------------------------------------------
    def _prepare_directory(self) -> None:
        directory = Path(tempfile.mkdtemp(prefix=f"kafka-{self._version}-", dir=brokers_folder()))
        self._directory = directory
        self.reserve_ports()
        settings = base_settings(self._version, self._broker_port, self._controller_port, directory / "data",
                                 node_id=self.node_id, voters=self.voters, replicas=self.replicas,
                                 log_dirs=self.log_dirs)
        secured = self.secured
        if self.authorizer:
            if secured is None or not secured.carries_principals:
                self.extra_listeners.setdefault("SASL_PLAINTEXT", free_port())
            settings.update(authorizer_settings())
        if secured is not None:
            secured.prepare(directory / "tls")
            self._secured_port = self.extra_listeners.setdefault(secured.protocol, free_port())
            settings.update(secured.broker_settings())
        add_listeners(settings, self.extra_listeners)
        settings.update(self._profile_settings())
        settings.update(self.overrides)
        (directory / "server.properties").write_text(render_properties(settings))
        if secured is not None:
            self.client_properties, _ = secured.write_client_properties(self.bootstrap)
        self._logging_flags = write_logging_configs(directory)
        self._format_storage()

    def reserve_ports(self) -> None:
        """Picks the broker and controller ports once (a cluster needs every controller's before any starts)."""
        if not self._broker_port:
            self._broker_port = free_port()
        while not self._controller_port or self._controller_port == self._broker_port:
            self._controller_port = free_port()

    @property
    def controller_address(self) -> str:
        return f"{self.node_id}@127.0.0.1:{self._controller_port}"

    def _profile_settings(self) -> dict[str, str]:
        if self.profile is None:
            return {}
        if self.profile == DEFAULT_PROFILE and not self.profile.exists():
            warnings.warn(f"broker profile {self.profile} is missing (not a source checkout?): using Kafka defaults",
                          stacklevel=2)
            return {}
        return read_properties(self.profile)

    def _java_command(self, main_class: str, *arguments: str, archive_flags: list[str] | None = None) -> list[str]:
        assert self._java is not None and self._libs is not None and self._class_archive is not None
        secured = self.secured.jvm_properties() if self.secured is not None else []
        if archive_flags is None:
            archive_flags = kafka_cds.reading_flags(self._class_archive)
        return [self._java, *JVM_FLAGS, *archive_flags, *self._logging_flags, *secured, "-cp", f"{self._libs}/*", main_class,
                *arguments]

    def _format_storage(self) -> None:
        """The storage tool's work, or a copy of what it wrote for a broker of the same kind (:mod:`.storage`)."""
        data = self.data
        assert self._directory is not None and data is not None and self._libs is not None
        cluster_id = self.cluster_id or random_cluster_id()
        features = [f"{name}={level}" for name, level in self.features.items()]
        kind = None
        if self.secured is None and kafka_storage.enabled():  # a secured format writes credentials: never kept
            settings = (self._directory / "server.properties").read_text()
            kind = kafka_storage.kind_of(self._version, self._libs, features, settings, self._directory)
            if kafka_storage.copy(kind, self._directory, cluster_id, self.node_id):
                return
        self._run_storage_tool(cluster_id, features)
        if kind is not None:
            kafka_storage.keep(kind, self._directory, data)

    def _run_storage_tool(self, cluster_id: str, features: list[str]) -> None:
        assert self._directory is not None
        arguments = ["format", "-t", cluster_id, "-c", str(self._directory / "server.properties")]
        for feature in features:
            arguments += ["--feature", feature]
        if self.secured is not None:
            arguments += self.secured.format_arguments()
        command = self._java_command("kafka.tools.StorageTool", *arguments)
        try:
            formatted = subprocess.run(command, capture_output=True, text=True, timeout=self.startup_timeout)
        except subprocess.TimeoutExpired:
            raise BrokerStartFailed(f"formatting KRaft storage took over {self.startup_timeout:.0f} s") from None
        if formatted.returncode != 0:
            output = (formatted.stdout + formatted.stderr)[-4000:]
            raise BrokerStartFailed(f"formatting KRaft storage for Kafka {self._version} failed:\n{output}")

    def launch(self) -> None:
        assert self._directory is not None
        archive_flags, self._archive_pending = kafka_cds.writing_flags(self._class_archive)
        command = self._java_command("kafka.Kafka", str(self._directory / "server.properties"),
                                     archive_flags=archive_flags)
        with open(self._directory / "broker.log", "ab") as log:
            log.write(f"{_LAUNCH_MARK}{self._version} at {time.ctime()} ---\n".encode())
            log.flush()
            self._launched(subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=self._directory
            ))

    def ready(self, began: float) -> str:
        self.wait_until_ready(began)  # raises BrokerStartFailed with the log when not
        return ""

    def wait_until_ready(self, began: float) -> None:
        """Return once the controller answers through the broker; else stop and raise with the log.

        A broker still writing its log at the timeout is slow, not stuck (a loaded machine starting a release
        whose start does more, as the 4.x ones do): it gets :data:`STARTUP_GRACE_SECONDS` more each time, up
        to :data:`STARTUP_PATIENCE` times the timeout in all. One whose log stood still fails at the timeout."""
        assert self._process is not None
        deadline = began + self.startup_timeout
        last_log_size = self._log_size()
        while True:
            if time.monotonic() >= deadline:
                size = self._log_size()
                if size == last_log_size or time.monotonic() >= began + self.startup_timeout * STARTUP_PATIENCE:
                    break
                last_log_size, deadline = size, time.monotonic() + STARTUP_GRACE_SECONDS
            if self._process.poll() is not None:
                self._fail(f"Kafka {self._version} exited with status {self._process.returncode} while starting")
            if _port_open(self._broker_port) and _controller_answers(self.plaintext_bootstrap,
                                                                     deadline - time.monotonic(), self.replicas):
                if self._process.poll() is not None:  # then the answer came from whoever holds our port
                    continue
                self.startup_seconds = time.monotonic() - began
                return
            time.sleep(0.1)
        self._fail(f"Kafka {self._version} was not ready after {time.monotonic() - began:.0f} s")

    def wait_until_restarted(self, began: float) -> None:
        """:meth:`wait_until_ready` after a node fault, deleting what a crash left that stops the start."""
        _wait_until_restarted(self, began)

    def _log_size(self) -> int:
        path = self._log_path()
        try:
            return path.stat().st_size if path is not None else 0
        except OSError:
            return 0

    def _fail(self, reason: str) -> NoReturn:
        log = (self.logs() or "").rpartition(_LAUNCH_MARK)[2]  # this launch's lines, before stop() adds more
        tail = _last_lines(log, 60)
        first_error = _first_error(log)
        if first_error:  # a broker that dies logs its shutdown after the cause: the tail alone hides it
            reason = f"{reason}: {first_error}"
        if self.startup_seconds is None:
            self.stop()  # a first start: the half-made folder is of no use to anyone
        else:
            # A broker that was ready once and does not come back (a node restarted under load): its data stays,
            # so the cluster's heal() can launch it again before the next case instead of finding no folder.
            self.kill()
        raise BrokerStartFailed(f"{reason}; last lines of its log:\n{tail}")

    # shutting down (kill(), pause(): ProcessTarget's) -----------------------------------------
    def terminate(self) -> None:
        """SIGTERM lets Kafka close its logs cleanly (a restart then skips recovery); SIGKILL if it hangs."""
        process = self._halt(signal.SIGTERM, STOP_GRACE_SECONDS)
        if process is not None:
            kafka_cds.adopt(self._archive_pending, self._class_archive, process.returncode)
            self._archive_pending = None

    def _log_path(self) -> Path | None:
        return self._directory / "broker.log" if self._directory else None

    def _remember_log(self) -> None:
        self._kept_log = self.logs() or self._kept_log


def brokers_folder() -> str | None:
    """Where provisioned brokers keep their folders: ``CONFORMANCE_BROKER_DIR`` if set; else memory
    (``/dev/shm``) where it is a tmpfs with room to spare; else the temporary folder (None).

    Kafka syncs every new partition's files and folder to disk: a few milliseconds of kernel time per
    partition on a disk, close to none in memory. Items create a thousand topics a run, so on disk this is
    about a third of the broker's CPU (300 two-partition topics: 2.4 s of system time on ext4, 0.4 s on
    tmpfs). A conformance broker's data is thrown away when it stops; a small tmpfs (a container's 64 MiB
    ``/dev/shm``) is not used, as a full one would fail the broker's log directory mid-run."""
    chosen = os.environ.get("CONFORMANCE_BROKER_DIR")
    if chosen:
        return chosen
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            in_memory = any(line.split()[1:3] == [MEMORY_FOLDER, "tmpfs"] for line in mounts)
        roomy = shutil.disk_usage(MEMORY_FOLDER).free >= MEMORY_FOLDER_MIN_FREE
    except (OSError, IndexError):
        return None
    return MEMORY_FOLDER if in_memory and roomy and os.access(MEMORY_FOLDER, os.W_OK | os.X_OK) else None


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _controller_answers(bootstrap: str, seconds_left: float, replicas: int = 1) -> bool:
    """A validate-only CreateTopics goes through the broker to the controller and creates nothing; with
    ``replicas`` > 1 it also needs that many registered brokers."""
    timeout = max(1.0, min(5.0, seconds_left))
    # log_level 2: refused connections while the broker boots are expected, keep them off stderr.
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
    probe = NewTopic(READINESS_PROBE_TOPIC, num_partitions=1, replication_factor=replicas)
    futures = admin.create_topics([probe], validate_only=True, request_timeout=timeout, operation_timeout=timeout)
    try:
        futures[READINESS_PROBE_TOPIC].result(timeout=timeout + 1)
        return True
    except Exception:  # any error (not yet leader, broker fenced, timeout) means: not ready yet
        return False


# Kafka 3.7.0 (KAFKA-16814) refuses to start over an empty replica a crash left without its topic id.
NO_TOPIC_ID = re.compile(r"The log dir Log\(dir=([^,]+), topic=[^,]+, partition=\d+, .*?logEndOffset=0\) does not "
                         r"have a topic ID")


def _wait_until_restarted(node, began: float, attempts: int = 5) -> None:
    """``node.wait_until_ready(began)``, deleting an empty replica without a topic id that stops the start."""
    for _ in range(attempts):
        try:
            node.wait_until_ready(began)
            return
        except BrokerStartFailed as failure:
            stray = NO_TOPIC_ID.search(str(failure))
            if stray is None or node.data is None or Path(node.data) not in Path(stray.group(1)).parents:
                raise
            shutil.rmtree(stray.group(1), ignore_errors=True)
            began = time.monotonic()
            node.launch()
    node.wait_until_ready(began)


def _last_lines(text: str, count: int) -> str:
    return "\n".join(text.splitlines()[-count:])


def _first_error(log: str) -> str | None:
    """The log's first ERROR line and the exception line under it, as one line; None if it has none."""
    lines = log.splitlines()
    for number, line in enumerate(lines):
        if "] ERROR " in line:
            message = line.split("] ERROR ", 1)[1]
            following = lines[number + 1].strip() if number + 1 < len(lines) else ""
            if following and not following.startswith("["):  # the exception, printed under the message
                message = f"{message}: {following}"
            return message
    return None


def kafka_target_kind() -> TargetKind:
    return TargetKind.of(KafkaTarget)
