"""Open a page the way a person would, in Debian's headless chromium: the DOM after scripts ran, and a screenshot.

Tests using this skip (with the reason) when chromium is not installed; .ci/run installs it.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

import pytest


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no chromium on PATH (apt-get install chromium)")


def _run(arguments: list[str], *, timeout: float = 120) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                   "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}", *arguments]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


def dump_dom(url: str, *, virtual_time_ms: int = 5000) -> str:
    """The serialized DOM once ``virtual_time_ms`` of virtual time has let scripts and timers run."""
    done = _run(["--dump-dom", f"--virtual-time-budget={virtual_time_ms}", "--run-all-compositor-stages-before-draw",
                 url])
    assert done.stdout.strip(), f"chromium printed no DOM: {done.stderr[-2000:]}"
    return done.stdout


def screenshot(url: str, path: Path, *, width: int = 1280, height: int = 1600, virtual_time_ms: int = 5000) -> Path:
    _run([f"--screenshot={path}", f"--window-size={width},{height}", f"--virtual-time-budget={virtual_time_ms}",
          url])
    assert path.is_file() and path.stat().st_size > 0, "chromium wrote no screenshot"
    return path


def colour_count(png: Path) -> int:
    """How many distinct colours the screenshot has (Pillow when installed, else a PNG decoder here)."""
    try:
        from PIL import Image
    except ImportError:
        return len(set(_decode_png_pixels(png.read_bytes())))
    with Image.open(png) as image:
        return len(image.convert("RGB").getcolors(maxcolors=1 << 24) or [])


def _decode_png_pixels(data: bytes) -> list[bytes]:
    """8-bit RGB/RGBA PNG (what chromium writes) to pixels: just enough decoding to count colours."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, chunks, header = 8, [], None
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        body = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        position += 12 + length
    width, height, depth, colour_type = header[:4]
    assert depth == 8 and colour_type in (2, 6), f"unexpected PNG format {depth}/{colour_type}"
    channels = 3 if colour_type == 2 else 4
    raw, stride, previous, pixels = zlib.decompress(b"".join(chunks)), width * channels, bytearray(width * channels), []
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for index in range(stride):
            left = line[index - channels] if index >= channels else 0
            up, corner = previous[index], previous[index - channels] if index >= channels else 0
            if kind == 1:
                line[index] = (line[index] + left) & 255
            elif kind == 2:
                line[index] = (line[index] + up) & 255
            elif kind == 3:
                line[index] = (line[index] + (left + up) // 2) & 255
            elif kind == 4:
                estimate = left + up - corner
                distances = abs(estimate - left), abs(estimate - up), abs(estimate - corner)
                best = left if distances[0] <= distances[1] and distances[0] <= distances[2] else (
                    up if distances[1] <= distances[2] else corner)
                line[index] = (line[index] + best) & 255
        pixels += [bytes(line[index:index + 3]) for index in range(0, stride, channels)]
        previous = line
    return pixels


def printed_pages(url: str, path: Path) -> int:
    """How many sheets the page prints on (chromium's print to PDF, as a person's "Save as PDF" does): a measure of
    how long it is as drawn, closed ``<details>`` staying closed."""
    _run([f"--print-to-pdf={path}", "--no-pdf-header-footer", url])
    assert path.is_file() and path.stat().st_size > 0, "chromium wrote no PDF"
    import re

    return len(re.findall(rb"/Type\s*/Page\b(?!s)", path.read_bytes()))
