"""The files a local single-node KRaft broker starts from: server.properties and logging configs.

Settings are layered: the base below (what one combined broker+controller on loopback needs), then
a profile file (``fixtures/kafka/*.properties``, bundled: :func:`conformance.resources.broker_profile`),
then per-target overrides; later layers win.
"""

from __future__ import annotations

from pathlib import Path

from ... import resources
# Importable here as before it moved: nothing in it is Kafka's own.
from ..properties import read_properties as read_properties

DEFAULT_PROFILE = resources.broker_profile()
NODE_ID = 1


def base_settings(version: str, broker_port: int, controller_port: int, data_dir: Path, *, node_id: int = NODE_ID,
                  voters: str | None = None, replicas: int = 1, log_dirs: int = 1) -> dict[str, str]:
    """One combined broker+controller. In a cluster, ``voters`` lists every node's controller
    (``1@127.0.0.1:PORT,2@...``) and ``replicas`` is the replication of the internal topics.
    ``log_dirs`` above 1 gives the node that many data directories (JBOD, ``data/dir-N``) and keeps the
    metadata log in ``data/metadata`` of its own, so that one data directory can fail while the node lives."""
    settings = {
        "node.id": str(node_id),
        "process.roles": "broker,controller",
        "listeners": f"PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{broker_port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        # A static voter set formats and starts the same way on 3.9 and 4.x (no --standalone needed).
        "controller.quorum.voters": voters or f"{node_id}@127.0.0.1:{controller_port}",
        "log.dirs": str(data_dir) if log_dirs == 1 else ",".join(str(data_dir / f"dir-{n}") for n in range(log_dirs)),
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        "group.initial.rebalance.delay.ms": "0",
        "offsets.topic.replication.factor": str(replicas),
        "transaction.state.log.replication.factor": str(replicas),
        "transaction.state.log.min.isr": "1",
        # One partition per node spreads coordinators over a cluster; Kafka's 50 only slow the first
        # InitProducerId.
        "offsets.topic.num.partitions": str(replicas),
        "transaction.state.log.num.partitions": str(replicas),
        # The broker is unfenced on its first heartbeat after catching up: sooner means a faster start.
        "broker.heartbeat.interval.ms": "500",
        # The active controller appends a no-op record to the metadata log this often when nothing else is
        # written (KIP-835, for its lag metrics): every 500 ms by default, each a Raft commit every node then
        # applies: an idle broker took 2.0% of a core, 1.5% at 5 s (four side by side, 60 s each);
        # a run keeps about five brokers alive for its whole length. Not 0, which turns KIP-835 off.
        "metadata.max.idle.interval.ms": "5000",
    }
    if log_dirs > 1:
        settings["metadata.log.dir"] = str(data_dir / "metadata")
        # A failed directory is noticed at the next write to it: the recovery-point checkpoint is one, every second.
        settings["log.flush.offset.checkpoint.interval.ms"] = "1000"
    if int(version.split(".")[0]) >= 4:
        settings["share.coordinator.state.topic.replication.factor"] = str(replicas)
        settings["share.coordinator.state.topic.min.isr"] = "1"
        settings["share.coordinator.state.topic.num.partitions"] = "1"
    return settings


def add_listeners(settings: dict[str, str], listeners: dict[str, int]) -> None:
    """Adds a loopback listener per security protocol (named after it) beside PLAINTEXT."""
    for protocol, port in listeners.items():
        settings["listeners"] += f",{protocol}://127.0.0.1:{port}"
        settings["advertised.listeners"] += f",{protocol}://127.0.0.1:{port}"
        settings["listener.security.protocol.map"] += f",{protocol}:{protocol}"


# SASL/PLAIN users the broker authorizes apart from the harness, so authorization cases can watch it
# refuse them: `guest` holds only the rights cases grant it on their own resources; `nobody` is never
# granted anything, for rights one grant anywhere would imply (WRITE on any topic implies idempotence).
PRINCIPALS = {"guest": "guest-secret", "nobody": "nobody-secret"}


def authorizer_settings() -> dict[str, str]:
    """ACLs on, with the harness (ANONYMOUS on PLAINTEXT, also the controller's own traffic) a super
    user, and the principals reaching the broker on the SASL_PLAINTEXT listener."""
    return {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            + " ".join(f'user_{user}="{password}"' for user, password in PRINCIPALS.items()) + ";",
    }


def as_property(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render_properties(settings: dict[str, str]) -> str:
    return "".join(f"{key}={value}\n" for key, value in settings.items())


# Both logging configs are written and both system properties passed: the broker's classpath
# decides which framework reads its file (log4j 2 in 4.x, reload4j in 3.x). Logs go to stdout,
# which the target sends to one file together with anything the JVM itself prints.
LOG4J2_PROPERTIES = """\
status = warn
# log4j 2's own shutdown hook would stop logging as SIGTERM arrives: the lines of Kafka's controlled shutdown
# (partitions going leaderless, coordinators resigning) are the evidence a restart's departures need.
shutdownHook = disable
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.requests.name = kafka.request.logger
logger.requests.level = WARN
"""

LOG4J1_PROPERTIES = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
"""


def write_logging_configs(directory: Path) -> list[str]:
    """Write both logging configs into ``directory``; return the JVM flags that point at them."""
    log4j2 = directory / "log4j2.properties"
    log4j1 = directory / "log4j.properties"
    log4j2.write_text(LOG4J2_PROPERTIES)
    log4j1.write_text(LOG4J1_PROPERTIES)
    return [f"-Dlog4j2.configurationFile={log4j2}", f"-Dlog4j.configuration=file:{log4j1}"]
