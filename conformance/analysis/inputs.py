"""What the command line names, sorted into results files, capture files and warehouses.

Arguments may be files, folders (searched recursively) or glob patterns (``reports/**/*.jsonl``).
A folder holding ``items/`` is a warehouse written by ``conformance analyze ingest``. URIs
(``hdfs://``, ``s3a://``) go to Spark untouched, judged by their suffix.
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
    warehouses: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # arguments that matched nothing

    def empty(self) -> bool:
        return not (self.results or self.captures or self.warehouses)


def is_warehouse(path: Path) -> bool:
    return (path / "items").is_dir()


def collect(arguments: list[str]) -> Inputs:
    found = Inputs()
    for argument in arguments:
        if "://" in argument:
            _add(found, argument)
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
                for child in sorted(path.rglob("*")):
                    if child.is_file() and _add(found, str(child.resolve())):
                        matched = True
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
