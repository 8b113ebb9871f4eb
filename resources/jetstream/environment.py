"""Connection settings from the environment: the same variables the nats CLI reads.

`JetStreamResource.from_env()` builds the resource from these, so pointing the code location,
the `jsl` commands or a Dagster run at another server, user or certificate needs no code
edit. The names are the nats CLI's where it has one (an operator's shell that works for
`nats stream ls` works here), with longer aliases for the TLS files and the NKey seed file:

| Variable | Resource field | Notes |
|---|---|---|
| `NATS_URL` | `servers` | comma-separated; default `nats://127.0.0.1:4222` |
| `NATS_USER`, `NATS_PASSWORD` | `user`, `password` | both or neither |
| `NATS_TOKEN` | `token` | |
| `NATS_NKEY_SEED` | `nkey_seed` | the seed itself, `SU...` |
| `NATS_NKEY` or `NATS_NKEY_FILE` | `nkey_seed_file` | a file holding the seed (nats CLI) |
| `NATS_CREDS` | `creds_file` | decentralised auth `.creds` file |
| `NATS_CA` or `NATS_TLS_CA` | `tls_ca_file` | |
| `NATS_CERT` or `NATS_TLS_CERT` | `tls_cert_file` | client certificate |
| `NATS_KEY` or `NATS_TLS_KEY` | `tls_key_file` | its key |
| `NATS_TLS_HOSTNAME` | `tls_hostname` | name checked against the certificate |
| `NATS_TLS_HANDSHAKE_FIRST` | `tls_handshake_first` | `true`/`false` (`1`/`0`, `yes`/`no`) |

Secrets (the password, the token, the seed, and a URL with credentials in it) become
`dagster.EnvVar`s: Dagster shows the variable's name, never its value, in run configuration,
the UI and metadata, and resolves it only when the run or tick connects. Empty variables
count as unset.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from dagster import EnvVar

from resources.jetstream.errors import InvalidArgumentError


@dataclass(frozen=True)
class EnvironmentVariable:
    """One resource field and the variables that may set it.

    Attributes:
        field: the `JetStreamResource` field.
        names: the variables, the nats CLI's name first.
        secret: pass it as an `EnvVar` so its value never shows in Dagster.
    """

    field: str
    names: tuple[str, ...]
    secret: bool = False


VARIABLES = (
    EnvironmentVariable("servers", ("NATS_URL",)),
    EnvironmentVariable("user", ("NATS_USER",)),
    EnvironmentVariable("password", ("NATS_PASSWORD",), secret=True),
    EnvironmentVariable("token", ("NATS_TOKEN",), secret=True),
    EnvironmentVariable("nkey_seed", ("NATS_NKEY_SEED",), secret=True),
    EnvironmentVariable("nkey_seed_file", ("NATS_NKEY", "NATS_NKEY_FILE")),
    EnvironmentVariable("creds_file", ("NATS_CREDS",)),
    EnvironmentVariable("tls_ca_file", ("NATS_CA", "NATS_TLS_CA")),
    EnvironmentVariable("tls_cert_file", ("NATS_CERT", "NATS_TLS_CERT")),
    EnvironmentVariable("tls_key_file", ("NATS_KEY", "NATS_TLS_KEY")),
    EnvironmentVariable("tls_hostname", ("NATS_TLS_HOSTNAME",)),
    EnvironmentVariable("tls_handshake_first", ("NATS_TLS_HANDSHAKE_FIRST",)),
)

# Every variable that carries an identity or a secret: a caller that starts its own server
# (the demo's embedded one) removes these from a child's environment.
CREDENTIAL_VARIABLES = tuple(
    name for variable in VARIABLES if variable.field != "servers" for name in variable.names
)

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def resource_fields_from_env(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The `JetStreamResource` fields the environment sets (unset fields are left out).

    Args:
        environ: the variables (default: the process environment). A secret is returned as
            `EnvVar(name)`, which reads the process environment when resolved, so pass the
            real environment's values when it is not `os.environ`.

    Raises:
        InvalidArgumentError: two aliases of one setting disagree, or a boolean variable is
            not true/false.
    """
    env = os.environ if environ is None else environ
    fields: dict[str, Any] = {}
    for variable in VARIABLES:
        found = {name: env[name] for name in variable.names if env.get(name, "").strip()}
        if not found:
            continue
        if len(set(found.values())) > 1:
            given = ", ".join(f"{name}={value!r}" for name, value in found.items())
            raise InvalidArgumentError(
                f"{' and '.join(found)} both set the NATS {variable.field} but differ "
                f"({given if not variable.secret else 'values hidden'}); unset one of them"
            )
        name, value = next(iter(found.items()))
        if variable.field == "tls_handshake_first":
            fields[variable.field] = _boolean(name, value)
        elif variable.secret or (variable.field == "servers" and _has_credentials(value)):
            fields[variable.field] = EnvVar(name)
        else:
            fields[variable.field] = value.strip()
    return fields


def _boolean(name: str, value: str) -> bool:
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InvalidArgumentError(f"{name} must be true or false, got {value!r}")


def _has_credentials(servers: str) -> bool:
    """Whether a URL of the list carries `user:password@` or `token@`."""
    return any(urlsplit(url.strip()).username for url in servers.split(",") if "://" in url)
