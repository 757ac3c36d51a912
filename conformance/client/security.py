"""How the raw client reaches a secured broker: TLS and SASL/PLAIN, from a Kafka client config.

Users already keep these settings in a client properties file (Kafka's ``--command-config``,
librdkafka's configuration), so the harness reads the same keys rather than inventing its own:
librdkafka's (``sasl.username``, ``ssl.ca.location``) and the Java client's (``sasl.jaas.config``,
a PEM ``ssl.truststore.location``).
"""

from __future__ import annotations

import re
import ssl
from dataclasses import dataclass, field

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


class SecurityConfigError(ValueError):
    """A client config the raw client cannot honour; the message names the key."""


@dataclass(frozen=True)
class Security:
    """Settings for one broker. Never printed, never recorded (the password has no repr)."""

    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    tls: bool = False
    tls_ca_file: str | None = None
    tls_verify: bool = True
    tls_check_hostname: bool = True

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.tls:
            return None
        context = ssl.create_default_context(cafile=self.tls_ca_file)
        context.check_hostname = self.tls_verify and self.tls_check_hostname
        if not self.tls_verify:
            context.verify_mode = ssl.CERT_NONE
        return context

    @classmethod
    def from_client_config(cls, settings: dict[str, str]) -> "Security":
        protocol = settings.get("security.protocol", "PLAINTEXT").upper()
        if protocol not in PROTOCOLS:
            raise SecurityConfigError(f"security.protocol: {protocol!r} is not one of {', '.join(PROTOCOLS)}")
        username = password = None
        if protocol.startswith("SASL_"):
            mechanism = (settings.get("sasl.mechanism") or settings.get("sasl.mechanisms") or "PLAIN").upper()
            if mechanism != "PLAIN":
                raise SecurityConfigError(f"sasl.mechanism: the raw client speaks PLAIN only, not {mechanism}")
            username, password = _plain_credentials(settings)
        return cls(
            sasl_username=username, sasl_password=password, tls=protocol.endswith("SSL"),
            tls_ca_file=_ca_file(settings),
            tls_verify=_flag(settings, "enable.ssl.certificate.verification", True),
            tls_check_hostname=settings.get("ssl.endpoint.identification.algorithm", "https").lower() == "https",
        )


def _plain_credentials(settings: dict[str, str]) -> tuple[str, str]:
    if "sasl.username" in settings:
        return settings["sasl.username"], settings.get("sasl.password", "")
    jaas = settings.get("sasl.jaas.config", "")
    options = {name: value.replace('\\"', '"') for name, value in _JAAS_OPTION.findall(jaas)}
    if "PlainLoginModule" not in jaas or "username" not in options:
        raise SecurityConfigError("sasl.username (or a PlainLoginModule sasl.jaas.config) is needed for SASL/PLAIN")
    return options["username"], options.get("password", "")


def _ca_file(settings: dict[str, str]) -> str | None:
    if "ssl.ca.location" in settings:
        return settings["ssl.ca.location"]
    if "ssl.truststore.location" in settings:
        if settings.get("ssl.truststore.type", "JKS").upper() != "PEM":
            raise SecurityConfigError("ssl.truststore.location: only a PEM truststore can be read "
                                      "(set ssl.truststore.type=PEM, or ssl.ca.location)")
        return settings["ssl.truststore.location"]
    return None


def _flag(settings: dict[str, str], key: str, default: bool) -> bool:
    value = settings.get(key)
    if value is None:
        return default
    if value.lower() not in ("true", "false"):
        raise SecurityConfigError(f"{key}: expected true or false, not {value!r}")
    return value.lower() == "true"
