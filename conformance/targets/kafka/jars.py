"""Where the Apache Kafka broker's jars come from: a user's distribution or a Maven Central cache.

Rules:
- ``KAFKA_HOME`` (an unpacked Kafka distribution) wins; its ``libs/`` is used as it is.
- Otherwise ``org.apache.kafka:kafka_2.13:VERSION`` and its runtime dependencies are copied by Maven
  into ``$CONFORMANCE_CACHE/kafka-VERSION/libs`` (default cache ``~/.cache/kafka-conformance``), once.
- The published pom carries no SLF4J binding (the distribution adds one), so a second Maven pass adds
  the binding that fits what the first pass resolved: log4j 2 when log4j-core came along (4.x),
  reload4j otherwise (3.x). Without it the broker logs nothing.
- A ``libs/`` folder exists only when complete: it is filled in a temporary folder beside it and
  renamed in one step, under a file lock, so concurrent runs download once and never see half a copy.

Run ``python -m conformance.targets.kafka.jars [VERSION ...]`` to fetch ahead of a test run.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ...defaults import cache_root
from ...resources import UPSTREAM_KAFKA
from ..base import TargetUnavailable

DEFAULT_KAFKA_VERSION = UPSTREAM_KAFKA  # what `kafka` provisions
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
RELOAD4J_VERSION = "1.2.25"  # the version Kafka 3.x distributions ship
# Maven's JVM resolves for seconds and ends: C2's compiling never pays for itself. With C1 alone a fetch of one
# release took about half the CPU (6.6 against 13.0 CPU-s, 4.8 against 7.7 s, two runs each, interleaved).
MAVEN_JIT = "-XX:TieredStopAtLevel=1"
DOWNLOAD_TIMEOUT_SECONDS = 900
LOCK_TIMEOUT_SECONDS = 1200


def cached_libs(version: str) -> Path:
    return cache_root() / f"kafka-{version}" / "libs"


def kafka_home_libs() -> Path | None:
    home = os.environ.get("KAFKA_HOME")
    return Path(home) / "libs" if home else None


def version_of_libs(libs: Path) -> str | None:
    """The Kafka version a libs folder holds, read from its ``kafka_2.x-VERSION.jar``."""
    for jar in libs.glob("kafka_2.*-*.jar"):
        found = re.fullmatch(r"kafka_2\.\d+-(.+)\.jar", jar.name)
        if found and not re.search(r"-(sources|javadoc|test)$", found.group(1)):
            return found.group(1)
    return None


def ensure_kafka_jars(version: str) -> Path:
    """The folder of jars that runs Kafka ``version``, downloading it the first time."""
    home_libs = kafka_home_libs()
    if home_libs is not None:
        return _checked_home_libs(home_libs, version)
    libs = cached_libs(version)
    if _is_complete(libs, version):
        return libs
    if shutil.which("mvn") is None:
        raise TargetUnavailable(f"Kafka {version} is not cached in {libs} and mvn is not on PATH (or set KAFKA_HOME)")
    with _exclusive_lock(libs.parent.parent / f"kafka-{version}.lock"):
        if not _is_complete(libs, version):  # another process may have finished while we waited
            _download(version, libs)
    return libs


def _checked_home_libs(libs: Path, version: str) -> Path:
    found = version_of_libs(libs) if libs.is_dir() else None
    if found is None:
        raise TargetUnavailable(f"KAFKA_HOME is set but {libs} holds no kafka_2.x jar")
    if found != version:
        raise TargetUnavailable(f"KAFKA_HOME holds Kafka {found}, not the requested {version}")
    return libs


def _is_complete(libs: Path, version: str) -> bool:
    return any(libs.glob(f"kafka_2.*-{version}.jar"))


@contextmanager
def _exclusive_lock(lock_path: Path) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + LOCK_TIMEOUT_SECONDS
    with open(lock_path, "a") as lock_file:
        while True:
            try:
                fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TargetUnavailable(f"gave up waiting for {lock_path}: another download holds it") from None
                time.sleep(0.5)
        try:
            yield
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)


def _download(version: str, libs: Path) -> None:
    libs.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".download-", dir=libs.parent) as scratch:
        staging = Path(scratch) / "libs"
        broker = [("org.apache.kafka", "kafka_2.13", version, False)]
        _copy_dependencies(Path(scratch) / "broker", broker, staging)
        _copy_dependencies(Path(scratch) / "logging", _logging_binding(staging), staging)
        if libs.exists():  # left by hand or by an older layout: never by us, we only rename
            shutil.rmtree(libs)
        os.rename(staging, libs)


def _logging_binding(staging: Path) -> list[tuple[str, str, str, bool]]:
    """Artifacts (group, artifact, version, without their own dependencies) that let SLF4J log."""
    slf4j = _jar_version(staging, "slf4j-api") or "1.7.36"
    log4j2 = _jar_version(staging, "log4j-core")
    if log4j2:
        binding = "log4j-slf4j2-impl" if slf4j.startswith("2.") else "log4j-slf4j-impl"
        return [("org.apache.logging.log4j", binding, log4j2, True)]
    return [("ch.qos.reload4j", "reload4j", RELOAD4J_VERSION, True), ("org.slf4j", "slf4j-reload4j", slf4j, True)]


def _jar_version(libs: Path, artifact: str) -> str | None:
    for jar in libs.glob(f"{artifact}-*.jar"):
        found = re.fullmatch(rf"{re.escape(artifact)}-(\d[^-]*(?:-[A-Za-z0-9.]+)?)\.jar", jar.name)
        if found:
            return found.group(1)
    return None


def _copy_dependencies(workdir: Path, artifacts: list[tuple[str, str, str, bool]], output: Path) -> None:
    workdir.mkdir(parents=True)
    (workdir / "pom.xml").write_text(_throwaway_pom(artifacts))
    command = [
        "mvn", "-q", "-B", "-Dstyle.color=never", "-f", str(workdir / "pom.xml"), f"{DEPENDENCY_PLUGIN}:copy-dependencies",
        "-DincludeScope=runtime", f"-DoutputDirectory={output}",
    ]  # fmt: skip
    try:
        finished = subprocess.run(command, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_SECONDS,
                                  env=maven_environment())
    except subprocess.TimeoutExpired:
        raise TargetUnavailable(f"Maven took over {DOWNLOAD_TIMEOUT_SECONDS} s to fetch {artifacts}") from None
    if finished.returncode != 0:
        raise TargetUnavailable(maven_failure(finished.stdout + finished.stderr, artifacts))


def maven_environment() -> dict[str, str]:
    """This process's environment with :data:`MAVEN_JIT` ahead of the user's ``MAVEN_OPTS`` (theirs win)."""
    return {**os.environ, "MAVEN_OPTS": " ".join(filter(None, [MAVEN_JIT, os.environ.get("MAVEN_OPTS")]))}


def maven_failure(output: str, artifacts) -> str:
    """One line a person can act on: the artifact Maven could not find, else Maven's first error."""
    output = re.sub(r"\x1b\[[0-9;]*m", "", output)
    missing = re.search(r"Could not find artifact (\S+)", output)
    if missing:
        group, artifact, _, version = (missing.group(1).split(":") + ["", "", "", ""])[:4]
        return f"{artifact} {version} is not on Maven Central ({missing.group(1)} not found): no such Kafka release?"
    errors = [line.removeprefix("[ERROR]").strip() for line in output.splitlines() if line.startswith("[ERROR]")]
    first = next((line for line in errors if line), output.strip().splitlines()[-1] if output.strip() else "no output")
    return f"Maven could not fetch {', '.join(':'.join(a[:3]) for a in artifacts)}: {first}"


MAVEN_POM = "http://maven.apache.org/POM/4.0.0"


def _throwaway_pom(artifacts: list[tuple[str, str, str, bool]]) -> str:
    """A pom that depends on the artifacts and nothing else, for Maven to copy them. Written with ElementTree:
    a version comes from the command line (``kafka:VERSION``), and is text in the pom whatever it holds."""
    project = ElementTree.Element(f"{{{MAVEN_POM}}}project")
    for name, text in (("modelVersion", "4.0.0"), ("groupId", "local.conformance"), ("artifactId", "kafka-jars"),
                       ("version", "0"), ("packaging", "pom")):
        _pom_element(project, name, text)
    dependencies = _pom_element(project, "dependencies")
    for group, artifact, version, alone in artifacts:
        dependency = _pom_element(dependencies, "dependency")
        for name, text in (("groupId", group), ("artifactId", artifact), ("version", version)):
            _pom_element(dependency, name, text)
        if alone:  # the artifact without its transitive dependencies
            exclusion = _pom_element(_pom_element(dependency, "exclusions"), "exclusion")
            _pom_element(exclusion, "groupId", "*")
            _pom_element(exclusion, "artifactId", "*")
    ElementTree.indent(project)
    return ElementTree.tostring(project, encoding="unicode", default_namespace=MAVEN_POM) + "\n"


def _pom_element(parent: ElementTree.Element, name: str, text: str | None = None) -> ElementTree.Element:
    element = ElementTree.SubElement(parent, f"{{{MAVEN_POM}}}{name}")
    element.text = text
    return element


def main(argv: list[str] | None = None) -> int:
    """Fetch the jars of each version named (default: the pinned one) and print where they are."""
    versions = (sys.argv[1:] if argv is None else argv) or [DEFAULT_KAFKA_VERSION]
    for version in versions:
        try:
            print(ensure_kafka_jars(version))
        except TargetUnavailable as problem:
            print(f"kafka {version}: {problem}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
