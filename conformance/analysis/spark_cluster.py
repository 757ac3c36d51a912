"""A Spark standalone cluster on loopback, started from pyspark's own distribution.

pyspark ships ``bin/spark-class`` but not the ``sbin/start-*.sh`` scripts, so the master and
the worker are started as the JVM classes those scripts would run. Used by the test proving a
job runs on a real cluster, and handy for trying ``--master spark://...`` on one machine::

    with StandaloneCluster(cores=1) as cluster:
        ... spark_session(cluster.url) ...
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from ..targets.base import stop_process
from ..targets.ports import free_port
from .spark_session import prepare_environment, quiet_log4j_file

HOST = "127.0.0.1"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


class ClusterStartFailed(Exception):
    pass


class StandaloneCluster:
    """One master and one worker; ``url`` is the master's ``spark://`` URL once started."""

    def __init__(self, *, cores: int = 1, memory: str = "1g", timeout: float = 90.0):
        self.cores, self.memory, self.timeout = cores, memory, timeout
        self.port = free_port(HOST)
        self.web_port = free_port(HOST)
        self.worker_web_port = free_port(HOST)
        self.folder = Path(tempfile.mkdtemp(prefix="conformance-spark-cluster-"))
        self.processes: list[subprocess.Popen] = []

    @property
    def url(self) -> str:
        return f"spark://{HOST}:{self.port}"

    def _environment(self) -> dict[str, str]:
        prepare_environment()
        environment = dict(os.environ, SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP=HOST,
                           SPARK_LOG_DIR=str(self.folder), SPARK_WORKER_DIR=str(self.folder / "work"),
                           SPARK_DAEMON_JAVA_OPTS=f"-Dlog4j2.configurationFile=file:{quiet_log4j_file()}",
                           PYSPARK_PYTHON=sys.executable)
        return environment

    def _start(self, name: str, *arguments: str) -> None:
        command = [str(spark_home() / "bin" / "spark-class"), *arguments]
        log = open(self.folder / f"{name}.log", "wb")  # noqa: SIM115 - the daemon writes to it until stopped
        self.processes.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                               env=self._environment(), start_new_session=True))
        log.close()  # the child holds its own descriptor

    def start(self) -> "StandaloneCluster":
        try:
            self._start("master", "org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(self.port),
                        "--webui-port", str(self.web_port))
            self._start("worker", "org.apache.spark.deploy.worker.Worker", "--host", HOST,
                        "--webui-port", str(self.worker_web_port), "--cores", str(self.cores),
                        "--memory", self.memory, self.url)
            self._wait_for_worker()
        except BaseException:
            self.stop()
            raise
        return self

    def state(self) -> dict:
        with urllib.request.urlopen(f"http://{HOST}:{self.web_port}/json/", timeout=2) as response:
            return json.load(response)

    def _wait_for_worker(self) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            for process in self.processes:
                if process.poll() is not None:
                    raise ClusterStartFailed(f"a Spark daemon exited with {process.returncode}: {self.logs()}")
            try:
                if any(worker.get("state") == "ALIVE" for worker in self.state().get("workers", [])):
                    return
            except (OSError, ValueError):
                # Not up yet: no listener, or (seen under load) the UI's HTML page answering /json/
                # before the JSON handler is attached.
                pass
            time.sleep(0.5)
        raise ClusterStartFailed(f"no worker registered within {self.timeout:.0f} s: {self.logs()}")

    def logs(self) -> str:
        return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}"
                         for path in sorted(self.folder.glob("*.log")))

    def stop(self) -> None:
        for process in reversed(self.processes):  # the worker first, so it does not retry the master
            stop_process(process, signal.SIGTERM, 15)
        self.processes = []

    def __enter__(self) -> "StandaloneCluster":
        return self.start()

    def __exit__(self, *failure) -> None:
        self.stop()
