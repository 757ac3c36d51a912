"""A large corpus grown from real runs, for the benchmark: results lines and pcapng captures.

Real results records (transcripts dropped: their exchanges come from the captures) are replayed
as many runs of their targets, one run after another an hour apart, with the variation real
histories show: an item now and then gives another outcome for one run (flakiness), at
each new target version a few items change for good (regressions and fixes), and the harness
gets a new version every few runs, apart from the targets' versions. Real captures are
copied with their packet timestamps moved to the synthetic run's time and the gaps between
packets stretched or shrunk by a random factor, so latencies vary while every byte still
decodes as the original did.
"""

from __future__ import annotations

import json
import random
import struct
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..results.store import read_lines

# The outcomes a synthetic change or flake gives: a verdict or none, as a real run would. An
# IMPLEMENTATION item departs as "differs", any other as "failed".
VARIED = ["passed", "failed", "blocked", "error"]
VARIED_IMPLEMENTATION = ["passed", "differs", "blocked", "error"]


def varied(record: dict) -> list[str]:
    return VARIED_IMPLEMENTATION if record.get("requirement") == "IMPLEMENTATION" else VARIED

ENHANCED_PACKET, SECTION_HEADER = 6, 0x0A0D0D0A
FLAKY_SHARE = 0.01  # items giving a one-run different outcome in a run
CHANGE_SHARE = 0.02  # items whose outcome changes for good at a version change
RUNS_PER_VERSION = 50
RUNS_PER_HARNESS = 30  # the harness is released on its own schedule: its changes fall apart from the brokers'
LINES_PER_FILE = 200_000


def seed_runs(results_files: list[Path]) -> dict[str, list[dict]]:
    """The newest run of each target in the seed files, transcripts and captures dropped."""
    newest: dict[str, tuple[str, list[dict]]] = {}
    for path in results_files:
        for record in read_lines(path):
            target, run = record.get("target"), record.get("run_id")
            if not target or not run:
                continue
            held = newest.get(target)
            if held is None or run > held[0]:
                newest[target] = (run, [])
                held = newest[target]
            if run == held[0]:
                held[1].append({key: value for key, value in record.items() if key != "transcript"})
    return {target: records for target, (_, records) in newest.items() if records}


def write_results(seeds: dict[str, list[dict]], folder: Path, rows: int, *, seed: int = 7,
                  captures: list[str] | None = None) -> dict:
    """About ``rows`` results lines in ``folder/results-NNN.jsonl``; items of the first runs name
    the synthetic captures (``captures``) in ``artifacts.pcap``, one each."""
    chooser = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    targets = sorted(seeds)
    state: dict[str, dict[str, Any]] = {target: {"version": 0, "changed": {}} for target in targets}
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    written = runs = 0
    file_index, handle, in_file = 0, None, 0
    pending_captures = list(captures or [])
    while written < rows:
        target = targets[runs % len(targets)]
        records = seeds[target]
        mine = state[target]
        run_number = runs // len(targets)
        if run_number and run_number % RUNS_PER_VERSION == 0 and runs % len(targets) == 0:
            for each in targets:  # a new release of every target: some items change for good
                state[each]["version"] += 1
                for record in seeds[each]:
                    if chooser.random() < CHANGE_SHARE:
                        state[each]["changed"][record["nodeid"]] = chooser.choice(varied(record))
        began = start + timedelta(hours=runs)
        run_id = began.strftime("%Y%m%dT%H%M%SZ") + f"-{runs:06x}"
        for position, record in enumerate(records):
            if written >= rows:
                break
            outcome = mine["changed"].get(record["nodeid"], record["outcome"])
            if chooser.random() < FLAKY_SHARE:
                outcome = chooser.choice([other for other in varied(record) if other != outcome])
            line = dict(record, run_id=run_id, outcome=outcome,
                        target_version=f"{record.get('target_version') or '0'}+syn{mine['version']}",
                        harness_version=f"{record.get('harness_version') or '0'}+syn{run_number // RUNS_PER_HARNESS}",
                        duration_s=round((record.get("duration_s") or 0.1) * chooser.uniform(0.7, 1.6), 4),
                        recorded_at=(began + timedelta(seconds=position)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                        artifacts={"pcap": pending_captures.pop()} if pending_captures else {})
            if handle is None or in_file >= LINES_PER_FILE:
                if handle is not None:
                    handle.close()
                handle = open(folder / f"results-{file_index:03d}.jsonl", "w", encoding="utf-8")  # noqa: SIM115
                file_index, in_file = file_index + 1, 0
            handle.write(json.dumps(line, separators=(",", ":")) + "\n")
            written += 1
            in_file += 1
        runs += 1
    if handle is not None:
        handle.close()
    return {"rows": written, "runs": runs, "files": file_index}


def retimed(data: bytes, start_ticks: int, stretch: float) -> bytes:
    """A pcapng file's bytes with every packet's timestamp moved to begin at ``start_ticks`` and
    the gaps between packets multiplied by ``stretch`` (little-endian sections, as dumpcap writes)."""
    out = bytearray(data)
    position, first = 0, None
    while position + 12 <= len(out):
        block_type, length = struct.unpack_from("<II", out, position)
        if block_type == SECTION_HEADER and out[position + 8:position + 12] != b"\x4d\x3c\x2b\x1a":
            return bytes(data)  # a big-endian section: left as it is
        if length < 12 or position + length > len(out):
            break
        if block_type == ENHANCED_PACKET:
            high, low = struct.unpack_from("<II", out, position + 12)
            ticks = (high << 32) | low
            first = ticks if first is None else first
            moved = start_ticks + int((ticks - first) * stretch)
            struct.pack_into("<II", out, position + 12, moved >> 32, moved & 0xFFFFFFFF)
        position += length
    return bytes(out)


def write_captures(seed_files: list[Path], folder: Path, exchanges: int, per_file: dict[Path, int], *,
                   seed: int = 11, files_per_run: int = 1000) -> dict:
    """Copies of the seed captures, retimed, until they hold about ``exchanges`` exchanges;
    ``per_file`` says how many each seed holds (read once with the project's reader)."""
    chooser = random.Random(seed)
    usable = [path for path in seed_files if per_file.get(path)]
    contents = {path: path.read_bytes() for path in usable}
    written = count = 0
    names = []
    base = int(datetime(2026, 1, 1, tzinfo=timezone.utc).timestamp() * 1_000_000)
    while written < exchanges:
        path = usable[count % len(usable)]
        run_folder = folder / f"syn-run-{count // files_per_run:05d}"
        if count % files_per_run == 0:
            run_folder.mkdir(parents=True, exist_ok=True)
        target = run_folder / f"{count:07d}-{path.name}"
        target.write_bytes(retimed(contents[path], base + count * 2_000_000, chooser.uniform(0.5, 2.0)))
        names.append(str(target))
        written += per_file[path]
        count += 1
    return {"files": count, "exchanges": written, "names": names,
            "bytes": sum(len(contents[usable[index % len(usable)]]) for index in range(count))}
