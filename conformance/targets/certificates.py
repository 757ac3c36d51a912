"""Test certificates made with ``cryptography``: a CA, a broker's certificate for 127.0.0.1 and localhost,
and client certificates, as PEM files (and PKCS#12 where a Java client wants one).

Only for brokers the harness starts on loopback and for tests: ECDSA P-256 keys, valid for two days by default
(``valid_for`` takes a negative start to make an expired one). Why not RSA 2048: a broker's JVM signs each TLS
handshake with its key, and in Java an RSA signature costs twice what all the rest of a handshake does; every
connection of a run is a handshake (measured on Kafka 4.4, mutual TLS: 16 ms of the broker's CPU a connection
with RSA 2048, 8 ms with P-256).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PKCS12_KEYS = (rsa.RSAPrivateKey, dsa.DSAPrivateKey, ec.EllipticCurvePrivateKey, ed25519.Ed25519PrivateKey,
               ed448.Ed448PrivateKey)  # what a PKCS#12 keystore can hold

ONE_DAY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class Issued:
    """One key and certificate as files: ``certificate`` (PEM, the chain up to the CA), ``key`` (PKCS#8 PEM,
    encrypted with ``key_password`` when there is one) and ``bundle`` (the key, then the chain: what
    Kafka's PEM keystore reads)."""

    name: str
    certificate: Path
    key: Path
    bundle: Path
    key_password: str | None = None


class Authority:
    """A CA whose certificate is ``directory/ca.pem``; ``issue`` signs keys with it."""

    def __init__(self, directory: Path, name: str = "kafka-conformance test CA", *,
                 valid_for: tuple[datetime.timedelta, datetime.timedelta] = (-ONE_DAY, 2 * ONE_DAY)):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._key = _new_key()
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.timezone.utc)
        self.certificate = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(self._key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now + valid_for[0]).not_valid_after(now + valid_for[1])
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        self.path = self.directory / "ca.pem"
        self.path.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))

    def issue(self, stem: str, common_name: str, *, hosts: tuple[str, ...] = (), key_password: str | None = None,
              valid_for: tuple[datetime.timedelta, datetime.timedelta] = (-ONE_DAY, 2 * ONE_DAY)) -> Issued:
        """A key and certificate for ``common_name`` (a server's when ``hosts`` names its addresses, else a
        client's), written as ``stem.pem`` (chain), ``stem.key`` and ``stem-bundle.pem`` (key and chain)."""
        key = _new_key()
        now = datetime.datetime.now(datetime.timezone.utc)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(self.certificate.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now + valid_for[0]).not_valid_after(now + valid_for[1])
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if hosts
                                                  else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        )
        if hosts:
            names: list[x509.GeneralName] = []
            for host in hosts:
                try:
                    names.append(x509.IPAddress(ipaddress.ip_address(host)))
                except ValueError:
                    names.append(x509.DNSName(host))
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        certificate = builder.sign(self._key, hashes.SHA256())
        chain = certificate.public_bytes(serialization.Encoding.PEM) + self.path.read_bytes()
        encryption = (serialization.BestAvailableEncryption(key_password.encode()) if key_password
                      else serialization.NoEncryption())
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
        issued = Issued(common_name, self.directory / f"{stem}.pem", self.directory / f"{stem}.key",
                        self.directory / f"{stem}-bundle.pem", key_password)
        issued.certificate.write_bytes(chain)
        _write_private(issued.key, key_pem)
        _write_private(issued.bundle, key_pem + chain)
        return issued

    def pkcs12(self, issued: Issued, password: str, path: Path | None = None) -> Path:
        """``issued`` as a PKCS#12 keystore (key, certificate and the CA) protected by ``password``."""
        key = serialization.load_pem_private_key(
            issued.key.read_bytes(), issued.key_password.encode() if issued.key_password else None)
        certificate = x509.load_pem_x509_certificates(issued.certificate.read_bytes())[0]
        if not isinstance(key, PKCS12_KEYS):
            raise ValueError(f"{issued.key}: a {type(key).__name__} cannot go into a PKCS#12 keystore")
        data = pkcs12.serialize_key_and_certificates(issued.name.encode(), key, certificate, [self.certificate],
                                                     serialization.BestAvailableEncryption(password.encode()))
        path = path or self.directory / f"{issued.certificate.stem}.p12"
        _write_private(path, data)
        return path


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_private(path: Path, data: bytes) -> None:
    """Owner-only from the start: a key is never readable by others, not even for a moment."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
