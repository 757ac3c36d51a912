"""The generated codecs' code objects, kept between processes as Python keeps a module's bytecode.

A codec is Python source generated from the message specs (:mod:`conformance.protocol`), and compile() is three
quarters of making one: over the 424 message versions of the bundled specs, 0.92 of 1.21 s. A run builds the same
codecs in each of its processes (pytest's workers, each ``conformance`` command, the gate's reruns), so the entry
points install this cache (:func:`install`); the protocol package itself reads and writes no file.

The key is the source itself, with the code's file name and this Python's bytecode magic number: an entry is the
code compile() returns for exactly that source, so no entry can be stale, only unused (a changed generator leaves
its old entries behind, some MiB; removing the folder is always safe). An entry that cannot be read is compiled
again, one that cannot be written is not kept, and each is written whole (a file of its own, renamed into place).
``CONFORMANCE_CODE_CACHE=off`` compiles every time.
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import threading
from pathlib import Path
from types import CodeType

from .defaults import cache_root
from .protocol.codegen_common import use_compiler


def folder() -> Path:
    return cache_root() / "codecs" / importlib.util.MAGIC_NUMBER.hex()


def compile_cached(source: str, filename: str) -> CodeType:
    """What ``compile(source, filename, "exec")`` returns: from the cache when it holds it, else compiled and kept."""
    digest = hashlib.sha256(f"{filename}\0{source}".encode()).hexdigest()
    path = folder() / digest[:2] / digest
    try:
        code = marshal.loads(path.read_bytes())
        if isinstance(code, CodeType):
            return code
    except (OSError, ValueError, EOFError, TypeError):
        pass  # not kept yet, or unreadable: compiled below
    code = compile(source, filename, "exec")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{digest}.{os.getpid()}-{threading.get_ident()}.tmp")
        partial.write_bytes(marshal.dumps(code))
        os.replace(partial, path)
    except OSError:
        pass  # a read-only or full cache: this process compiles, as without one
    return code


def install() -> None:
    """This process's codecs compile through the cache, unless ``CONFORMANCE_CODE_CACHE=off``."""
    use_compiler(compile_cached if os.environ.get("CONFORMANCE_CODE_CACHE", "on").lower() != "off" else None)
