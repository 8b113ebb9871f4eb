"""Connection settings: the server list and everything `open_connection` needs, checked early.

`ConnectionSettings` refuses contradictory options (half a user/password pair, several auth
methods, a certificate without its key) when it is built, before any I/O; its credential
and certificate files are read by `credentials.py`. When TLS is asked for (a `tls://` URL or
a `tls_*` option), `refuses_plaintext` tells `open_connection` to refuse a server that does
not speak TLS.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

from resources.jetstream.connection.credentials import build_tls_context, check_credential_files
from resources.jetstream.errors import InvalidArgumentError

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
        if not _is_server_url(url):
            raise InvalidArgumentError(
                f"invalid NATS server URL {url!r}: expected scheme://host:port with scheme "
                f"one of {', '.join(SERVER_SCHEMES)} and a numeric port"
            )
    return urls


def redact_url(url: str) -> str:
    """`url` with the credentials in it (`user:password@`, `token@`) replaced by `***`, for
    messages and logs; the user name of a `user:password@` pair is kept.

    Examples:
        >>> redact_url("nats://lakehouse:s3cr3t@nats-1:4222")
        'nats://lakehouse:***@nats-1:4222'
        >>> redact_url("nats://t0ken@nats-1:4222, nats://nats-2:4222")
        'nats://***@nats-1:4222, nats://nats-2:4222'
    """
    if "," in url:
        return ", ".join(redact_url(part.strip()) for part in url.split(","))
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    userinfo, host = parts.netloc.rsplit("@", 1)
    hidden = f"{userinfo.split(':', 1)[0]}:***" if ":" in userinfo else "***"
    return parts._replace(netloc=f"{hidden}@{host}").geturl()


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
    retry_budget: float = 15.0  # seconds an API or KV call retries through a leader election
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
        if self.retry_budget < 0:
            raise InvalidArgumentError(
                f"retry_budget must not be negative (0: no retries), got {self.retry_budget!r}"
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
        """The servers as one string, for error messages (credentials in a URL hidden)."""
        return ", ".join(redact_url(url) for url in self.servers)

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
        return build_tls_context(
            ca_file=self.tls_ca_file, cert_file=self.tls_cert_file, key_file=self.tls_key_file
        )

    def check_credential_files(self) -> None:
        """Reads the NKey seed and `.creds` file once, before any network I/O.

        nats-py reads them only mid-handshake, where a bad file surfaces as a stray
        exception, or (a `.creds` file without its JWT block) as an endless loop that no
        timeout can interrupt.

        Raises:
            InvalidArgumentError: a file is missing or unreadable, or holds no user seed/JWT.
        """
        check_credential_files(
            nkey_seed=self.nkey_seed,
            nkey_seed_file=self.nkey_seed_file,
            creds_file=self.creds_file,
        )
