"""The fault proxy in front of a TLS listener: it terminates TLS with a certificate of its own that the
harness's clients trust, opens its own TLS to the broker, and keeps each principal's identity.

The TLS ends are checked without sockets (two ends talking through memory); then Apache Kafka with a
mutual-TLS listener behind the proxy runs the proxy's fault suites and the authorization suite, whose denials
would pass as the harness's admin if the proxy showed the broker the wrong certificate."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.proxy.tls import TlsEnd
from conformance.results.store import read_lines
from conformance.targets.certificates import Authority

ROOT = Path(__file__).resolve().parents[2]


def contexts(folder: Path, *, trusted: bool = True) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    authority = Authority(folder / "ca")
    issued = authority.issue("server", "proxy", hosts=("127.0.0.1",))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(issued.certificate, issued.key)
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.load_verify_locations(authority.path if trusted else Authority(folder / "other").path)
    return server, client


def shuttle(client: TlsEnd, server: TlsEnd) -> tuple[bytes, bytes]:
    """Carry bytes both ways until neither end has anything to say; returns what each end read."""
    to_client, to_server = bytearray(), bytearray()
    for _ in range(10):
        outgoing = client.outgoing()
        if outgoing:
            to_server += server.receive(outgoing)
        incoming = server.outgoing()
        if incoming:
            to_client += client.receive(incoming)
        if not outgoing and not incoming:
            break
    return bytes(to_client), bytes(to_server)


def test_two_ends_shake_hands_in_memory_and_plaintext_given_early_waits_for_it(tmp_path):
    server_context, client_context = contexts(tmp_path)
    client = TlsEnd(client_context, server_side=False, server_hostname="127.0.0.1")
    server = TlsEnd(server_context, server_side=True)
    client.send(b"ApiVersions before the handshake")  # kept until the handshake is done
    assert not client.established
    to_client, to_server = shuttle(client, server)
    assert client.established and server.established
    assert to_server == b"ApiVersions before the handshake"
    server.send(b"answer")
    assert shuttle(client, server) == (b"answer", b"")


def test_a_certificate_the_client_does_not_trust_ends_the_handshake(tmp_path):
    server_context, client_context = contexts(tmp_path, trusted=False)
    client = TlsEnd(client_context, server_side=False, server_hostname="127.0.0.1")
    server = TlsEnd(server_context, server_side=True)
    with pytest.raises(ssl.SSLCertVerificationError):
        shuttle(client, server)


@pytest.mark.broker
@pytest.mark.kafka
def test_faults_and_authorization_through_the_proxy_in_front_of_mutual_tls(tmp_path):
    target = "proxy+kafka,security=SSL,ssl.client.auth=required"
    results = tmp_path / "results.jsonl"
    command = [sys.executable, "-m", "conformance.cli", "run", "--target", target, str(ROOT / "suites" / "faults"),
               str(ROOT / "suites" / "kip98" / "authorization.yaml"), "--results", str(results), "--alluredir", "",
               "--transcripts", "all"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=600,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    records = read_lines(results)
    outcomes: dict[str, list[str]] = {}
    for record in records:
        outcomes.setdefault(record["outcome"], []).append(f"{record['suite']}::{record['case']}")
    assert set(outcomes) <= {"passed", "unsupported", "skipped"}, {key: found[:5] for key, found in outcomes.items()}
    passed = outcomes["passed"]
    assert sum(case.startswith("faults.proxy-kip98") for case in passed) >= 6  # the proxy's faults applied
    assert sum(case.startswith("kip98.authorization") for case in passed) > 20  # each principal kept its identity
    assert any(exchange["api"] == "CreateAcls" for record in records for exchange in record["transcript"])
