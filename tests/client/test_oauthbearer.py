"""SASL/OAUTHBEARER with no broker: the client credentials grant against the harness's OIDC provider,
the keys users write (librdkafka's and the Java client's), RFC 7628's exchange against the scripted
broker, a refused token and a refused client named in one line, fresh tokens for re-authentication."""

from __future__ import annotations

import base64
import json
import time

import pytest

from conformance.client.cluster import Cluster
from conformance.client.oauth import OAuthClient, TokenError
from conformance.client.reach import why_unreachable
from conformance.client.sasl import AuthenticationFailed
from conformance.client.security import Security, SecurityConfigError
from conformance.targets.oidc import TokenProvider
from fake_kafka import FakeKafka, Sasl

SECRET = "s3cr3t-XYZ"


@pytest.fixture
def provider():
    provider = TokenProvider({"alice": SECRET, "bob": "other"}, lifetime_s=60).start()
    yield provider
    provider.stop()


def claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def librdkafka(provider, secret: str = SECRET, **more) -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.client.id": "alice", "sasl.oauthbearer.client.secret": secret,
            "sasl.oauthbearer.token.endpoint.url": provider.token_endpoint, **more}


def test_the_provider_issues_signed_tokens_for_known_clients_only(provider):
    token = OAuthClient(provider.token_endpoint, "alice", SECRET, scope="kafka").token()
    found = claims(token)
    assert (found["sub"], found["iss"], found["aud"], found["scope"]) == ("alice", provider.issuer, "kafka", "kafka")
    assert found["exp"] - found["iat"] == 60
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    key = provider.jwks()["keys"][0]
    number = lambda text: int.from_bytes(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)), "big")  # noqa: E731
    public = rsa.RSAPublicNumbers(number(key["e"]), number(key["n"])).public_key()
    head, body, signature = token.split(".")
    public.verify(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)), f"{head}.{body}".encode(),
                  padding.PKCS1v15(), hashes.SHA256())  # raises if the JWKS does not verify it
    with pytest.raises(TokenError, match=r"^bad credentials: the token endpoint .* refused the client credentials "
                                         r"of 'alice' \(HTTP 401\)$") as refused:
        OAuthClient(provider.token_endpoint, "alice", "wrong-" + SECRET).token()
    assert SECRET not in str(refused.value)


def test_tokens_are_cached_and_fetched_again_late_in_their_life(provider):
    provider.lifetime_s = 1
    client = OAuthClient(provider.token_endpoint, "alice", SECRET)
    first = client.token()
    assert client.token() == first and provider.issued == 1
    time.sleep(0.9)  # past 80% of its second
    assert client.token() != first and provider.issued == 2


def test_librdkafka_and_java_keys(provider):
    security = Security.from_client_config(librdkafka(provider, **{"sasl.oauthbearer.scope": "kafka",
                                                                   "sasl.oauthbearer.extensions": "traceId=7"}))
    assert security.mechanism == "OAUTHBEARER" and security.oauth.client_id == "alice"
    assert security.oauth.extensions == {"traceId": "7"} and SECRET not in repr(security)
    java = Security.from_client_config({
        "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
        "sasl.login.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
        "sasl.oauthbearer.token.endpoint.url": provider.token_endpoint,
        "sasl.jaas.config": 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                            f'clientId="alice" clientSecret="{SECRET}" scope="kafka";'})
    assert (java.oauth.client_id, java.oauth.client_secret, java.oauth.scope, java.tls) == ("alice", SECRET, "kafka", True)
    kafka41 = Security.from_client_config({
        "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.token.endpoint.url": provider.token_endpoint,
        "sasl.oauthbearer.client.credentials.client.id": "alice",
        "sasl.oauthbearer.client.credentials.client.secret": SECRET})
    assert kafka41.oauth.client_secret == SECRET


@pytest.mark.parametrize("settings, key", [
    ({"sasl.oauthbearer.method": "default"}, "sasl.oauthbearer.method"),
    ({"sasl.oauthbearer.token.endpoint.url": "file:///tmp/token"}, "sasl.oauthbearer.token.endpoint.url"),
    ({"sasl.oauthbearer.client.id": ""}, "sasl.oauthbearer.client.id"),
])
def test_what_the_raw_client_cannot_do_with_oauthbearer_is_refused_by_key(provider, settings, key):
    with pytest.raises(SecurityConfigError, match=key):
        Security.from_client_config({**librdkafka(provider), **settings})


def test_oauthbearer_authenticates_with_a_fresh_token_and_reauthenticates(provider):
    # A session ends with its token. 3 s, so that the re-authentication begun at 85-95% of it (0.15 s to 0.45 s
    # before the end) finishes in time on a loaded machine too; with 1 s, a busy CI missed the end now and then.
    sasl = Sasl(users={}, lifetime_ms=3000, bearer=lambda token: claims(token)["sub"])
    fake = FakeKafka(sasl=sasl)
    provider.lifetime_s = 3
    try:
        cluster = Cluster(fake.address, security=Security.from_client_config(librdkafka(provider)))
        cluster.api_versions()
        cluster.metadata([])
        time.sleep(3.2)
        cluster.metadata([])
        assert [entry[1:] for entry in sasl.log] == [("OAUTHBEARER", "alice", True)] * 2 and fake.connections == 1
        assert provider.issued == 2  # the second authentication came after 80% of the first token's life
        shown = cluster.transcript.render() + str(cluster.transcript.to_json())
        assert SECRET not in shown
        cluster.close()
    finally:
        fake.stop()


def test_a_refused_token_and_a_refused_client_are_one_line_each(provider):
    fake = FakeKafka(sasl=Sasl(users={}, bearer=lambda token: None))
    try:
        cluster = Cluster(fake.address, security=Security.from_client_config(librdkafka(provider)))
        with pytest.raises(AuthenticationFailed, match=r"^bad credentials: the broker refused the OAUTHBEARER token "
                                                       r"\(invalid_token: SASL_AUTHENTICATION_FAILED"):
            cluster.api_versions()
        reason = why_unreachable(fake.address, Security.from_client_config(librdkafka(provider, "wrong")), timeout=3)
        assert reason.startswith("bad credentials: the token endpoint") and SECRET not in reason
    finally:
        fake.stop()
