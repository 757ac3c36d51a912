"""Signed certification bundles for the certify tests, made from hand-made results (no broker): a key pair per
test, and ``conformance certify --results`` signing with it."""

from __future__ import annotations

from pathlib import Path

from report_records import write_jsonl

from conformance.cli import main
from conformance.report.certify import signing


class Keys:
    """A key pair in ``folder``: the private key file, the public key file and the fingerprint."""

    def __init__(self, folder: Path):
        self.private, self.public, self.fingerprint = signing.keygen(folder)


def certify(tmp_path: Path, name: str, rows: list, *, keys: Keys | None, claims: str | None = None,
            options: tuple[str, ...] = ()) -> Path:
    """The bundle ``certify --results`` makes of ``rows`` in ``tmp_path/name``, signed with ``keys`` when given."""
    out = tmp_path / name
    arguments = ["certify", "--results", str(write_jsonl(tmp_path / f"{name}.jsonl", rows)), "-o", str(out), *options]
    if claims:
        path = tmp_path / f"{name}.yaml"
        path.write_text(claims)
        arguments += ["--claims", str(path)]
    if keys is not None:
        arguments += ["--sign-key", str(keys.private)]
    main(arguments)
    return next(path for path in out.iterdir() if path.is_dir())
