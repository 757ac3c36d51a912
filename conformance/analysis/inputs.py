"""What the command line names, sorted into results files, capture files and warehouses.

Arguments may be files, folders (searched recursively) or glob patterns (``reports/**/*.jsonl``).
A folder holding ``items/`` is a warehouse written by ``conformance analyze ingest``. Results
files in folders are listed here; captures in folders are left for Spark to list (a folder of a
big corpus holds a capture per item, too many paths to put in a plan). URIs
(``hdfs://``, ``s3a://``) go to Spark untouched: a ``.jsonl`` or capture by its suffix, anything
else as a folder of captures.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from pathlib import Path

RESULTS_SUFFIXES = {".jsonl"}
CAPTURE_SUFFIXES = {".pcap", ".pcapng"}


@dataclass
class Inputs:
    results: list[str] = field(default_factory=list)
    captures: list[str] = field(default_factory=list)
    capture_folders: list[str] = field(default_factory=list)  # folders with captures somewhere under them
    warehouses: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # arguments that matched nothing

    def empty(self) -> bool:
        return not (self.results or self.captures or self.capture_folders or self.warehouses)

    def capture_files(self) -> list[str]:
        """Every capture, the folders' too (for counting, and for the benchmark's baseline)."""
        found = list(self.captures)
        for folder in self.capture_folders:
            found += sorted(str(path) for path in Path(folder).rglob("*")
                            if path.suffix in CAPTURE_SUFFIXES and path.is_file())
        return found


def is_warehouse(path: Path) -> bool:
    return (path / "items").is_dir()


def collect(arguments: list[str]) -> Inputs:
    found = Inputs()
    for argument in arguments:
        if "://" in argument:
            if not _add(found, argument):  # a folder on HDFS or S3: Spark lists its captures
                found.capture_folders.append(argument)
            continue
        matches = sorted(glob.glob(argument, recursive=True)) if glob.has_magic(argument) else [argument]
        matched = False
        for match in matches:
            path = Path(match)
            if path.is_dir():
                if is_warehouse(path):
                    found.warehouses.append(str(path.resolve()))
                    matched = True
                    continue
                captured = False
                for child in sorted(path.rglob("*")):
                    if not child.is_file():
                        continue
                    if child.suffix in CAPTURE_SUFFIXES:
                        captured = matched = True
                    elif _add(found, str(child.resolve())):
                        matched = True
                if captured:
                    found.capture_folders.append(str(path.resolve()))
            elif path.is_file() and _add(found, str(path.resolve())):
                matched = True
        if not matched:
            found.missing.append(argument)
    return found


def _add(found: Inputs, name: str) -> bool:
    suffix = Path(name.split("://")[-1]).suffix
    if suffix in RESULTS_SUFFIXES:
        found.results.append(name)
    elif suffix in CAPTURE_SUFFIXES:
        found.captures.append(name)
    else:
        return False
    return True
