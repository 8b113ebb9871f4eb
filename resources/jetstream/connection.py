"""Connection settings and the one place that opens a nats-py connection.

The initial connect is bounded by `connect_timeout` (all servers and attempts included), so
an unreachable server, a wrong password or an untrusted certificate raises a clear
`ConnectionFailedError` subclass naming the server and the cause instead of hanging. A
rejection that retrying cannot cure (credentials, certificates) ends the attempt as soon as
every configured server has given it, rather than when the timeout runs out.

Credential and certificate files are read before any network I/O, so a missing or
malformed file is an `InvalidArgumentError` naming the option. When TLS is asked for (a
`tls://` URL or a `tls_*` option), a server that does not speak TLS is refused: nats-py
would otherwise carry on in plaintext and send the password or token in the clear.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import nats.errors
import nkeys
from nats.aio.client import Client as NATS

from resources.jetstream.errors import (
    AuthenticationError,
    ConnectionFailedError,
    InvalidArgumentError,
    TLSError,
)

log = logging.getLogger(__name__)

SERVER_SCHEMES = ("nats", "tls", "ws", "wss")
# Server -ERR texts that mean "these credentials are refused" (not "you were too slow").
AUTH_REJECTIONS = ("authorization violation", "authentication expired", "authentication revoked")
# What nats-py's connect loop raises; anything else is a bug and propagates unchanged.
CONNECT_ERRORS = (TimeoutError, OSError, nats.errors.Error)
# A server that accepted the TCP connection, then dropped it mid-handshake: how a rejection
# looks when its -ERR line is lost (see `_verdicts`), or a glitch.
DROPPED_IN_HANDSHAKE = (
    ConnectionResetError,
    ConnectionAbortedError,
    BrokenPipeError,
    asyncio.IncompleteReadError,
)


def parse_servers(servers: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Splits a comma-separated server list (the `NATS_URL` convention) and checks each URL.

    Raises:
        InvalidArgumentError: if the list is empty or a URL has an unknown scheme or no host.
    """
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    urls = tuple(item.strip() for item in items if item.strip())
    if not urls:
        raise InvalidArgumentError(
            "no NATS server configured: set `servers` (or NATS_URL) to e.g. 'nats://127.0.0.1:4222'"
        )
    for url in urls:
        if not _is_server_url(url):
            raise InvalidArgumentError(
                f"invalid NATS server URL {url!r}: expected scheme://host:port with scheme "
                f"one of {', '.join(SERVER_SCHEMES)} and a numeric port"
            )
    return urls


def _is_server_url(url: str) -> bool:
    parts = urlsplit(url if "://" in url else f"nats://{url}")
    try:
        parts.port  # noqa: B018 - raises ValueError when the port is not a number in range
    except ValueError:
        return False
    return parts.scheme in SERVER_SCHEMES and bool(parts.hostname)


@dataclass(frozen=True)
class ConnectionSettings:
    """Everything needed to open a connection; built by `JetStreamResource`."""

    servers: tuple[str, ...]
    name: str = "jetstream-lakehouse"
    connect_timeout: float = 5.0  # seconds, the whole initial connect
    request_timeout: float = 10.0  # seconds, each JetStream API request
    allow_reconnect: bool = True
    max_reconnect_attempts: int = 60
    reconnect_time_wait: float = 2.0  # seconds
    domain: str | None = None
    api_prefix: str | None = None
    user: str | None = None
    password: str | None = None
    token: str | None = None
    nkey_seed: str | None = None
    nkey_seed_file: str | None = None
    creds_file: str | None = None
    tls_ca_file: str | None = None
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    tls_handshake_first: bool = False
    tls_hostname: str | None = None

    def __post_init__(self) -> None:
        if self.connect_timeout <= 0 or self.request_timeout <= 0:
            raise InvalidArgumentError(
                f"timeouts must be positive, got connect_timeout={self.connect_timeout!r} "
                f"and request_timeout={self.request_timeout!r}"
            )
        if bool(self.tls_cert_file) != bool(self.tls_key_file):
            raise InvalidArgumentError(
                "a TLS client certificate needs both tls_cert_file and tls_key_file"
            )
        if self.domain and self.api_prefix:
            raise InvalidArgumentError("set either a JetStream domain or an API prefix, not both")
        if bool(self.user) != bool(self.password):
            raise InvalidArgumentError(
                "user/password auth needs both `user` and `password`; set the missing one "
                "(the password through dagster.EnvVar) or neither"
            )
        methods = [
            option
            for option, value in (
                ("user/password", self.user),
                ("token", self.token),
                ("nkey_seed", self.nkey_seed),
                ("nkey_seed_file", self.nkey_seed_file),
                ("creds_file", self.creds_file),
            )
            if value
        ]
        if len(methods) > 1:
            raise InvalidArgumentError(
                f"several ways to authenticate are set ({', '.join(methods)}); keep only the "
                "one the server's authorization or operator configuration expects"
            )

    @property
    def server_list(self) -> str:
        """The servers as one string, for error messages."""
        return ", ".join(self.servers)

    @property
    def auth_method(self) -> str | None:
        """The configured way to authenticate, for error messages (never the secret)."""
        if self.user:
            return f"user/password of user {self.user!r}"
        if self.token:
            return "token"
        if self.nkey_seed:
            return "NKey seed (nkey_seed)"
        if self.nkey_seed_file:
            return f"NKey seed file {self.nkey_seed_file!r}"
        if self.creds_file:
            return f"credentials file {self.creds_file!r}"
        return None

    @property
    def wants_tls(self) -> bool:
        """True when TLS was asked for: a tls:// or wss:// URL, or any `tls_*` option."""
        return bool(
            self.tls_ca_file
            or self.tls_cert_file
            or self.tls_handshake_first
            or self.tls_hostname
            or any(s.startswith(("tls://", "wss://")) for s in self.servers)
        )

    @property
    def refuses_plaintext(self) -> bool:
        """True when TLS was asked for and must be checked (wss:// is TLS by transport)."""
        return self.wants_tls and not all(s.startswith("wss://") for s in self.servers)

    def tls_context(self) -> ssl.SSLContext | None:
        """Builds the client TLS context, or None when TLS was not asked for.

        Raises:
            InvalidArgumentError: a CA, certificate or key file is missing or unusable.
        """
        if not self.wants_tls:
            return None
        try:
            context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=self.tls_ca_file)
        except OSError as error:  # ssl.SSLError is an OSError
            raise InvalidArgumentError(
                f"cannot use tls_ca_file {self.tls_ca_file!r} ({error}); point it at a "
                "readable PEM file with the CA certificate that signed the server's certificate"
            ) from error
        if self.tls_cert_file and self.tls_key_file:
            try:
                context.load_cert_chain(self.tls_cert_file, self.tls_key_file)
            except OSError as error:
                raise InvalidArgumentError(
                    f"cannot load the client certificate tls_cert_file {self.tls_cert_file!r} "
                    f"with tls_key_file {self.tls_key_file!r} ({error}); both must be "
                    "readable PEM files and the key must belong to the certificate"
                ) from error
        return context

    def check_credential_files(self) -> None:
        """Reads the NKey seed and `.creds` file once, before any network I/O.

        nats-py reads them only mid-handshake, where a bad file surfaces as a stray
        exception, or (a `.creds` file without its JWT block) as an endless loop that no
        timeout can interrupt.

        Raises:
            InvalidArgumentError: a file is missing or unreadable, or holds no user seed/JWT.
        """
        if self.nkey_seed:
            _check_user_seed(self.nkey_seed, "nkey_seed")
        if self.nkey_seed_file:
            text = _read_text(self.nkey_seed_file, "nkey_seed_file")
            _check_user_seed(text, f"nkey_seed_file {self.nkey_seed_file!r}")
        if self.creds_file:
            text = _read_text(self.creds_file, "creds_file")
            jwt = _line_after(text, "BEGIN NATS USER JWT")
            seed = _line_after(text, "BEGIN USER NKEY SEED")
            if jwt.count(".") != 2 or not seed:
                raise InvalidArgumentError(
                    f"creds_file {self.creds_file!r} is not a NATS credentials file: it needs a "
                    "'-----BEGIN NATS USER JWT-----' block and a '-----BEGIN USER NKEY SEED-----' "
                    "block; write it with `nsc generate creds` or your account server"
                )
            _check_user_seed(seed, f"the seed in creds_file {self.creds_file!r}")


def _read_text(path: str, option: str) -> str:
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidArgumentError(
            f"cannot read {option} {path!r} ({error}); fix the path or the file's permissions"
        ) from error


def _line_after(text: str, marker: str) -> str:
    lines = text.splitlines()
    for index, line in enumerate(lines[:-1]):
        if marker in line:
            return lines[index + 1].strip()
    return ""


def _check_user_seed(seed: str, what: str) -> None:
    try:
        prefix, _ = nkeys.decode_seed(bytearray(seed.strip().encode()))
    except (nkeys.NkeysError, ValueError, IndexError) as error:
        raise InvalidArgumentError(
            f"{what} is not an NKey seed; expected 'SU' and 56 more base32 characters, as "
            "written by `nk -gen user` or `nsc`"
        ) from error
    if prefix != nkeys.PREFIX_BYTE_USER:
        raise InvalidArgumentError(
            f"{what} is an NKey seed, but not a user's ('SU...'); clients authenticate with "
            "a user NKey, made with `nk -gen user`"
        )


class PlaintextRefusedError(nats.errors.Error):
    """Raised inside the handshake to keep a secret off a connection that is not TLS."""


def _tls_in_use(nc: NATS) -> bool:
    # nats-py switches to TLS exactly when the server's INFO says `tls_required` (a
    # handshake_first server says so too). nats-py has no public accessor for the INFO, so
    # this reads its private `_server_info`; if that ever disappears the check fails closed.
    info = getattr(nc, "_server_info", None) or {}
    return bool(info.get("tls_required"))


def _connect_options(settings: ConnectionSettings, nc: NATS, tls: ssl.SSLContext | None) -> dict:
    """nats-py options for auth and TLS, shared by the connection and the verdict probes.

    When TLS was asked for, the password and token are handed over as callables that
    nats-py calls while writing CONNECT, and that refuse unless that connection is TLS.
    """

    def secret(value: str | None) -> str | Callable[[], str] | None:
        if not value or not settings.refuses_plaintext:
            return value or None

        def reveal() -> str:
            if not _tls_in_use(nc):
                raise PlaintextRefusedError("the server did not switch to TLS")
            return value

        return reveal

    return dict(
        name=settings.name,
        connect_timeout=settings.connect_timeout,
        user=settings.user or None,
        password=secret(settings.password),
        token=secret(settings.token),
        nkeys_seed=settings.nkey_seed_file or None,
        nkeys_seed_str=settings.nkey_seed or None,
        user_credentials=settings.creds_file or None,
        tls=tls,
        tls_hostname=settings.tls_hostname or None,
        tls_handshake_first=settings.tls_handshake_first,
    )


async def open_connection(
    settings: ConnectionSettings, report_error: Callable[[Exception], None] | None = None
) -> NATS:
    """Opens a nats-py connection, translating failures into `ConnectionFailedError`s.

    Args:
        settings: where and how to connect.
        report_error: called on the loop thread with each error the server reports after the
            connection is up (such as a permissions violation), besides the warning logged.

    Raises:
        InvalidArgumentError: a credential, CA, certificate or key file is unusable.
        AuthenticationError: the server rejected the credentials.
        TLSError: the TLS handshake failed, or TLS was asked for and the server has none.
        ConnectionFailedError: no server answered within `connect_timeout`.
    """
    settings.check_credential_files()
    tls = settings.tls_context()
    nc = NATS()
    failures: list[BaseException] = []
    connected = asyncio.Event()
    hopeless = asyncio.Event()  # as many rejections retrying cannot cure as there are servers
    probes: list[asyncio.Future] = []

    def record(error: BaseException) -> None:
        failures.append(error)
        if sum(_is_permanent(failure) for failure in failures) >= len(settings.servers):
            hopeless.set()

    async def probe() -> None:
        for verdict in await _verdicts(settings, tls):
            record(verdict)

    async def on_error(error: Exception) -> None:
        if connected.is_set():
            log.warning("NATS connection to %s: %s", settings.server_list, error)
            if report_error is not None:
                report_error(error)
            return
        record(error)
        if isinstance(error, DROPPED_IN_HANDSHAKE) and not probes:
            probes.append(asyncio.ensure_future(probe()))

    async def on_disconnected() -> None:
        if connected.is_set() and not (nc.is_closed or nc.is_draining):
            log.warning("disconnected from NATS (%s); reconnecting", settings.server_list)

    async def on_reconnected() -> None:
        log.info("reconnected to NATS (%s)", settings.server_list)

    attempt = asyncio.ensure_future(
        nc.connect(
            servers=list(settings.servers),
            allow_reconnect=settings.allow_reconnect,
            max_reconnect_attempts=settings.max_reconnect_attempts,
            reconnect_time_wait=settings.reconnect_time_wait,
            error_cb=on_error,
            disconnected_cb=on_disconnected,
            reconnected_cb=on_reconnected,
            **_connect_options(settings, nc, tls),
        )
    )
    given_up = asyncio.ensure_future(hopeless.wait())
    deadline = asyncio.get_running_loop().time() + settings.connect_timeout
    try:
        await asyncio.wait(
            {attempt, given_up},
            timeout=settings.connect_timeout,
            return_when=asyncio.FIRST_COMPLETED,
        )
        if attempt.done() and attempt.exception() is None:
            if nc.is_connected:
                await _cancel(given_up, *probes)
                if settings.refuses_plaintext and not _tls_in_use(nc):
                    raise _connect_error(settings, PlaintextRefusedError("the server has no TLS"))
                connected.set()
                return nc
            # nats-py returns a half-open client when the server hangs up instead of
            # answering PING: that is a dropped handshake too.
            await on_error(ConnectionResetError("the server hung up instead of answering PING"))
        if attempt.done() and probes and not hopeless.is_set():
            # The attempt gave up first; the verdict of a dropped handshake is worth the wait.
            with contextlib.suppress(TimeoutError):
                remaining = deadline - asyncio.get_running_loop().time()
                await asyncio.wait_for(asyncio.gather(*probes), timeout=max(remaining, 0))
    finally:
        if not connected.is_set():
            await _abandon(nc, attempt, given_up, *probes)
    error = attempt.exception() if attempt.done() and not attempt.cancelled() else None
    if error is not None and not isinstance(error, CONNECT_ERRORS):
        raise error
    permanent = [failure for failure in failures if _is_permanent(failure)]
    cause = (permanent or failures or [error or TimeoutError()])[-1]
    raise _connect_error(settings, cause) from cause


async def _verdicts(settings: ConnectionSettings, tls: ssl.SSLContext | None) -> list[Exception]:
    """Asks each server once more, in verbose mode, why it dropped the handshake.

    nats-py writes CONNECT and PING separately. A server that rejects the CONNECT answers
    -ERR and closes with the PING unread, so the kernel resets the connection, and nats-py
    raises the reset rather than the -ERR already in its buffer (more often under load). In
    verbose mode the client waits for the server's verdict on CONNECT before sending more,
    so the -ERR arrives intact. Only these throwaway connections are verbose.
    """

    async def ignore(error: Exception) -> None:
        pass

    verdicts: list[Exception] = []
    for server in settings.servers:
        probe = NATS()
        try:
            await probe.connect(
                servers=[server],
                verbose=True,
                allow_reconnect=False,
                error_cb=ignore,
                **_connect_options(settings, probe, tls),
            )
        except CONNECT_ERRORS as error:
            verdicts.append(error)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(probe.close(), timeout=2)
    return verdicts


async def _cancel(*tasks: asyncio.Future) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def _abandon(nc: NATS, *tasks: asyncio.Future) -> None:
    """Stops a failed connect attempt and closes its half-open socket."""
    await _cancel(*tasks)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(nc.close(), timeout=2)


def _is_auth_rejection(error: BaseException) -> bool:
    text = str(error).lower()
    return isinstance(error, nats.errors.AuthorizationError) or any(
        rejection in text for rejection in AUTH_REJECTIONS
    )


def _is_permanent(error: BaseException) -> bool:
    """Whether retrying the same server with the same settings would fail the same way."""
    return isinstance(error, ssl.SSLError | PlaintextRefusedError) or _is_auth_rejection(error)


def _connect_error(settings: ConnectionSettings, cause: BaseException) -> ConnectionFailedError:
    servers = settings.server_list
    text = str(cause) or type(cause).__name__
    if _is_auth_rejection(cause):
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
            f"TLS with NATS server {servers} failed ({text}); {_tls_hint(settings, cause)}",
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


def _tls_hint(settings: ConnectionSettings, error: ssl.SSLError) -> str:
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
