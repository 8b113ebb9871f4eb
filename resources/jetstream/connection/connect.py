"""The one place that opens a nats-py connection (`open_connection`).

The initial connect is bounded by `connect_timeout` (all servers and attempts included), so
an unreachable server, a wrong password or an untrusted certificate raises a clear
`ConnectionFailedError` subclass naming the server and the cause instead of hanging. A
rejection that retrying cannot cure (credentials, certificates) ends the attempt as soon as
every configured server has given it, rather than when the timeout runs out; which error a
failure becomes is decided in `failures.py`.

Credential and certificate files are read before any network I/O (`credentials.py`), so a
missing or malformed file is an `InvalidArgumentError` naming the option. When TLS is asked
for (a `tls://` URL or a `tls_*` option), a server that does not speak TLS is refused: nats-py
would otherwise carry on in plaintext and send the password or token in the clear.

`ConnectionSettings` and `parse_servers` live in `settings.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Callable

from nats.aio.client import Client as NATS

from resources.jetstream.connection.failures import (
    CONNECT_ERRORS,
    DROPPED_IN_HANDSHAKE,
    PlaintextRefusedError,
    connect_error,
    is_permanent,
)
from resources.jetstream.connection.settings import ConnectionSettings

log = logging.getLogger(__name__)


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
        if sum(is_permanent(failure) for failure in failures) >= len(settings.servers):
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
                    raise connect_error(settings, PlaintextRefusedError("the server has no TLS"))
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
    permanent = [failure for failure in failures if is_permanent(failure)]
    cause = (permanent or failures or [error or TimeoutError()])[-1]
    raise connect_error(settings, cause) from cause


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


__all__ = ["open_connection"]
