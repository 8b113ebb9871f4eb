"""Connection settings and the one place that opens a nats-py connection.

The initial connect is bounded by `connect_timeout` (all servers and attempts included), so
an unreachable server, a wrong password or an untrusted certificate raises a clear
`ConnectionFailedError` subclass naming the server and the cause instead of hanging.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

import nats
import nats.errors
from nats.aio.client import Client as NATS

from resources.jetstream.errors import (
    AuthenticationError,
    ConnectionFailedError,
    InvalidArgumentError,
    TLSError,
)

log = logging.getLogger(__name__)

SERVER_SCHEMES = ("nats", "tls", "ws", "wss")


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
        parts = urlsplit(url if "://" in url else f"nats://{url}")
        if parts.scheme not in SERVER_SCHEMES or not parts.hostname:
            raise InvalidArgumentError(
                f"invalid NATS server URL {url!r}: expected scheme://host:port with scheme "
                f"one of {', '.join(SERVER_SCHEMES)}"
            )
    return urls


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

    @property
    def server_list(self) -> str:
        """The servers as one string, for error messages."""
        return ", ".join(self.servers)

    def tls_context(self) -> ssl.SSLContext | None:
        """Builds the client TLS context, or None when no TLS option is set."""
        wants_tls = self.tls_ca_file or self.tls_cert_file or self.tls_handshake_first
        if not wants_tls and not any(s.startswith(("tls://", "wss://")) for s in self.servers):
            return None
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=self.tls_ca_file)
        if self.tls_cert_file and self.tls_key_file:
            context.load_cert_chain(self.tls_cert_file, self.tls_key_file)
        return context


async def open_connection(settings: ConnectionSettings) -> NATS:
    """Opens a nats-py connection, translating failures into `ConnectionFailedError`s.

    Raises:
        AuthenticationError: the server rejected the credentials.
        TLSError: the TLS handshake failed.
        ConnectionFailedError: no server answered within `connect_timeout`.
    """
    seen: list[BaseException] = []
    connected = asyncio.Event()

    async def on_error(error: Exception) -> None:
        if connected.is_set():
            log.warning("NATS connection to %s: %s", settings.server_list, error)
        else:
            seen.append(error)

    async def on_disconnected() -> None:
        if connected.is_set() and not (nc.is_closed or nc.is_draining):
            log.warning("disconnected from NATS (%s); reconnecting", settings.server_list)

    async def on_reconnected() -> None:
        log.info("reconnected to NATS (%s)", settings.server_list)

    options = dict(
        servers=list(settings.servers),
        name=settings.name,
        connect_timeout=settings.connect_timeout,
        allow_reconnect=settings.allow_reconnect,
        max_reconnect_attempts=settings.max_reconnect_attempts,
        reconnect_time_wait=settings.reconnect_time_wait,
        error_cb=on_error,
        disconnected_cb=on_disconnected,
        reconnected_cb=on_reconnected,
        user=settings.user,
        password=settings.password,
        token=settings.token,
        nkeys_seed=settings.nkey_seed_file,
        nkeys_seed_str=settings.nkey_seed,
        user_credentials=settings.creds_file,
        tls=settings.tls_context(),
        tls_handshake_first=settings.tls_handshake_first,
    )
    try:
        nc = await asyncio.wait_for(nats.connect(**options), timeout=settings.connect_timeout)
    except (TimeoutError, OSError, nats.errors.Error, ssl.SSLError) as error:
        raise _connect_error(settings, seen[-1] if seen else error) from error
    connected.set()
    return nc


def _connect_error(settings: ConnectionSettings, cause: BaseException) -> ConnectionFailedError:
    servers = settings.server_list
    text = str(cause) or type(cause).__name__
    if "authorization violation" in text.lower() or "authentication" in text.lower():
        return AuthenticationError(
            f"NATS server {servers} rejected the credentials ({text}); check the user/password, "
            "token, NKey seed or .creds file configured on the JetStream resource",
            server=servers,
        )
    if isinstance(cause, ssl.SSLError) or "ssl" in text.lower() or "tls" in text.lower():
        return TLSError(
            f"TLS handshake with NATS server {servers} failed ({text}); check tls_ca_file "
            "trusts the server's certificate and, if the server requires one, the client "
            "certificate and key",
            server=servers,
        )
    if isinstance(cause, TimeoutError):
        text = f"no answer within {settings.connect_timeout}s"
    return ConnectionFailedError(
        f"cannot connect to NATS server {servers} ({text}); start the server, or point "
        "NATS_URL / the resource's `servers` at a running one",
        server=servers,
    )
