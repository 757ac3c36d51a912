"""The raw client on secured listeners, with no broker: client configs as users write them (librdkafka's
keys and the Java client's), SCRAM and PLAIN against a scripted server, KIP-368 re-authentication,
and TLS with and without client certificates, each refusal in one line that names it and no secret."""

from __future__ import annotations

import datetime
import ssl
import time

import pytest

from conformance.client.cluster import Cluster
from conformance.client.connection import ClientError, SecurityFailure
from conformance.client.reach import why_unreachable
from conformance.client.sasl import AuthenticationFailed
from conformance.client.security import Security, SecurityConfigError
from conformance.targets.base import TargetRefused
from conformance.targets.certificates import ONE_DAY, Authority
from conformance.targets.hostport import HostPortTarget
from fake_kafka import FakeKafka, Sasl

SECRET = "s3cr3t-XYZ"
SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="{}";'


def sasl_config(mechanism: str, password: str = SECRET, **more) -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism, "sasl.username": "alice",
            "sasl.password": password, **more}


# ---------------------------------------------------------------------------- reading client configs
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"])
def test_librdkafka_sasl_keys(mechanism):
    security = Security.from_client_config({**sasl_config(mechanism), "sasl.mechanisms": "ignored-when-singular"})
    assert (security.mechanism, security.sasl_username, security.sasl_password) == (mechanism, "alice", SECRET)
    assert SECRET not in repr(security)


def test_java_scram_jaas_config_and_unquoted_options():
    security = Security.from_client_config({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                                            "sasl.jaas.config": SCRAM_JAAS.format(SECRET)})
    assert (security.mechanism, security.sasl_username, security.sasl_password, security.tls) == \
        ("SCRAM-SHA-512", "alice", SECRET, True)
    bare = Security.from_client_config({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                                        "sasl.jaas.config": "org.apache.kafka.common.security.scram."
                                                            "ScramLoginModule required username=bob password=pw;"})
    assert (bare.sasl_username, bare.sasl_password) == ("bob", "pw")


@pytest.mark.parametrize("settings, key", [
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI", "sasl.username": "u"}, "sasl.mechanism"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}, "sasl.oauthbearer.token.endpoint.url"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
      "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="a";'},
     "sasl.jaas.config"),
    ({"security.protocol": "SSL", "ssl.certificate.location": "/c.pem"}, "ssl.key.location"),
    ({"security.protocol": "SSL", "ssl.keystore.type": "JKS", "ssl.keystore.location": "/k.jks"},
     "ssl.keystore.location"),
    ({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "ldap"},
     "ssl.endpoint.identification.algorithm"),
])
def test_what_the_raw_client_cannot_honour_is_refused_by_key(settings, key):
    with pytest.raises(SecurityConfigError, match=key) as refused:
        Security.from_client_config(settings)
    assert SECRET not in str(refused.value)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA, a server certificate for 127.0.0.1 and localhost, client certificates in every form users keep."""
    folder = tmp_path_factory.mktemp("pki")
    ca = Authority(folder)
    other = Authority(folder / "other", "another CA")
    return {
        "ca": ca, "folder": folder,
        "server": ca.issue("server", "127.0.0.1", hosts=("127.0.0.1", "localhost")),
        "expired_server": ca.issue("expired-server", "127.0.0.1", hosts=("127.0.0.1",), valid_for=(-2 * ONE_DAY, -ONE_DAY)),
        "client": ca.issue("client", "alice", key_password=SECRET),
        "expired_client": ca.issue("expired-client", "alice", valid_for=(-2 * ONE_DAY, -ONE_DAY)),
        "stranger": other.issue("stranger", "mallory"),
    }


def client_forms(pki) -> dict[str, dict[str, str]]:
    client, ca = pki["client"], pki["ca"]
    p12 = ca.pkcs12(client, SECRET)
    truststore = ca.directory / "truststore.p12"
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, pkcs12

    truststore.write_bytes(pkcs12.serialize_key_and_certificates(None, None, None, [ca.certificate],
                                                                 BestAvailableEncryption(b"trust-pw")))
    return {
        "librdkafka PEM files": {"ssl.ca.location": str(ca.path), "ssl.certificate.location": str(client.certificate),
                                 "ssl.key.location": str(client.key), "ssl.key.password": SECRET},
        "librdkafka PKCS#12": {"ssl.ca.location": str(ca.path), "ssl.keystore.location": str(p12),
                               "ssl.keystore.password": SECRET},
        "librdkafka inline PEM": {"ssl.ca.pem": ca.path.read_text(), "ssl.certificate.pem": client.certificate.read_text(),
                                  "ssl.key.pem": client.key.read_text(), "ssl.key.password": SECRET},
        "Java PKCS12 stores": {"ssl.truststore.type": "PKCS12", "ssl.truststore.location": str(truststore),
                               "ssl.truststore.password": "trust-pw", "ssl.keystore.type": "PKCS12",
                               "ssl.keystore.location": str(p12), "ssl.keystore.password": SECRET,
                               "ssl.key.password": SECRET},
        "Java PEM stores": {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca.path),
                            "ssl.keystore.type": "PEM", "ssl.keystore.location": str(client.bundle),
                            "ssl.key.password": SECRET},
        "Java PEM inline": {"ssl.truststore.type": "PEM", "ssl.truststore.certificates": ca.path.read_text(),
                            "ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": client.certificate.read_text(),
                            "ssl.keystore.key": client.key.read_text(), "ssl.key.password": SECRET},
    }


def server_context(issued, ca=None, client_auth: bool = False) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(issued.certificate, issued.key, password=issued.key_password)
    if client_auth:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cafile=str(ca.path))
    return context


@pytest.mark.parametrize("form", ["librdkafka PEM files", "librdkafka PKCS#12", "librdkafka inline PEM",
                                  "Java PKCS12 stores", "Java PEM stores", "Java PEM inline"])
def test_mutual_tls_with_each_form_of_client_certificate(pki, form):
    fake = FakeKafka(tls=server_context(pki["server"], pki["ca"], client_auth=True))
    try:
        security = Security.from_client_config({"security.protocol": "SSL", **client_forms(pki)[form]})
        security.check()
        assert SECRET not in repr(security)
        cluster = Cluster(fake.address, security=security)
        assert cluster.api_versions()
        assert cluster.connection()._socket.getpeercert()["subject"] == ((("commonName", "127.0.0.1"),),)
        cluster.close()
    finally:
        fake.stop()


def test_a_wrong_key_password_or_a_missing_file_is_a_config_error_naming_the_key(pki):
    client = pki["client"]
    wrong = Security.from_client_config({"security.protocol": "SSL", "ssl.certificate.location": str(client.certificate),
                                         "ssl.key.location": str(client.key), "ssl.key.password": "nope"})
    with pytest.raises(SecurityConfigError, match="ssl.key.password"):
        wrong.check()
    p12 = pki["ca"].pkcs12(client, SECRET)
    with pytest.raises(SecurityConfigError, match="ssl.keystore.password") as refused:
        Security.from_client_config({"security.protocol": "SSL", "ssl.keystore.location": str(p12),
                                     "ssl.keystore.password": "nope"}).check()
    assert "nope" not in str(refused.value)
    with pytest.raises(SecurityConfigError, match="ssl.ca.location: no file at /nowhere/ca.pem"):
        Security.from_client_config({"security.protocol": "SSL", "ssl.ca.location": "/nowhere/ca.pem"}).check()


# ---------------------------------------------------------------------------- SASL against a scripted broker
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_authenticates_and_keeps_every_token_out_of_the_transcript(mechanism):
    sasl = Sasl(users={"alice": SECRET})
    fake = FakeKafka(sasl=sasl)
    try:
        cluster = Cluster(fake.address, security=Security.from_client_config(sasl_config(mechanism)))
        cluster.api_versions()
        cluster.metadata([])  # refused by the fake unless authenticated
        assert sasl.log == [(1, mechanism, "alice", True)]
        steps = [exchange.api for exchange in cluster.transcript.exchanges if exchange.step == "sasl"]
        assert steps == ["SaslHandshake"] + ["SaslAuthenticate"] * (1 if mechanism == "PLAIN" else 2)
        shown = cluster.transcript.render() + str(cluster.transcript.to_json())
        assert SECRET not in shown and SECRET.encode().hex() not in shown and "<redacted>" in shown
        cluster.close()
    finally:
        fake.stop()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"])
def test_bad_credentials_are_one_line_without_the_password(mechanism):
    fake = FakeKafka(sasl=Sasl(users={"alice": "the-right-one"}))
    try:
        cluster = Cluster(fake.address, security=Security.from_client_config(sasl_config(mechanism)))
        with pytest.raises(AuthenticationFailed) as refused:
            cluster.api_versions()
        message = str(refused.value)
        assert message.startswith(f"bad credentials: the broker refused SASL/{mechanism} authentication "
                                  "(SASL_AUTHENTICATION_FAILED") and "\n" not in message and SECRET not in message
    finally:
        fake.stop()


def test_a_mechanism_the_broker_does_not_enable_is_named_with_those_it_does():
    fake = FakeKafka(sasl=Sasl(users={"alice": SECRET}, mechanisms=("SCRAM-SHA-512",)))
    try:
        cluster = Cluster(fake.address, security=Security.from_client_config(sasl_config("SCRAM-SHA-256")))
        with pytest.raises(AuthenticationFailed, match=r"^mechanism not enabled: .* SCRAM-SHA-256 .*"
                                                       r"\(it enables: SCRAM-SHA-512\); check sasl.mechanism$"):
            cluster.api_versions()
    finally:
        fake.stop()


def test_a_broker_whose_scram_signature_is_wrong_is_not_trusted():
    """The client checks the server's final message: a broker that does not hold the credentials fails."""
    def forged(api, version, body):
        return None

    sasl = Sasl(users={"alice": SECRET})
    fake = FakeKafka(forged, sasl=sasl)
    original = fake._sasl

    def tamper(api, version, body, state):
        answer = original(api, version, body, state)
        if answer.get("auth_bytes", b"").startswith(b"v="):
            answer["auth_bytes"] = b"v=" + b"A" * 86 + b"=="
        return answer

    fake._sasl = tamper
    try:
        cluster = Cluster(fake.address, security=Security.from_client_config(sasl_config("SCRAM-SHA-512")))
        with pytest.raises(AuthenticationFailed, match="does not complete the SCRAM exchange"):
            cluster.api_versions()
    finally:
        fake.stop()


# ---------------------------------------------------------------------------- KIP-368 re-authentication
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_a_long_lived_connection_reauthenticates_before_its_session_ends(mechanism):
    """The fake closes a connection used after its session ended, as Kafka does: the same socket must
    re-authenticate in time, also while it sits idle (a timer), and requests go on without a reconnect."""
    # 4 s sessions: re-authentication starts at 85-95% of one, 0.2 s to 0.6 s before its end, room enough for two
    # SCRAM round trips and their key derivations on a loaded machine (with 1.5 s, a busy CI missed the end)
    sasl = Sasl(users={"alice": SECRET}, lifetime_ms=4000)
    fake = FakeKafka(sasl=sasl)
    try:
        cluster = Cluster(fake.address, security=Security.from_client_config(sasl_config(mechanism)))
        cluster.api_versions()
        connection = cluster.connection()
        port = connection.local_port
        for _ in range(2):
            time.sleep(4.2)  # idle past the session: the timer re-authenticated before it ended
            cluster.metadata([])
        assert connection.local_port == port and fake.connections == 1
        assert connection.reauthentications >= 2
        assert [entry for entry in sasl.log if entry[0] != 1 or not entry[3]] == []
        assert any(exchange.step == "reauthenticate" and exchange.api == "SaslAuthenticate"
                   for exchange in cluster.transcript.exchanges)
        cluster.close()
    finally:
        fake.stop()


def test_a_busy_connection_reauthenticates_before_its_next_request():
    sasl = Sasl(users={"alice": SECRET}, lifetime_ms=2000)
    fake = FakeKafka(sasl=sasl)
    try:
        cluster = Cluster(fake.address, security=Security.from_client_config(sasl_config("SCRAM-SHA-256")))
        cluster.api_versions()
        connection = cluster.connection()
        connection._cancel_timer()  # as if every moment had a request in flight: only send() can do it
        time.sleep(max(0.0, connection._reauthenticate_at - time.monotonic()) + 0.01)  # due, the session not over
        cluster.metadata([])
        assert connection.reauthentications == 1 and fake.connections == 1
        cluster.close()
    finally:
        fake.stop()


def test_a_connection_whose_session_ended_unnoticed_reconnects_instead_of_being_closed():
    sasl = Sasl(users={"alice": SECRET}, lifetime_ms=300)
    fake = FakeKafka(sasl=sasl)
    try:
        cluster = Cluster(fake.address, security=Security.from_client_config(sasl_config("SCRAM-SHA-512")))
        cluster.api_versions()
        cluster.connection()._cancel_timer()
        time.sleep(0.4)
        cluster.metadata([])
        assert fake.connections == 2 and all(ok for *_, ok in sasl.log)
        cluster.close()
    finally:
        fake.stop()


# ---------------------------------------------------------------------------- TLS refusals, each named
def tls_failure(fake: FakeKafka, settings: dict[str, str]) -> str:
    cluster = Cluster(fake.address, security=Security.from_client_config(settings), timeout=3)
    try:
        with pytest.raises(ClientError) as failed:
            cluster.api_versions()
        return str(failed.value)
    finally:
        cluster.close()
        fake.stop()


def test_an_expired_broker_certificate(pki):
    message = tls_failure(FakeKafka(tls=server_context(pki["expired_server"])),
                          {"security.protocol": "SSL", "ssl.ca.location": str(pki["ca"].path)})
    assert "untrusted certificate: the broker's certificate has expired" in message


def test_a_broker_certificate_from_an_unknown_ca(pki):
    message = tls_failure(FakeKafka(tls=server_context(pki["server"])), {"security.protocol": "SSL"})
    assert "not signed by a CA this client trusts (ssl.ca.location or ssl.truststore.location)" in message


def test_a_broker_certificate_for_another_name(pki, tmp_path):
    other = pki["ca"].issue("elsewhere", "broker.example", hosts=("broker.example",))
    settings = {"security.protocol": "SSL", "ssl.ca.location": str(pki["ca"].path)}
    assert "does not name 127.0.0.1" in tls_failure(FakeKafka(tls=server_context(other)), settings)
    lenient = Cluster(FakeKafka(tls=server_context(other)).address, security=Security.from_client_config(
        {**settings, "ssl.endpoint.identification.algorithm": ""}))
    assert lenient.api_versions()
    lenient.close()


@pytest.mark.parametrize("client, expected", [
    (None, "client certificate required"),
    ("stranger", "client certificate refused: the broker does not trust"),
    ("expired_client", "client certificate refused"),
])
def test_mutual_tls_refusals(pki, client, expected):
    settings = {"security.protocol": "SSL", "ssl.ca.location": str(pki["ca"].path)}
    if client:
        settings.update({"ssl.certificate.location": str(pki[client].certificate),
                         "ssl.key.location": str(pki[client].key)})
    message = tls_failure(FakeKafka(tls=server_context(pki["server"], pki["ca"], client_auth=True)), settings)
    assert expected in message and "\n" not in message


def test_tls_spoken_to_a_plaintext_port():
    message = tls_failure(FakeKafka(), {"security.protocol": "SSL"})
    assert "TLS on a plaintext port" in message and "check security.protocol" in message


def test_plaintext_spoken_to_a_tls_port_is_named_by_the_start_check(pki):
    fake = FakeKafka(tls=server_context(pki["server"]))
    try:
        assert why_unreachable(fake.address, Security(), timeout=3) == (
            f"plaintext on a TLS port: {fake.address} speaks TLS (security.protocol=SSL or SASL_SSL in the client config)")
    finally:
        fake.stop()


def test_no_sasl_against_a_sasl_listener_is_named_by_the_start_check():
    fake = FakeKafka(sasl=Sasl(users={"alice": SECRET}))
    try:
        assert why_unreachable(fake.address, Security(), timeout=3).startswith(
            "authentication required: the broker answered ApiVersions, then closed the connection")
    finally:
        fake.stop()


def test_a_target_that_does_not_speak_kafka_is_left_to_the_runner():
    fake = FakeKafka(mode="http")
    try:
        assert why_unreachable(fake.address, Security(), timeout=2) is None
    finally:
        fake.stop()


def test_an_attached_broker_refusing_the_config_stops_before_any_case_in_one_line():
    fake = FakeKafka(sasl=Sasl(users={"alice": "the-right-one"}))
    try:
        target = HostPortTarget(fake.address, security=sasl_config("SCRAM-SHA-512"))
        with pytest.raises(TargetRefused) as refused:
            target.start()
        assert str(refused.value) == ("bad credentials: the broker refused SASL/SCRAM-SHA-512 authentication "
                                      "(SASL_AUTHENTICATION_FAILED: Authentication failed during authentication due "
                                      "to invalid credentials with SASL mechanism SCRAM-SHA-512)")
        HostPortTarget(fake.address, security=sasl_config("SCRAM-SHA-512", "the-right-one")).start()
    finally:
        fake.stop()


def test_the_certificates_made_for_brokers_name_loopback_and_expire_when_asked(pki):
    from cryptography import x509

    server = x509.load_pem_x509_certificates(pki["server"].certificate.read_bytes())[0]
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(ip) for ip in names.get_values_for_type(x509.IPAddress)} == {"127.0.0.1"}
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    expired = x509.load_pem_x509_certificates(pki["expired_server"].certificate.read_bytes())[0]
    assert expired.not_valid_after_utc < datetime.datetime.now(datetime.timezone.utc)
    assert oct(pki["client"].key.stat().st_mode & 0o777) == "0o600"


def test_security_failures_are_client_errors_the_runner_reports():
    assert issubclass(AuthenticationFailed, SecurityFailure) and issubclass(SecurityFailure, ClientError)


def test_a_decoded_capture_of_sasl_plain_shows_no_password(tmp_path):
    """PLAIN on SASL_PLAINTEXT puts the password on the wire: ``conformance decode`` never shows it."""
    import contextlib
    import io
    import json

    from conformance.cli import main
    from conformance.capture.writer import SyntheticConnection, write_packets
    from conformance.protocol import frames
    from conformance.protocol.codec import default_codec

    codec = default_codec()
    connection = SyntheticConnection()
    packets = connection.handshake()
    token = f"\0alice\0{SECRET}".encode()
    request = frames.encode_request(codec, "SaslAuthenticate", 2, 1, {"auth_bytes": token})
    answer = frames.encode_response(codec, "SaslAuthenticate", 2, 1, {"error_code": 0, "auth_bytes": b"v=signature"})
    packets += connection.segments(True, request) + connection.segments(False, answer)
    path = tmp_path / "plain.pcapng"
    write_packets(path, packets, format="pcapng", start=1_795_400_000.0, step=0.001)
    for arguments in (["-v"], ["--json"], ["--json", "--bytes"]):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            assert main(["decode", *arguments, str(path)]) == 0
        text = printed.getvalue()
        assert "SaslAuthenticate" in text and SECRET not in text and "<redacted>" in text
        if "--bytes" in arguments:
            exchange = json.loads(text)["exchanges"][0]
            assert exchange["request_bytes"] == exchange["response_bytes"] == "<redacted>"
