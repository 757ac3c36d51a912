"""Who vouches for a certification bundle: an Ed25519 signature over its manifest, and the keys a reader trusts.

The manifest lists the sha256 of every other file of the bundle, so a signature over the manifest's bytes covers
the whole bundle. ``signature.json`` beside it holds the signer's public key, its fingerprint and the signature;
it is the one file the manifest does not list (it cannot list its own signature).

A key's fingerprint is the sha256 of its 32 raw public-key bytes, in hex (64 characters): the same key gives the
same fingerprint whatever file holds it. It is shown in full wherever it is compared; a reader trusts a key by its
public key file or by that fingerprint.

The private key is read only to sign; nothing here prints or stores it (its errors name the file, never its
content).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

SIGNATURE = "signature.json"
PRIVATE_KEY = "certify-key.pem"
PUBLIC_KEY = "certify-key.pub.pem"
ALGORITHM = "ed25519"
_HEX64 = re.compile(r"[0-9a-f]{64}")


class SigningKeyError(ValueError):
    """A key file that cannot be used, or a --trust value that names no key: one line, naming the file."""


def fingerprint(public: Ed25519PublicKey) -> str:
    """sha256 of the raw public key, hex."""
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def keygen(folder: Path) -> tuple[Path, Path, str]:
    """A new key pair in ``folder``: the private key (PEM, PKCS#8, readable by its owner only) and the public key
    (PEM). Refuses to overwrite either. Returns both paths and the fingerprint."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    private_path, public_path = folder / PRIVATE_KEY, folder / PUBLIC_KEY
    for path in (private_path, public_path):
        if path.exists():
            raise SigningKeyError(f"{path} exists; not overwritten")
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    # created 0600 from the start: the key is never readable by others, not even for a moment
    descriptor = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as out:
        out.write(pem)
    public_path.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                          serialization.PublicFormat.SubjectPublicKeyInfo))
    return private_path, public_path, fingerprint(key.public_key())


def load_private(path: str | Path) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    except OSError as error:
        raise SigningKeyError(f"{path}: cannot read the signing key ({error.strerror})") from None
    except (ValueError, TypeError):
        raise SigningKeyError(f"{path}: not an unencrypted private key in PEM (make one with conformance certify "
                        "keygen)") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"{path}: not an Ed25519 key (make one with conformance certify keygen)")
    return key


def trusted_fingerprint(given: str) -> str:
    """A --trust value: a public key file (PEM) or a fingerprint (64 hex digits, colons and spaces allowed)."""
    path = Path(given)
    if path.is_file():
        try:
            key = serialization.load_pem_public_key(path.read_bytes())
        except (ValueError, TypeError):
            raise SigningKeyError(f"{given}: not a public key in PEM") from None
        if not isinstance(key, Ed25519PublicKey):
            raise SigningKeyError(f"{given}: not an Ed25519 public key")
        return fingerprint(key)
    cleaned = re.sub(r"[\s:]", "", given).lower()
    if _HEX64.fullmatch(cleaned):
        return cleaned
    raise SigningKeyError(f"--trust {given}: neither a public key file nor a key fingerprint (64 hex digits)")


def signer_of(key: Ed25519PrivateKey) -> dict:
    """What a certificate says of its signer (shown on the page, compared with the signature at verify time)."""
    return {"algorithm": ALGORITHM, "fingerprint": fingerprint(key.public_key())}


def sign(folder: Path, manifest: Path, key: Ed25519PrivateKey) -> Path:
    """Write ``signature.json``: the signature of the manifest's bytes, with the public key that checks it."""
    public = key.public_key()
    document = {
        "format": 1, "algorithm": ALGORITHM, "signed": manifest.name,
        "public_key": base64.b64encode(public.public_bytes(serialization.Encoding.Raw,
                                                           serialization.PublicFormat.Raw)).decode(),
        "fingerprint": fingerprint(public),
        "signature": base64.b64encode(key.sign(manifest.read_bytes())).decode(),
    }
    path = Path(folder) / SIGNATURE
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return path


@dataclass
class Signature:
    """What checking a bundle's signature found: the signer's fingerprint when the signature holds, else why not."""

    fingerprint: str | None
    problem: str = ""


def check(folder: Path, manifest_name: str) -> Signature:
    """Whether ``signature.json`` is a valid signature of the manifest by the key it names."""
    path = Path(folder) / SIGNATURE
    if not path.is_file():
        return Signature(None, f"unsigned: no {SIGNATURE}, so nothing says who made the bundle "
                               "(conformance certify --sign-key FILE signs it)")
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        raw = base64.b64decode(document["public_key"], validate=True)
        signature = base64.b64decode(document["signature"], validate=True)
        public = Ed25519PublicKey.from_public_bytes(raw)
    except (OSError, ValueError, KeyError, TypeError) as error:
        return Signature(None, f"unreadable signature: {SIGNATURE} ({type(error).__name__}: {error})")
    if document.get("algorithm") != ALGORITHM or document.get("signed") != manifest_name:
        return Signature(None, f"unreadable signature: {SIGNATURE} signs {document.get('signed')!r} with "
                               f"{document.get('algorithm')!r}, not {manifest_name} with {ALGORITHM}")
    found = fingerprint(public)
    if document.get("fingerprint") != found:
        return Signature(None, f"signature names another key: {SIGNATURE} says {document.get('fingerprint')}, "
                               f"its public key is {found}")
    try:
        public.verify(signature, (Path(folder) / manifest_name).read_bytes())
    except InvalidSignature:
        return Signature(None, f"bad signature: {manifest_name} is not what key {found} signed "
                               "(the manifest changed after signing)")
    except OSError as error:
        return Signature(None, f"cannot read {manifest_name}: {error.strerror}")
    return Signature(found)
