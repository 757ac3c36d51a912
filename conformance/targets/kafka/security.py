"""A secured listener for the Kafka the harness provisions: ``kafka,security=SASL_SSL,sasl.mechanism=SCRAM-SHA-512``,
``kafka,security=SASL_PLAINTEXT,sasl.mechanism=SCRAM-SHA-256``, ``kafka,security=SSL,ssl.client.auth=required``,
``kafka,security=SASL_SSL,sasl.mechanism=OAUTHBEARER`` (the broker validates JWTs against the JWKS of an OIDC
provider the target starts on 127.0.0.1, :mod:`conformance.targets.oidc`; clients get them by the client
credentials grant, the client id being the principal).

The harness makes what a cluster's operator would: a CA and the broker's certificate for 127.0.0.1
and localhost (PEM, with ``cryptography``), a client certificate per user where the listener asks for
one (the principal is the certificate's CN, by ``ssl.principal.mapping.rules``), and SCRAM credentials
stored at format time (``kafka-storage format --add-scram``). Users are the harness's super user
``admin`` and the principals authorization cases use (``guest``, ``nobody``), each with a random password.

The harness then connects through that listener like any client: the target's ``bootstrap`` is the
secured listener, and its dir holds ``client.properties`` (librdkafka's keys, what ``--client-config``
takes for the same checks as ``HOST:PORT``) and ``client-java.properties`` (the Java client's keys:
``sasl.jaas.config``, PKCS12 stores). A PLAINTEXT listener stays for the brokers' own traffic and the
start-up probe. SASL listeners end sessions after ``connections.max.reauth.ms`` (KIP-368), so every run
also checks that the client re-authenticates.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from ...client.oauth import OAuthClient
from ...client.security import ClientCertificate, Security
from ..certificates import Authority, Issued
from ..oidc import TokenProvider

OAUTH = "org.apache.kafka.common.security.oauthbearer."

SECURITY_OPTIONS = ("security", "sasl.mechanism", "ssl.client.auth")
PROTOCOLS = ("SSL", "SASL_SSL", "SASL_PLAINTEXT")
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN", "OAUTHBEARER")
CLIENT_AUTH = ("none", "requested", "required")
SUPER_USER = "admin"
USERS = (SUPER_USER, "guest", "nobody")
REAUTHENTICATE_MS = 30_000  # KIP-368 sessions on SASL listeners: runs of a few minutes re-authenticate often
HOSTS = ("127.0.0.1", "localhost")
PRINCIPAL_RULES = "RULE:^CN=([^,]+)$/$1/,DEFAULT"  # User:CN=guest -> User:guest, as the ACL cases grant


@dataclass
class SecuredListener:
    protocol: str
    mechanism: str | None = None
    client_auth: str = "none"
    passwords: dict[str, str] = field(default_factory=lambda: {user: secrets.token_hex(12) for user in USERS},
                                      repr=False)
    folder: Path | None = None
    authority: Authority | None = None
    certificates: dict[str, Issued] = field(default_factory=dict)
    keystore: Path | None = None  # the super user's PKCS#12, for the Java client's properties
    _made: dict[str, Security] = field(default_factory=dict, repr=False)  # one TLS context per user, read once
    provider: TokenProvider | None = None  # OAUTHBEARER: the OIDC provider whose JWTs the broker validates

    @classmethod
    def from_options(cls, spec: str, options: dict[str, str]) -> "SecuredListener | None":
        """The listener a spec's ``security``, ``sasl.mechanism`` and ``ssl.client.auth`` describe (None: PLAINTEXT)."""
        protocol = options.get("security", "PLAINTEXT").upper()
        if protocol == "PLAINTEXT":
            if set(options) & {"sasl.mechanism", "ssl.client.auth"}:
                raise ValueError(f"{spec!r}: sasl.mechanism and ssl.client.auth need security=SSL, SASL_SSL or "
                                 "SASL_PLAINTEXT")
            return None
        if protocol not in PROTOCOLS:
            raise ValueError(f"{spec!r}: security takes {', '.join(PROTOCOLS)}, not {options['security']!r}")
        mechanism = None
        if protocol.startswith("SASL_"):
            mechanism = options.get("sasl.mechanism", "SCRAM-SHA-512").upper()
            if mechanism not in MECHANISMS:
                raise ValueError(f"{spec!r}: sasl.mechanism takes {', '.join(MECHANISMS)}, not {mechanism!r}")
        elif "sasl.mechanism" in options:
            raise ValueError(f"{spec!r}: sasl.mechanism needs security=SASL_SSL or SASL_PLAINTEXT")
        client_auth = options.get("ssl.client.auth", "none").lower()
        if client_auth not in CLIENT_AUTH:
            raise ValueError(f"{spec!r}: ssl.client.auth takes {', '.join(CLIENT_AUTH)}, not {client_auth!r}")
        if client_auth != "none" and not protocol.endswith("SSL"):
            raise ValueError(f"{spec!r}: ssl.client.auth needs security=SSL or SASL_SSL")
        return cls(protocol, mechanism, client_auth)

    # ------------------------------------------------------------------------ what it is
    @property
    def tls(self) -> bool:
        return self.protocol.endswith("SSL")

    @property
    def certificate_users(self) -> bool:
        """Principals are told apart by their client certificates (mutual TLS without SASL)."""
        return self.mechanism is None and self.client_auth != "none"

    @property
    def carries_principals(self) -> bool:
        """The authorization cases' principals connect here (else on a SASL/PLAIN listener of their own)."""
        return self.mechanism is not None or self.certificate_users

    @property
    def listener(self) -> str:
        return self.protocol.lower()

    def describe(self) -> dict[str, str]:
        shown = {"security.protocol": self.protocol}
        if self.mechanism:
            shown["sasl.mechanism"] = self.mechanism
        if self.tls:
            shown["ssl.client.auth"] = self.client_auth
        return shown

    @property
    def _ca(self) -> Authority:
        """The CA :meth:`prepare` made for a TLS listener."""
        if self.authority is None:
            raise RuntimeError("the listener's certificates are made by prepare(), before the broker starts")
        return self.authority

    @property
    def _oidc(self) -> TokenProvider:
        """The OIDC provider :meth:`prepare` started for an OAUTHBEARER listener."""
        if self.provider is None:
            raise RuntimeError("the OIDC provider is started by prepare(), before the broker starts")
        return self.provider

    # ------------------------------------------------------------------------ making it
    def prepare(self, folder: Path) -> None:
        """Certificates (a CA, the broker's, a client's per user where the listener asks for them)."""
        self.folder = folder
        self._made.clear()
        if self.mechanism == "OAUTHBEARER":
            self.stop()
            self.provider = TokenProvider(self.passwords).start()  # client id = user, secret = password
        if not self.tls:
            return
        folder.mkdir(parents=True, exist_ok=True)
        self.authority = Authority(folder)
        self.certificates["broker"] = self.authority.issue("broker", HOSTS[0], hosts=HOSTS)
        if self.client_auth != "none":
            for user in USERS:  # the super user's key is encrypted: its properties exercise ssl.key.password
                self.certificates[user] = self.authority.issue(
                    user, user, key_password=self.passwords[user] if user == SUPER_USER else None)
            self.keystore = self.authority.pkcs12(self.certificates[SUPER_USER], self.passwords[SUPER_USER])

    def stop(self) -> None:
        if self.provider is not None:
            self.provider.stop()
            self.provider = None

    def jvm_properties(self) -> list[str]:
        """System properties the broker's JVM needs (Kafka 4 reads no OAuth URL it was not allowed)."""
        if self.provider is None:
            return []
        return [f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={self._oidc.jwks_endpoint},"
                f"{self._oidc.token_endpoint}"]

    def broker_settings(self) -> dict[str, str]:
        prefix = f"listener.name.{self.listener}."
        settings = {"super.users": f"User:ANONYMOUS;User:{SUPER_USER}"}
        if self.tls:
            settings.update({
                prefix + "ssl.keystore.type": "PEM",
                prefix + "ssl.keystore.location": str(self.certificates["broker"].bundle),
                prefix + "ssl.client.auth": self.client_auth,
            })
            if self.client_auth != "none":
                settings.update({prefix + "ssl.truststore.type": "PEM",
                                 prefix + "ssl.truststore.location": str(self._ca.path),
                                 "ssl.principal.mapping.rules": PRINCIPAL_RULES})
        if self.mechanism:
            mechanism = self.mechanism.lower()
            settings[prefix + "sasl.enabled.mechanisms"] = self.mechanism
            if self.mechanism == "PLAIN":
                jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
                        + " ".join(f'user_{user}="{password}"' for user, password in self.passwords.items()) + ";")
            elif self.mechanism == "OAUTHBEARER":
                jaas = OAUTH + "OAuthBearerLoginModule required;"
                settings.update({
                    f"{prefix}oauthbearer.sasl.server.callback.handler.class": OAUTH + "OAuthBearerValidatorCallbackHandler",
                    "sasl.oauthbearer.jwks.endpoint.url": self._oidc.jwks_endpoint,
                    "sasl.oauthbearer.expected.issuer": self._oidc.issuer,
                    "sasl.oauthbearer.expected.audience": self._oidc.audience,
                })
            else:
                jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            settings[f"{prefix}{mechanism}.sasl.jaas.config"] = jaas
            settings[f"{prefix}{mechanism}.connections.max.reauth.ms"] = str(REAUTHENTICATE_MS)
        return settings

    def format_arguments(self) -> list[str]:
        """``--add-scram`` for every user: the credentials are in the metadata log from the first start."""
        if not self.mechanism or not self.mechanism.startswith("SCRAM"):
            return []
        return [argument for user, password in self.passwords.items()
                for argument in ("--add-scram", f"{self.mechanism}=[name={user},password={password}]")]

    # ------------------------------------------------------------------------ connecting
    def security(self, user: str = SUPER_USER) -> Security:
        if user not in self._made:
            self._made[user] = self._security(user)
        return self._made[user]

    def _security(self, user: str) -> Security:
        client = None
        if self.certificate_users:
            issued = self.certificates[user]
            client = ClientCertificate("ssl.certificate.location", certificate_file=str(issued.certificate),
                                       key_file=str(issued.key), key_password=issued.key_password)
        oauth = None
        if self.mechanism == "OAUTHBEARER":
            oauth = OAuthClient(self._oidc.token_endpoint, user, self.passwords[user])
        named = self.mechanism is not None and oauth is None
        return Security(
            sasl_username=user if named else None, oauth=oauth,
            sasl_password=self.passwords[user] if named else None,
            sasl_mechanism=self.mechanism, tls=self.tls,
            tls_ca_file=str(self._ca.path) if self.tls else None, tls_client=client)

    def client_settings(self, user: str = SUPER_USER) -> dict[str, str]:
        """librdkafka's keys for a user (what ``--client-config`` and confluent-kafka take; for ``guest`` and
        ``nobody``, what ``--principal`` takes, with ``principal=User:...`` where no SASL user name says it)."""
        settings = {"security.protocol": self.protocol}
        if self.mechanism == "OAUTHBEARER":
            settings.update({"sasl.mechanism": self.mechanism, "sasl.oauthbearer.method": "oidc",
                             "sasl.oauthbearer.client.id": user,
                             "sasl.oauthbearer.client.secret": self.passwords[user],
                             "sasl.oauthbearer.token.endpoint.url": self._oidc.token_endpoint})
        elif self.mechanism:
            settings.update({"sasl.mechanism": self.mechanism, "sasl.username": user,
                             "sasl.password": self.passwords[user]})
        if self.tls:
            settings["ssl.ca.location"] = str(self._ca.path)
        if self.certificate_users:
            issued = self.certificates[user]
            settings.update({"ssl.certificate.location": str(issued.certificate), "ssl.key.location": str(issued.key)})
            if issued.key_password:
                settings["ssl.key.password"] = issued.key_password
        if user != SUPER_USER and (self.mechanism == "OAUTHBEARER" or self.certificate_users):
            settings["principal"] = f"User:{user}"  # the CN or client id, as PRINCIPAL_RULES and the JWT's sub say
        return settings

    def java_client_settings(self) -> dict[str, str]:
        """The Java client's keys for the same user: a JAAS line, a PEM truststore, a PKCS12 keystore."""
        settings = {"security.protocol": self.protocol}
        if self.mechanism == "OAUTHBEARER":
            settings.update({"sasl.mechanism": self.mechanism,
                             "sasl.login.callback.handler.class": OAUTH + "OAuthBearerLoginCallbackHandler",
                             "sasl.oauthbearer.token.endpoint.url": self._oidc.token_endpoint,
                             "sasl.jaas.config": f'{OAUTH}OAuthBearerLoginModule required clientId="{SUPER_USER}" '
                                                 f'clientSecret="{self.passwords[SUPER_USER]}";'})
        elif self.mechanism:
            module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if self.mechanism == "PLAIN"
                      else "org.apache.kafka.common.security.scram.ScramLoginModule")
            settings.update({"sasl.mechanism": self.mechanism,
                             "sasl.jaas.config": f'{module} required username="{SUPER_USER}" '
                                                 f'password="{self.passwords[SUPER_USER]}";'})
        if self.tls:
            settings.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": str(self._ca.path)})
        if self.certificate_users:
            settings.update({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(self.keystore),
                             "ssl.keystore.password": self.passwords[SUPER_USER]})
        return settings

    def write_client_properties(self, bootstrap: str) -> tuple[Path, Path]:
        """``client.properties`` (librdkafka's keys) and ``client-java.properties`` in the target's dir, and
        ``client-guest.properties`` and ``client-nobody.properties`` for ``--principal``."""
        assert self.folder is not None
        written = []
        files: list[tuple[str, dict[str, str], str | None]] = [("client.properties", self.client_settings(), None),
                 ("client-java.properties", self.java_client_settings(), None)]
        if self.carries_principals:  # else they connect on a SASL/PLAIN listener of their own
            files += [(f"client-{user}.properties", self.client_settings(user), user) for user in USERS
                      if user != SUPER_USER]
        for name, settings, user in files:
            path = self.folder.parent / name
            if user:
                lines = [f"# {self.protocol} client settings for the principal {user} at {bootstrap}",
                         f"# e.g. conformance run --target {bootstrap} --client-config client.properties "
                         f"--principal {user}={path}"]
            else:
                lines = [f"# {self.protocol} client settings for the harness's super user at {bootstrap}",
                         f"# e.g. conformance run --target {bootstrap} --client-config {path}"]
            lines += [f"{key}={value}" for key, value in settings.items()]
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds a password
            with os.fdopen(descriptor, "w") as file:
                file.write("\n".join(lines) + "\n")
            written.append(path)
        return written[0], written[1]
