"""`JetStreamResource`: how Dagster code reaches JetStream."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from dagster import ConfigurableResource, EnvVar, InitResourceContext
from pydantic import Field, PrivateAttr

from resources.jetstream.client import JetStreamClient
from resources.jetstream.connection.settings import ConnectionSettings, parse_servers
from resources.jetstream.environment import resource_fields_from_env
from resources.jetstream.errors import InvalidArgumentError


class JetStreamResource(ConfigurableResource):
    """A NATS JetStream connection for assets, asset checks and sensors.

    The connection opens on first use within a run or sensor tick (never at import) and is
    drained and closed when the run or tick ends. Secrets belong in `dagster.EnvVar`;
    `JetStreamResource.from_env()` reads every setting from the nats CLI's environment
    variables.

    Examples:
        >>> from dagster import EnvVar, asset
        >>> jetstream = JetStreamResource(
        ...     servers="nats://nats-1:4222,nats://nats-2:4222",
        ...     user="lakehouse",
        ...     password=EnvVar("NATS_PASSWORD"),
        ...     tls_ca_file="/etc/nats/ca.pem",
        ... )
        >>> @asset
        ... def lag(jetstream: JetStreamResource) -> int:
        ...     return jetstream.get_client().consumers.info("FILE_EVENTS", "bronze").num_pending
    """

    servers: str = Field(
        default="nats://127.0.0.1:4222",
        description="NATS server URL, or several separated by commas (the NATS_URL convention).",
    )
    client_name: str = Field(
        default="jetstream-lakehouse",
        description="Connection name shown in the server's monitoring (connz).",
    )
    connect_timeout: float = Field(
        default=5.0,
        description="Seconds allowed for the initial connection, all attempts included.",
    )
    request_timeout: float = Field(
        default=10.0, description="Seconds to wait for each JetStream API request."
    )
    retry_budget: float = Field(
        default=15.0,
        description="Seconds a stream, consumer or KV call retries while a cluster elects a "
        "leader (no responders, timeouts) before failing with ClusterUnavailableError; 0: never.",
    )
    allow_reconnect: bool = Field(default=True, description="Reconnect after the connection drops.")
    max_reconnect_attempts: int = Field(
        default=60, description="Reconnect attempts per server before giving up (-1: forever)."
    )
    reconnect_time_wait: float = Field(
        default=2.0, description="Seconds between reconnect attempts to the same server."
    )
    domain: str | None = Field(
        default=None, description="JetStream domain (leaf nodes, multi-cluster hierarchies)."
    )
    api_prefix: str | None = Field(
        default=None, description="JetStream API prefix, for cross-account imports."
    )
    user: str | None = Field(default=None, description="User name for user/password auth.")
    password: str | None = Field(
        default=None, description="Password for user/password auth (use EnvVar)."
    )
    token: str | None = Field(default=None, description="Token auth (use EnvVar).")
    nkey_seed: str | None = Field(default=None, description="NKey seed, 'SU...' (use EnvVar).")
    nkey_seed_file: str | None = Field(default=None, description="Path to an NKey seed file.")
    creds_file: str | None = Field(
        default=None, description="Path to a decentralised-auth credentials (.creds) file."
    )
    tls_ca_file: str | None = Field(
        default=None, description="CA bundle that signs the server's certificate."
    )
    tls_cert_file: str | None = Field(
        default=None, description="Client certificate, when the server verifies clients."
    )
    tls_key_file: str | None = Field(default=None, description="Client certificate's key.")
    tls_hostname: str | None = Field(
        default=None,
        description="Host name to check the server's certificate against, when it differs "
        "from the URL's host.",
    )
    tls_handshake_first: bool = Field(
        default=False, description="Start TLS before the NATS INFO (server `handshake_first`)."
    )

    _client: JetStreamClient | None = PrivateAttr(default=None)

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, **overrides: Any
    ) -> JetStreamResource:
        """A resource configured by the nats CLI's environment variables (`NATS_URL`,
        `NATS_USER`/`NATS_PASSWORD`, `NATS_TOKEN`, `NATS_CREDS`, `NATS_CA`, ...; the table is
        in `resources.jetstream.environment`). Secrets are passed as `EnvVar`s, so Dagster
        shows their names, never their values.

        Args:
            environ: the variables (default: the process environment).
            **overrides: fields that win over the environment (e.g. a command's `--nats-url`,
                timeouts); a `None` override is ignored.

        Raises:
            InvalidArgumentError: two variables for one setting disagree, or a boolean one is
                not true/false.

        Examples:
            >>> JetStreamResource.from_env({"NATS_URL": "nats://nats-1:4222"}).servers
            'nats://nats-1:4222'
            >>> secret = JetStreamResource.from_env({"NATS_USER": "me", "NATS_PASSWORD": "s3cr3t"})
            >>> secret.password  # an EnvVar: Dagster shows the name, resolves the value
            'NATS_PASSWORD'
        """
        fields = resource_fields_from_env(environ)
        fields.update({name: value for name, value in overrides.items() if value is not None})
        return cls(**fields)

    def connection_settings(self) -> ConnectionSettings:
        """The validated connection settings (raises before any I/O if they are wrong).

        Fields given as `dagster.EnvVar` are resolved here too, so `client()` also works in
        scripts, outside a Dagster run.
        """
        f = {name: _resolve(name, getattr(self, name)) for name in type(self).model_fields}
        return ConnectionSettings(
            servers=parse_servers(f["servers"]),
            name=f["client_name"],
            connect_timeout=f["connect_timeout"],
            request_timeout=f["request_timeout"],
            retry_budget=f["retry_budget"],
            allow_reconnect=f["allow_reconnect"],
            max_reconnect_attempts=f["max_reconnect_attempts"],
            reconnect_time_wait=f["reconnect_time_wait"],
            domain=f["domain"],
            api_prefix=f["api_prefix"],
            user=f["user"],
            password=f["password"],
            token=f["token"],
            nkey_seed=f["nkey_seed"],
            nkey_seed_file=f["nkey_seed_file"],
            creds_file=f["creds_file"],
            tls_ca_file=f["tls_ca_file"],
            tls_cert_file=f["tls_cert_file"],
            tls_key_file=f["tls_key_file"],
            tls_hostname=f["tls_hostname"],
            tls_handshake_first=f["tls_handshake_first"],
        )

    def get_client(self) -> JetStreamClient:
        """The run's (or tick's) client, connected on first use and closed at teardown."""
        if self._client is None:
            self._client = JetStreamClient(self.connection_settings())
        return self._client.connect()

    @contextmanager
    def client(self) -> Iterator[JetStreamClient]:
        """A separate client for use outside a run; closed when the block exits."""
        client = JetStreamClient(self.connection_settings())
        try:
            yield client.connect()
        finally:
            client.close()

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()


def _resolve(field: str, value: Any) -> Any:
    """The value of an `EnvVar` field (Dagster resolves them only inside runs and ticks)."""
    if not isinstance(value, EnvVar):
        return value
    resolved = value.get_value()
    if resolved is None:
        raise InvalidArgumentError(
            f"JetStreamResource.{field} is EnvVar({value.env_var_name!r}), but that environment "
            "variable is not set; set it before connecting"
        )
    return resolved
