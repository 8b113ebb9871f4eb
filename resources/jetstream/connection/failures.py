"""Why a connect failed: classifying nats-py's connect errors into `ConnectionFailedError`s.

`open_connection` (in `connect.py`) records every failure of the initial connect, stops
early once each server has given a rejection that retrying cannot cure (`is_permanent`), and
raises `connect_error` for the most telling one: an `AuthenticationError` naming the auth
method, a `TLSError` with a hint at the TLS option to fix (`tls_hint`), or a
`ConnectionFailedError` saying what to check.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import TYPE_CHECKING

import nats.errors

from resources.jetstream.errors import AuthenticationError, ConnectionFailedError, TLSError

if TYPE_CHECKING:
    from resources.jetstream.connection.settings import ConnectionSettings

# Server -ERR texts that mean "these credentials are refused" (not "you were too slow").
AUTH_REJECTIONS = ("authorization violation", "authentication expired", "authentication revoked")
# What nats-py's connect loop raises; anything else is a bug and propagates unchanged.
CONNECT_ERRORS = (TimeoutError, OSError, nats.errors.Error)
# A server that accepted the TCP connection, then dropped it mid-handshake: how a rejection
# looks when its -ERR line is lost (see `connect._verdicts`), or a glitch.
DROPPED_IN_HANDSHAKE = (
    ConnectionResetError,
    ConnectionAbortedError,
    BrokenPipeError,
    asyncio.IncompleteReadError,
)


class PlaintextRefusedError(nats.errors.Error):
    """Raised inside the handshake to keep a secret off a connection that is not TLS."""


def is_auth_rejection(error: BaseException) -> bool:
    """Whether the server refused the credentials (not a timeout or a network error)."""
    text = str(error).lower()
    return isinstance(error, nats.errors.AuthorizationError) or any(
        rejection in text for rejection in AUTH_REJECTIONS
    )


def is_permanent(error: BaseException) -> bool:
    """Whether retrying the same server with the same settings would fail the same way."""
    return isinstance(error, ssl.SSLError | PlaintextRefusedError) or is_auth_rejection(error)


def connect_error(settings: ConnectionSettings, cause: BaseException) -> ConnectionFailedError:
    """The error to raise for a failed connect, naming the servers and what to fix.

    Args:
        settings: the settings the connect used (servers, auth method, TLS options).
        cause: the failure that explains it best (a permanent one if there was one).

    Returns:
        An `AuthenticationError`, a `TLSError` or a plain `ConnectionFailedError`.
    """
    servers = settings.server_list
    text = str(cause) or type(cause).__name__
    if is_auth_rejection(cause):
        if settings.auth_method is None:
            return AuthenticationError(
                f"NATS server {servers} requires authentication ({text}), but no credentials "
                "are configured; set user and password, token, nkey_seed, nkey_seed_file or "
                "creds_file on the JetStream resource",
                server=servers,
            )
        return AuthenticationError(
            f"NATS server {servers} rejected the {settings.auth_method} ({text}); check it "
            "against the server's authorization (or operator/account) configuration",
            server=servers,
        )
    if isinstance(cause, PlaintextRefusedError):
        return TLSError(
            f"NATS server {servers} does not use TLS, but TLS is configured (a tls:// URL or "
            "a tls_* option), so the connection was refused rather than sending credentials "
            "in plaintext; enable TLS on the server (a `tls { cert_file, key_file }` block), "
            "or use a nats:// URL without tls_* options",
            server=servers,
        )
    if isinstance(cause, ssl.SSLError):
        return TLSError(
            f"TLS with NATS server {servers} failed ({text}); {tls_hint(settings, cause)}",
            server=servers,
        )
    if isinstance(cause, DROPPED_IN_HANDSHAKE):
        return ConnectionFailedError(
            f"NATS server {servers} dropped the connection during the handshake ({text}), as "
            "servers do with clients they reject; check the credentials and TLS settings "
            "against the server's configuration, and its log",
            server=servers,
        )
    if "expecting info" in text.lower():
        return ConnectionFailedError(
            f"NATS server {servers} sent no INFO greeting ({text}); if the server's tls block "
            "has `handshake_first: true`, set tls_handshake_first=True (and tls_ca_file)",
            server=servers,
        )
    if isinstance(cause, TimeoutError):
        return ConnectionFailedError(
            f"cannot connect to NATS server {servers} (no answer within "
            f"{settings.connect_timeout}s); check that it runs and is reachable, or raise "
            "connect_timeout. A server whose tls block has `handshake_first: true` stays "
            "silent until the client starts TLS: for it, set tls_handshake_first=True",
            server=servers,
        )
    return ConnectionFailedError(
        f"cannot connect to NATS server {servers} ({text}); start the server, or point "
        "NATS_URL / the resource's `servers` at a running one",
        server=servers,
    )


def tls_hint(settings: ConnectionSettings, error: ssl.SSLError) -> str:
    """What to change for a failed TLS handshake, judged from the SSL error's reason."""
    reason = (error.reason or "").upper()
    if isinstance(error, ssl.SSLCertVerificationError):
        if "mismatch" in (error.verify_message or "").lower():
            return (
                "the server's certificate is not valid for the host in the URL; connect "
                "with a name or IP address listed in its subjectAltName, or set tls_hostname"
            )
        return (
            "the server's certificate is not trusted; set tls_ca_file to the CA bundle "
            "that signed it"
        )
    if "CERTIFICATE_REQUIRED" in reason or (
        "HANDSHAKE_FAILURE" in reason and not settings.tls_cert_file
    ):
        return (
            "the server requires a client certificate (its tls block has `verify: true`); "
            "set tls_cert_file and tls_key_file"
        )
    if any(alert in reason for alert in ("BAD_CERTIFICATE", "UNKNOWN_CA", "CERTIFICATE_UNKNOWN")):
        return (
            "the server rejected the client certificate; use one signed by a CA in the "
            "server's tls `ca_file`"
        )
    if "WRONG_VERSION_NUMBER" in reason and settings.tls_handshake_first:
        return (
            "the server does not start with TLS; unset tls_handshake_first, or set "
            "`handshake_first: true` in the server's tls block"
        )
    return (
        "check that tls_ca_file trusts the server's certificate and, if the server "
        "verifies clients, that tls_cert_file and tls_key_file are set"
    )
