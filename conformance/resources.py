"""Where the harness's bundled data is: this module knows, every other one asks it.

An installed wheel carries everything inside the package, read through :mod:`importlib.resources`:
the build (``hatch_build.py``) maps the repository's top-level ``suites/`` to ``conformance/data/suites``
and ``fixtures/kafka/`` (broker profiles) to ``conformance/data/kafka``; the message specs, the error
catalogue, the certification levels, the suite schema and the page templates live in their own subpackages. A source
tree (an editable install, a checkout on ``sys.path``) has no ``conformance/data/``: there, and only
there, the suites and profiles are read where the repository keeps them.

Suites a user writes are paths given on the command line; results and reports go where the user
stands (relative paths, the current folder), never here.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

# The Apache Kafka release the bundled message specs and error catalogue come from, and the one
# the harness provisions by default (`kafka` = `kafka:UPSTREAM_KAFKA`).
UPSTREAM_KAFKA = "4.4.0"

PACKAGE = "conformance"
DATA = "data"  # conformance/data/ in a wheel
KAFKA_PROFILES = "kafka"  # fixtures/kafka/ in the repository, data/kafka/ in a wheel
DEFAULT_PROFILE = "fast-timeouts"


class DataMissing(FileNotFoundError):
    """A bundled file is absent: a broken install. The message names it and the install command."""


def _package() -> Path:
    found = files(PACKAGE)  # subpackages are folders below it: asking for them by name would import them
    if not isinstance(found, Path):  # a zip import: the harness hands paths to pytest and to the JVM
        raise DataMissing(f"{PACKAGE} is not installed as files ({found}): pip install kafka-conformance")
    return found


def source_tree() -> Path | None:
    """The repository the package is imported from (editable install, checkout); None for an installed wheel."""
    package = _package()
    if (package / DATA).is_dir():
        return None
    root = package.parent
    return root if (root / "pyproject.toml").is_file() else None


def _data(packaged: str, kept: str) -> Path:
    """``data/<packaged>`` of the package, else ``<kept>`` of the source tree it is imported from."""
    inside = _package() / DATA / packaged
    tree = source_tree()
    return tree / kept if tree is not None else inside


def suites() -> Path:
    """The bundled suites folder (its ``templates/`` holds the bundled step templates)."""
    return _data("suites", "suites")


def templates() -> Path:
    """The bundled step templates, which suites kept anywhere else may use."""
    return suites() / "templates"


def broker_profiles() -> Path:
    """The folder of the broker profiles (``NAME.properties``) a provisioned Kafka starts with."""
    return _data(KAFKA_PROFILES, f"fixtures/{KAFKA_PROFILES}")


def broker_profile(name: str = DEFAULT_PROFILE) -> Path:
    return broker_profiles() / f"{name}.properties"


def message_specs() -> Path:
    """The Kafka message specs of release :data:`UPSTREAM_KAFKA` the codec is compiled from."""
    return _package() / "protocol" / "specs"


def error_catalogue() -> Path:
    return _package() / "protocol" / "error_catalogue.yaml"


def suite_schema() -> Path:
    """The JSON Schema of suite files (the same file editors use)."""
    return _package() / "suite" / "suite.schema.json"


def kip_fingerprints() -> Path:
    """Hashes of the runs of words of the KIP texts the suites quote (:mod:`conformance.suite.quotes`)."""
    return _package() / "suite" / "kip_fingerprints.json"


def results_schema() -> Path:
    """The JSON Schema of one results line (written from :class:`conformance.results.ResultRecord`)."""
    return _package() / "results" / "schema.json"


def certification_levels() -> Path:
    return _package() / "report" / "certify" / "levels.yaml"


def known_bugs() -> Path:
    """The known-bugs ledger: Apache Kafka's transaction-protocol bugs since 3.3 (:mod:`conformance.ledger`)."""
    return _package() / "ledger" / "kafka-bugs.yaml"


def known_bugs_schema() -> Path:
    return _package() / "ledger" / "schema.json"


def page_templates() -> Path:
    """The Jinja2 templates of every HTML and SVG page (rendered by :mod:`conformance.pages`)."""
    return _package() / "pages" / "templates"


def node_control_schema() -> Path:
    """The JSON Schema of the node-control file (``--node-control``): commands that stop and start an attached
    cluster's nodes."""
    return _package() / "targets" / "node_control.schema.json"


def capabilities_schema() -> Path:
    """The JSON Schema of the capabilities file a vendor writes (``conformance certify --claims``)."""
    return _package() / "report" / "certify" / "capabilities.schema.json"
