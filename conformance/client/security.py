"""How the raw client reaches a secured broker, from a Kafka client config: TLS (with a client
certificate where the broker asks for one) and SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER).

Users already keep these settings in a client properties file (Kafka's ``--command-config``,
librdkafka's configuration), so the harness reads the same keys rather than inventing its own:

- librdkafka's: ``security.protocol``, ``sasl.mechanism(s)``, ``sasl.username``, ``sasl.password``,
  ``ssl.ca.location`` (a file or a folder), ``ssl.ca.pem``, ``ssl.certificate.location``,
  ``ssl.key.location``, ``ssl.key.password``, ``ssl.certificate.pem``/``ssl.key.pem``,
  ``ssl.keystore.location``/``ssl.keystore.password`` (PKCS#12), ``ssl.endpoint.identification.algorithm``,
  ``enable.ssl.certificate.verification``;
- the Java client's: ``sasl.jaas.config`` (``PlainLoginModule`` or ``ScramLoginModule``),
  ``ssl.truststore.*`` and ``ssl.keystore.*`` of type PEM or PKCS12 (``ssl.truststore.certificates``,
  ``ssl.keystore.certificate.chain`` and ``ssl.keystore.key`` inline), ``ssl.key.password``.

SASL/OAUTHBEARER gets its tokens from an OIDC token endpoint by the client credentials grant
(:mod:`conformance.client.oauth`: ``sasl.oauthbearer.token.endpoint.url``, librdkafka's
``sasl.oauthbearer.client.id``/``.client.secret``, or the Java client's ``clientId``/``clientSecret`` JAAS
options or ``sasl.oauthbearer.client.credentials.*``). A JKS store, GSSAPI and unsecured JWTs are refused
by key. Secrets (passwords, keys, tokens) have no repr and never reach a message: :meth:`Security.scrub`
takes them out of any text built from a broker's answer.
"""

from __future__ import annotations

import os
import re
import secrets
import ssl
import tempfile
from dataclasses import dataclass, field
from functools import cached_property

from .oauth import OAuthClient

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
_LOGIN_MODULES = {"PLAIN": "PlainLoginModule", "SCRAM-SHA-256": "ScramLoginModule",
                  "SCRAM-SHA-512": "ScramLoginModule", "OAUTHBEARER": "OAuthBearerLoginModule"}
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')
# Keys whose values are secrets: shown nowhere (targets' info, reports, messages).
SECRET_KEYS = frozenset({
    "sasl.password", "sasl.jaas.config", "ssl.key.password", "ssl.keystore.password", "ssl.truststore.password",
    "ssl.key.pem", "ssl.keystore.key", "sasl.oauthbearer.client.secret",
    "sasl.oauthbearer.client.credentials.client.secret",
})
JKS_MAGIC = b"\xfe\xed\xfe\xed"


class SecurityConfigError(ValueError):
    """A client config the raw client cannot honour; the message names the key (never its secret value)."""


@dataclass(frozen=True)
class ClientCertificate:
    """The certificate the client shows a broker that asks for one (mutual TLS), as the user keeps it:
    PEM files, PEM text, or a PKCS#12 keystore. ``origin`` names the key it came from, for messages."""

    origin: str
    certificate_file: str | None = None
    key_file: str | None = None
    certificate_pem: str | None = field(default=None, repr=False)
    key_pem: str | None = field(default=None, repr=False)
    key_password: str | None = field(default=None, repr=False)
    pkcs12_file: str | None = None
    pkcs12_password: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Security:
    """Settings for one broker. Never printed, never recorded (secrets have no repr)."""

    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    tls: bool = False
    tls_ca_file: str | None = None
    tls_verify: bool = True
    tls_check_hostname: bool = True
    sasl_mechanism: str | None = None  # None with a user name: PLAIN
    tls_ca_pem: str | None = field(default=None, repr=False)  # CA certificates as PEM text
    tls_ca_folder: str | None = None
    tls_client: ClientCertificate | None = None
    oauth: OAuthClient | None = None  # SASL/OAUTHBEARER: where its tokens come from

    @property
    def mechanism(self) -> str | None:
        """The SASL mechanism to authenticate with, or None for no SASL."""
        if self.sasl_mechanism is not None:
            return self.sasl_mechanism
        return "PLAIN" if self.sasl_username is not None else None

    def secrets(self) -> list[str]:
        """Every secret value these settings hold (for :meth:`scrub`)."""
        values = [self.sasl_password]
        if self.tls_client is not None:
            values += [self.tls_client.key_password, self.tls_client.pkcs12_password, self.tls_client.key_pem]
        if self.oauth is not None:
            values += self.oauth.secrets()
        return [value for value in values if value]

    def scrub(self, text: str) -> str:
        """``text`` with any secret of these settings replaced (broker messages are not trusted to leave them out)."""
        for value in self.secrets():
            text = text.replace(value, "<redacted>")
        return text

    # ------------------------------------------------------------------------ TLS
    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context (made once: files are read when first needed), or None without TLS.
        A file that cannot be read or a wrong password raises SecurityConfigError naming the key."""
        return self._context if self.tls else None

    def check(self) -> None:
        """Reads every file and password now, so a bad setting is an error before anything connects."""
        self.ssl_context()

    @cached_property
    def _context(self) -> ssl.SSLContext:
        context = ClientContext(ssl.PROTOCOL_TLS_CLIENT)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.tls_ca_file or self.tls_ca_folder or self.tls_ca_pem:
            origin = "ssl.ca.location"
            try:
                if self.tls_ca_file:
                    _load_trust_file(context, self.tls_ca_file)
                if self.tls_ca_folder:
                    context.load_verify_locations(capath=self.tls_ca_folder)
                if self.tls_ca_pem:
                    origin = "ssl.ca.pem"
                    context.load_verify_locations(cadata=self.tls_ca_pem)
            except SecurityConfigError:
                raise
            except (OSError, ssl.SSLError, ValueError) as error:
                raise SecurityConfigError(f"{origin}: cannot read the CA certificates: {_reason(error)}") from None
        else:
            context.load_default_certs()
        if self.tls_client is not None:
            _load_client_certificate(context, self.tls_client)
            context.client_certificate = True  # read by the diagnosis of a refused handshake
        context.check_hostname = self.tls_verify and self.tls_check_hostname
        if not self.tls_verify:
            context.verify_mode = ssl.CERT_NONE
        return context

    # ------------------------------------------------------------------------ reading a client config
    @classmethod
    def from_client_config(cls, settings: dict[str, str]) -> "Security":
        """The security of a Kafka client properties file (``security.protocol``, ``ssl.*``, ``sasl.*``); :class:`SecurityConfigError` names the key that is wrong."""
        protocol = settings.get("security.protocol", "PLAINTEXT").upper()
        if protocol not in PROTOCOLS:
            raise SecurityConfigError(f"security.protocol: {protocol!r} is not one of {', '.join(PROTOCOLS)}")
        username = password = mechanism = oauth = None
        if protocol.startswith("SASL_"):
            mechanism = (settings.get("sasl.mechanism") or settings.get("sasl.mechanisms") or "PLAIN").upper()
            if mechanism not in MECHANISMS:
                raise SecurityConfigError(f"sasl.mechanism: the raw client speaks {', '.join(MECHANISMS)}, "
                                          f"not {mechanism}")
            if mechanism == "OAUTHBEARER":
                oauth = _oauth(settings)
            else:
                username, password = _credentials(settings, mechanism)
        tls = protocol.endswith("SSL")
        ca_file, ca_folder, ca_pem = _trust(settings) if tls else (None, None, None)
        return cls(
            sasl_username=username, sasl_password=password, sasl_mechanism=mechanism, tls=tls, oauth=oauth,
            tls_ca_file=ca_file, tls_ca_folder=ca_folder, tls_ca_pem=ca_pem,
            tls_client=_client_certificate(settings) if tls else None,
            tls_verify=_flag(settings, "enable.ssl.certificate.verification", True),
            tls_check_hostname=_endpoint_check(settings),
        )


def _jaas_options(settings: dict[str, str], mechanism: str) -> dict[str, str]:
    """The options of the JAAS line, which must name the mechanism's login module."""
    jaas = settings.get("sasl.jaas.config", "")
    module = _LOGIN_MODULES[mechanism]
    if jaas and module not in jaas:
        found = re.search(r"(\w+LoginModule)", jaas)
        raise SecurityConfigError(f"sasl.jaas.config: SASL/{mechanism} (sasl.mechanism) needs the {module}, not "
                                  f"{found.group(1) if found else 'what is given'}")
    return {name: (quoted if quoted or not bare else bare).replace('\\"', '"')
            for name, quoted, bare in _JAAS_OPTION.findall(jaas)}


def _oauth(settings: dict[str, str]) -> OAuthClient:
    method = settings.get("sasl.oauthbearer.method", "oidc").lower()
    if method != "oidc":
        raise SecurityConfigError(f"sasl.oauthbearer.method: the raw client gets tokens from a token endpoint "
                                  f"(oidc), not {method!r}")
    return _oauth_client(settings, _jaas_options(settings, "OAUTHBEARER"), settings.get("ssl.ca.location"))


def _oauth_client(settings: dict[str, str], jaas_options: dict[str, str], ca_file: str | None) -> OAuthClient:
    """librdkafka's keys (``sasl.oauthbearer.method=oidc``, ``sasl.oauthbearer.client.id``/``.client.secret``,
    ``sasl.oauthbearer.token.endpoint.url``, ``sasl.oauthbearer.scope``, ``sasl.oauthbearer.extensions``) or the
    Java client's (``sasl.oauthbearer.token.endpoint.url``, ``sasl.oauthbearer.client.credentials.client.id``
    and ``.client.secret``, or ``clientId``/``clientSecret``/``scope`` in the JAAS line)."""
    endpoint = settings.get("sasl.oauthbearer.token.endpoint.url")
    if not endpoint or not endpoint.startswith(("http://", "https://")):
        raise SecurityConfigError("sasl.oauthbearer.token.endpoint.url: SASL/OAUTHBEARER needs an http(s) token "
                                  "endpoint (the client credentials grant)")
    client_id = (settings.get("sasl.oauthbearer.client.id") or settings.get("sasl.oauthbearer.client.credentials.client.id")
                 or jaas_options.get("clientId"))
    secret = (settings.get("sasl.oauthbearer.client.secret")
              or settings.get("sasl.oauthbearer.client.credentials.client.secret") or jaas_options.get("clientSecret"))
    if not client_id or secret is None:
        raise SecurityConfigError("sasl.oauthbearer.client.id: SASL/OAUTHBEARER needs a client id and secret "
                                  "(sasl.oauthbearer.client.id and .client.secret, or clientId and clientSecret "
                                  "in sasl.jaas.config)")
    extensions = {}
    for pair in filter(None, (settings.get("sasl.oauthbearer.extensions") or "").split(",")):
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise SecurityConfigError(f"sasl.oauthbearer.extensions: expected key=value pairs, not {pair!r}")
        extensions[key.strip()] = value.strip()
    extensions.update({key.removeprefix("extension_"): value for key, value in jaas_options.items()
                       if key.startswith("extension_")})
    return OAuthClient(endpoint, client_id, secret, settings.get("sasl.oauthbearer.scope") or jaas_options.get("scope"),
                       extensions, settings.get("https.ca.location") or ca_file)


def _credentials(settings: dict[str, str], mechanism: str) -> tuple[str, str]:
    if "sasl.username" in settings:
        return settings["sasl.username"], settings.get("sasl.password", "")
    module = _LOGIN_MODULES[mechanism]
    options = _jaas_options(settings, mechanism)
    if "username" not in options:
        raise SecurityConfigError(f"sasl.username (or a {module} sasl.jaas.config) is needed for SASL/{mechanism}")
    return options["username"], options.get("password", "")


def _trust(settings: dict[str, str]) -> tuple[str | None, str | None, str | None]:
    """(CA file, CA folder, CA PEM text) from librdkafka's or the Java client's keys."""
    if "ssl.ca.location" in settings:
        location = settings["ssl.ca.location"]
        if location.lower() == "probe":  # librdkafka: the system's CA locations
            return None, None, None
        return (None, location, None) if os.path.isdir(location) else (location, None, None)
    if "ssl.ca.pem" in settings:
        return None, None, settings["ssl.ca.pem"]
    store_type = settings.get("ssl.truststore.type")
    if "ssl.truststore.certificates" in settings:
        return None, None, settings["ssl.truststore.certificates"]
    if "ssl.truststore.location" in settings:
        location = settings["ssl.truststore.location"]
        kind = _store_type("ssl.truststore", location, store_type)
        if kind == "PKCS12":
            return None, None, _pkcs12_trust(location, settings.get("ssl.truststore.password"))
        return location, None, None
    return None, None, None


def _client_certificate(settings: dict[str, str]) -> ClientCertificate | None:
    key_password = settings.get("ssl.key.password") or None
    if "ssl.certificate.location" in settings or "ssl.key.location" in settings:
        if "ssl.certificate.location" not in settings or "ssl.key.location" not in settings:
            missing = "ssl.key.location" if "ssl.certificate.location" in settings else "ssl.certificate.location"
            raise SecurityConfigError(f"{missing}: a client certificate needs both ssl.certificate.location "
                                      "and ssl.key.location")
        return ClientCertificate("ssl.certificate.location", certificate_file=settings["ssl.certificate.location"],
                                 key_file=settings["ssl.key.location"], key_password=key_password)
    if "ssl.certificate.pem" in settings or "ssl.key.pem" in settings:
        if "ssl.certificate.pem" not in settings or "ssl.key.pem" not in settings:
            raise SecurityConfigError("ssl.certificate.pem: a client certificate needs both ssl.certificate.pem "
                                      "and ssl.key.pem")
        return ClientCertificate("ssl.certificate.pem", certificate_pem=settings["ssl.certificate.pem"],
                                 key_pem=settings["ssl.key.pem"], key_password=key_password)
    if "ssl.keystore.certificate.chain" in settings or "ssl.keystore.key" in settings:
        if "ssl.keystore.certificate.chain" not in settings or "ssl.keystore.key" not in settings:
            raise SecurityConfigError("ssl.keystore.key: a PEM keystore given inline needs both "
                                      "ssl.keystore.certificate.chain and ssl.keystore.key")
        return ClientCertificate("ssl.keystore.key", certificate_pem=settings["ssl.keystore.certificate.chain"],
                                 key_pem=settings["ssl.keystore.key"], key_password=key_password)
    if "ssl.keystore.location" in settings:
        location = settings["ssl.keystore.location"]
        if _store_type("ssl.keystore", location, settings.get("ssl.keystore.type")) == "PEM":
            # the Java client's PEM keystore: the key and the certificate chain in one file
            return ClientCertificate("ssl.keystore.location", certificate_file=location, key_file=location,
                                     key_password=key_password)
        return ClientCertificate("ssl.keystore.location", pkcs12_file=location,
                                 pkcs12_password=settings.get("ssl.keystore.password") or None)
    return None


def _store_type(prefix: str, location: str, declared: str | None) -> str:
    """PEM or PKCS12: as declared, else as the file's first bytes say (librdkafka's keystore is PKCS#12,
    the Java client's default type is JKS, and a user's file is whichever it is)."""
    kind = (declared or "").upper()
    if not kind:
        try:
            with open(location, "rb") as store:
                head = store.read(64)
        except OSError as error:
            raise SecurityConfigError(f"{prefix}.location: cannot read {location}: {_reason(error)}") from None
        kind = "JKS" if head.startswith(JKS_MAGIC) else "PEM" if b"-----BEGIN" in head else "PKCS12"
    if kind not in ("PEM", "PKCS12"):
        raise SecurityConfigError(f"{prefix}.location: a {kind} store cannot be read; use a PEM or PKCS12 one "
                                  f"({prefix}.type=PEM or PKCS12; keytool -importkeystore converts a JKS store)")
    return kind


def _endpoint_check(settings: dict[str, str]) -> bool:
    value = settings.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    if value not in ("https", "", "none"):
        raise SecurityConfigError(f"ssl.endpoint.identification.algorithm: expected https, none or nothing, "
                                  f"not {value!r}")
    return value == "https"


def _flag(settings: dict[str, str], key: str, default: bool) -> bool:
    value = settings.get(key)
    if value is None:
        return default
    if value.lower() not in ("true", "false"):
        raise SecurityConfigError(f"{key}: expected true or false, not {value!r}")
    return value.lower() == "true"


# ---------------------------------------------------------------------------- reading stores
def _load_trust_file(context: ssl.SSLContext, path: str) -> None:
    if not os.path.isfile(path):
        raise SecurityConfigError(f"ssl.ca.location: no file at {path}")
    context.load_verify_locations(cafile=path)


def _pkcs12(path: str, password: str | None, key: str):
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        with open(path, "rb") as store:
            data = store.read()
    except OSError as error:
        raise SecurityConfigError(f"{key}.location: cannot read {path}: {_reason(error)}") from None
    try:
        return pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    except (ValueError, TypeError):
        raise SecurityConfigError(f"{key}.location: {path} does not open as PKCS#12 with the given "
                                  f"{key}.password") from None


def _pkcs12_trust(path: str, password: str | None) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding

    _, certificate, others = _pkcs12(path, password, "ssl.truststore")
    found = [item for item in [certificate, *others] if item is not None]
    if not found:
        raise SecurityConfigError(f"ssl.truststore.location: {path} holds no certificate")
    return "".join(item.public_bytes(Encoding.PEM).decode() for item in found)


class ClientContext(ssl.SSLContext):
    """A client's TLS context that remembers whether it shows a certificate (the diagnosis of a refused handshake
    reads it: brokers refuse a missing certificate and an untrusted one alike)."""

    client_certificate = False


def _load_client_certificate(context: ssl.SSLContext, client: ClientCertificate) -> None:
    """``load_cert_chain`` reads files only: PEM text and PKCS#12 go through a private temporary file
    whose key is encrypted with a one-time password, deleted at once."""
    from cryptography.hazmat.primitives import serialization

    if client.certificate_file is not None:
        for path in {client.certificate_file, client.key_file or client.certificate_file}:
            if not os.path.isfile(path):
                raise SecurityConfigError(f"{client.origin}: no file at {path}")
        try:
            context.load_cert_chain(client.certificate_file, client.key_file, password=client.key_password or "")
        except (ssl.SSLError, ValueError, OSError) as error:
            raise SecurityConfigError(_key_problem(client, error)) from None
        return
    if client.pkcs12_file is not None:
        key, certificate, others = _pkcs12(client.pkcs12_file, client.pkcs12_password, "ssl.keystore")
        if key is None or certificate is None:
            raise SecurityConfigError(f"ssl.keystore.location: {client.pkcs12_file} holds no key and certificate")
        chain = [certificate, *others]
    else:
        if client.key_pem is None or client.certificate_pem is None:
            raise SecurityConfigError(f"{client.origin}: a client certificate needs its PEM and its key's PEM")
        try:
            key = serialization.load_pem_private_key(
                client.key_pem.encode(), client.key_password.encode() if client.key_password else None)
        except (ValueError, TypeError) as error:
            raise SecurityConfigError(_key_problem(client, error)) from None
        from cryptography import x509

        try:
            chain = x509.load_pem_x509_certificates(client.certificate_pem.encode())
        except ValueError:
            raise SecurityConfigError(f"{client.origin}: the certificate is not PEM") from None
    once = secrets.token_hex(16)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.BestAvailableEncryption(once.encode()))
    pem += b"".join(item.public_bytes(serialization.Encoding.PEM) for item in chain)
    with tempfile.TemporaryDirectory(prefix="conformance-tls-") as folder:  # mode 0700
        path = os.path.join(folder, "client.pem")
        with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as file:
            file.write(pem)
        try:
            context.load_cert_chain(path, password=once)
        except ssl.SSLError as error:
            raise SecurityConfigError(_key_problem(client, error)) from None


def _key_problem(client: ClientCertificate, error: Exception) -> str:
    password_key = "ssl.key.password"
    return (f"{client.origin}: the client key cannot be used ({_reason(error)}): a wrong or missing "
            f"{password_key}, or a key that does not match the certificate")


def _reason(error: Exception) -> str:
    if isinstance(error, ssl.SSLError) and error.reason:
        return error.reason.replace("_", " ").lower()
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error).splitlines()[0] if str(error) else type(error).__name__
