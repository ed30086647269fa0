"""Kafka security settings (SASL/SSL) are referenced by name, never written into a definition.

A definition's ``options`` may name a secret as ``${env:NAME}`` (an environment variable of the
job's process) or ``${secret:NAME}`` (a line ``NAME=value`` of the secrets file,
``TIDEMARK_SECRETS_FILE``). Options that carry credentials (:data:`SENSITIVE`) must be such a
reference: a literal password or JAAS line is refused when the definition is validated, so it
never reaches the catalog. References are resolved only in the job's process, when it starts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from jobs.config import Settings
from jobs.kafka.errors import KafkaSetupError

REFERENCE = re.compile(r"\$\{(env|secret):([A-Za-z_][A-Za-z0-9_.-]*)\}")
SECRETS_FILE_ENV = "TIDEMARK_SECRETS_FILE"
SENSITIVE = (
    "sasl.jaas.config", "sasl.password", "ssl.key.password", "ssl.keystore.password",
    "ssl.truststore.password", "ssl.keystore.key", "ssl.keystore.certificate.chain",
    "sasl.oauthbearer.client.secret", "sasl.client.callback.handler.class",
)


def is_sensitive(option: str) -> bool:
    """``kafka.sasl.jaas.config`` and friends (with or without the ``kafka.`` prefix)."""
    name = option.removeprefix("kafka.").lower()
    return name in SENSITIVE or "password" in name or "secret" in name


def check_options(options: Mapping[str, str], field: str) -> list[tuple[str, str]]:
    """Field errors for credentials written inline instead of referenced."""
    errors: list[tuple[str, str]] = []
    for name, value in options.items():
        if is_sensitive(name) and REFERENCE.fullmatch(value.strip()) is None:
            errors.append((
                f"{field}.{name}",
                "holds a credential: reference it as ${env:NAME} or ${secret:NAME} "
                "instead of writing it here",
            ))
    return errors


def read_secrets_file(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            name, value = line.split("=", 1)
            out[name.strip()] = value.strip()
    return out


def resolve_options(options: Mapping[str, str], field: str,
                    env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``options`` with every ``${env:..}`` / ``${secret:..}`` replaced by its value."""
    e = os.environ if env is None else env
    secrets: dict[str, str] | None = None

    def lookup(m: re.Match[str]) -> str:
        nonlocal secrets
        where, name = m.group(1), m.group(2)
        if where == "env":
            if name not in e:
                raise KafkaSetupError(f"the environment variable {name} is not set", field)
            return e[name]
        if secrets is None:
            path = (Settings.from_env().value(SECRETS_FILE_ENV) if env is None
                    else e.get(SECRETS_FILE_ENV))
            if not path or not Path(path).is_file():
                raise KafkaSetupError(
                    f"${{secret:{name}}} needs a secrets file ({SECRETS_FILE_ENV})", field)
            secrets = read_secrets_file(Path(path))
        if name not in secrets:
            raise KafkaSetupError(f"the secrets file has no {name}", field)
        return secrets[name]

    return {k: REFERENCE.sub(lookup, v) for k, v in options.items()}
