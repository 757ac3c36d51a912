"""The codecs' code objects kept between processes (conformance/code_cache.py): what compile() makes of the same
source, whatever the cache holds or cannot hold."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys

from conformance import code_cache
from conformance.protocol import codegen_common
from conformance.protocol.codec import Codec

SOURCE = "def double(x):\n    return 2 * x\n"


def entries(root) -> list:
    return sorted(path for path in root.rglob("*") if path.is_file())


def test_a_kept_entry_is_what_compile_makes_of_the_source_and_serves_the_next_process(tmp_path, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_CACHE", str(tmp_path))
    first = code_cache.compile_cached(SOURCE, "<double>")
    kept = entries(tmp_path)
    assert len(kept) == 1 and not kept[0].name.endswith(".tmp")
    assert marshal.loads(kept[0].read_bytes()).co_consts == compile(SOURCE, "<double>", "exec").co_consts
    assert code_cache.compile_cached(SOURCE, "<double>").co_code == first.co_code  # read back
    assert len(entries(tmp_path)) == 1
    code_cache.compile_cached(SOURCE.replace("2 *", "3 *"), "<double>")  # another source, another entry
    assert len(entries(tmp_path)) == 2
    # another process finds the entry: it compiles nothing (compile() would write no file either way, so the
    # proof is that the cache's own compile is never reached)
    script = ("import builtins, sys\nfrom conformance import code_cache\n"
              "builtins.compile = lambda *a, **k: sys.exit('compiled')\n"
              f"namespace = {{}}\nexec(code_cache.compile_cached({SOURCE!r}, '<double>'), namespace)\n"
              "print(namespace['double'](21))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "CONFORMANCE_CACHE": str(tmp_path)})
    assert done.stdout.strip() == "42", done.stderr


def test_an_unreadable_entry_is_compiled_again_and_an_unwritable_cache_only_compiles(tmp_path, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_CACHE", str(tmp_path / "cache"))
    code_cache.compile_cached(SOURCE, "<double>")
    [kept] = entries(tmp_path / "cache")
    kept.write_bytes(b"\x00not marshal")
    namespace: dict = {}
    exec(code_cache.compile_cached(SOURCE, "<double>"), namespace)
    assert namespace["double"](4) == 8 and marshal.loads(kept.read_bytes())  # and the entry made whole again
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("CONFORMANCE_CACHE", str(tmp_path / "file"))  # a folder that cannot be made
    exec(code_cache.compile_cached(SOURCE, "<double>"), namespace)
    assert namespace["double"](5) == 10


def test_installed_the_codecs_compile_through_it_and_off_leaves_compile(tmp_path, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_CACHE", str(tmp_path))
    monkeypatch.setattr(codegen_common, "_compiler", codegen_common._compiler)  # restored after the test
    monkeypatch.setenv("CONFORMANCE_CODE_CACHE", "off")
    code_cache.install()
    Codec().encode("ApiVersions", 3, "request", {"client_software_name": "a", "client_software_version": "1"})
    assert entries(tmp_path) == []
    monkeypatch.delenv("CONFORMANCE_CODE_CACHE")
    code_cache.install()
    body = Codec().encode("ApiVersions", 3, "request", {"client_software_name": "a", "client_software_version": "1"})
    assert len(entries(tmp_path)) >= 2  # the careful and the fast codec of the request
    assert Codec().decode("ApiVersions", 3, "request", body)[0]["client_software_name"] == "a"
