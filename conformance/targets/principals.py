"""The principals authorization cases run as (``as: guest``, ``as: nobody``) on a broker the harness does
not provision: ``--principal guest=guest.properties --principal nobody=nobody.properties``, or one file
that maps them (``--principal principals.yaml``).

Each principal has a client config of its own (the same keys as ``--client-config``,
:mod:`conformance.client.security`) and a Kafka principal name (``User:alice``), which the harness
grants rights to with CreateAcls. That name is the ``principal`` key of the config, or, for SASL/PLAIN
and SCRAM, ``User:`` and the SASL user name; a client certificate's or an OAUTHBEARER token's principal
depends on the broker's mapping rules, so those configs must say it.

A mapping file is YAML (``NAME: FILE`` or ``NAME: {settings...}``, optionally under ``principals:``) or
properties (``NAME=FILE`` lines, or ``NAME.KEY=VALUE`` settings); a FILE is relative to the mapping file.
Every problem is one line naming the file and key, never a secret's value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..client.security import Security, SecurityConfigError

PRINCIPAL_KEY = "principal"
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
KAFKA_PRINCIPAL = re.compile(r"[A-Za-z][A-Za-z0-9_]*:\S.*")
_CLIENT_PREFIXES = ("security.", "sasl.", "ssl.", "bootstrap.", "client.")


class PrincipalConfigError(ValueError):
    """A ``--principal`` the harness cannot use; the message is one line naming the file and what is missing."""


@dataclass(frozen=True)
class Principal:
    """One principal of the authorization cases: its name in suites, its Kafka principal, how to connect."""

    name: str
    kafka_principal: str
    source: str  # the file it came from, for messages
    settings: dict = field(repr=False, compare=False, default_factory=dict)
    security: Security = field(repr=False, compare=False, default_factory=Security)


def read_principals(options: list[str], base: Path | None = None) -> dict[str, Principal]:
    """Every ``--principal`` option (``NAME=FILE`` or a mapping file) read and checked, by name."""
    base = base or Path.cwd()
    found: dict[str, Principal] = {}
    for option in options:
        for principal in read_option(option, base):
            if principal.name in found:
                raise PrincipalConfigError(f"--principal {principal.name} is given twice "
                                           f"({found[principal.name].source} and {principal.source})")
            found[principal.name] = principal
    by_kafka: dict[str, str] = {}
    for principal in found.values():
        other = by_kafka.setdefault(principal.kafka_principal, principal.name)
        if other != principal.name:
            raise PrincipalConfigError(f"--principal {other} and {principal.name} are both "
                                       f"{principal.kafka_principal}: the authorization cases need a principal each")
    return found


def read_option(option: str, base: Path) -> list[Principal]:
    name, separator, path = option.partition("=")
    if separator and NAME.fullmatch(name) and not (base / option).exists():
        if not path:
            raise PrincipalConfigError(f"--principal {name}=: name the principal's client config file")
        return [principal_from(name, _read_properties(base / path, f"--principal {name}={path}"), path)]
    if separator and not (base / option).exists():
        raise PrincipalConfigError(f"--principal {option.split('=', 1)[0]!r}=...: a principal's name is letters, "
                                   "digits, '_' and '-' (e.g. --principal guest=guest.properties)")
    return read_mapping(base / option, option)


def read_mapping(file: Path, shown: str) -> list[Principal]:
    """The principals a YAML or properties mapping file names."""
    if not file.is_file():
        raise PrincipalConfigError(f"--principal {shown}: no such file (give NAME=FILE, or a file mapping names "
                                   "to client configs)")
    if file.suffix.lower() in (".yaml", ".yml"):
        entries = _yaml_mapping(file, shown)
    else:
        entries = _properties_mapping(file, shown)
    if not entries:
        raise PrincipalConfigError(f"{shown}: names no principal (expected e.g. guest: guest.properties)")
    principals = []
    for name, entry in entries.items():
        if not NAME.fullmatch(str(name)):
            raise PrincipalConfigError(f"{shown}: {name!r} is not a principal's name (letters, digits, '_', '-')")
        if isinstance(entry, str):
            path = file.parent / entry
            source = f"{shown}: {name}: {entry}"
            principals.append(principal_from(str(name), _read_properties(path, f"--principal {source}"), source))
        elif isinstance(entry, dict):
            settings = {str(key): _text(value) for key, value in entry.items()}
            principals.append(principal_from(str(name), settings, f"{shown}: {name}"))
        else:
            raise PrincipalConfigError(f"{shown}: {name}: expected a client config file or its settings")
    return principals


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _yaml_mapping(file: Path, shown: str) -> dict:
    import yaml

    try:
        loaded = yaml.safe_load(file.read_text())
    except (OSError, UnicodeDecodeError) as error:
        raise PrincipalConfigError(f"{shown}: cannot read it: {error.__class__.__name__}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise PrincipalConfigError(f"{shown}: not valid YAML{where}") from None
    if isinstance(loaded, dict) and set(loaded) == {"principals"}:
        loaded = loaded["principals"]
    if not isinstance(loaded, dict):
        raise PrincipalConfigError(f"{shown}: expected a mapping of principal names to client configs")
    return loaded


def _properties_mapping(file: Path, shown: str) -> dict:
    settings = _read_properties(file, f"--principal {shown}")
    if any(key.startswith(_CLIENT_PREFIXES) for key in settings) or PRINCIPAL_KEY in settings:
        raise PrincipalConfigError(f"--principal {shown}: this is a client config, not a mapping: name the principal "
                                   f"it is for (--principal guest={shown})")
    entries: dict[str, object] = {}
    for key, value in settings.items():
        name, dot, setting = key.partition(".")
        if dot:
            entry = entries.setdefault(name, {})
            if not isinstance(entry, dict):
                raise PrincipalConfigError(f"{shown}: {name} has both a file and settings")
            entry[setting] = value
        else:
            if name in entries:
                raise PrincipalConfigError(f"{shown}: {name} has both a file and settings")
            entries[name] = value
    return entries


def _read_properties(file: Path, shown: str) -> dict[str, str]:
    from .properties import read_properties

    if not file.is_file():
        raise PrincipalConfigError(f"{shown}: no such file")
    try:
        return read_properties(file)
    except (OSError, UnicodeDecodeError) as error:
        raise PrincipalConfigError(f"{shown}: cannot read it: {error.__class__.__name__}") from None
    except ValueError as error:  # names the line, never its value: it may hold a password
        line = re.search(r":(\d+): expected", str(error))
        raise PrincipalConfigError(f"{shown}: line {line.group(1) if line else '?'}: expected key=value") from None


def principal_from(name: str, settings: dict[str, str], source: str) -> Principal:
    """A principal from its client config: the connection settings checked now, the Kafka principal found."""
    try:
        security = Security.from_client_config(settings)
        security.check()
    except SecurityConfigError as error:
        raise PrincipalConfigError(f"--principal {name} ({source}): {error}") from None
    return Principal(name, kafka_principal_of(name, settings, security, source), source, dict(settings), security)


def kafka_principal_of(name: str, settings: dict[str, str], security: Security, source: str) -> str:
    given = settings.get(PRINCIPAL_KEY, "").strip()
    if given:
        if not KAFKA_PRINCIPAL.fullmatch(given):
            raise PrincipalConfigError(f"--principal {name} ({source}): principal must be TYPE:NAME as the broker's "
                                       f"ACLs name it (e.g. principal=User:{name}), not {given!r}")
        return given
    mechanism = security.mechanism
    if mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512") and security.sasl_username:
        return f"User:{security.sasl_username}"
    if mechanism == "OAUTHBEARER":
        why = "an OAUTHBEARER token's principal is the broker's reading of its claims"
    elif security.tls_client is not None:
        why = "a client certificate's principal depends on the broker's ssl.principal.mapping.rules"
    else:
        why = "without SASL or a client certificate the broker sees User:ANONYMOUS, the same for every client"
    raise PrincipalConfigError(f"--principal {name} ({source}): add principal=User:... (the Kafka principal the "
                               f"broker's ACLs name it by): {why}")
