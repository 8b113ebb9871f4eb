"""The session every JetStream feature module runs on: one connection, one private loop.

`Session` owns an `EventLoopThread` and one nats-py connection. Its `run` executes a nats-py
coroutine on that loop and translates nats-py errors into `resources.jetstream.errors`;
`api_request` and `retrying` add the JetStream API and the retries through a cluster's
leader elections. Streams, consumers, KV, Object Store and publishing are written against
this class only; `JetStreamClient` (client.py) is the facade that puts them together.
"""

from __future__ import annotations

import collections
import json
import math
import time
from collections.abc import Awaitable, Callable, Coroutine
from functools import cached_property
from typing import Any, Protocol, TypeVar

import nats.errors
import nats.js.errors
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.manager import JetStreamManager

from resources.backports import Self
from resources.jetstream.connection.connect import open_connection
from resources.jetstream.connection.settings import ConnectionSettings
from resources.jetstream.core.retry import retry_transient
from resources.jetstream.core.runtime import EventLoopThread
from resources.jetstream.errors import (
    ConnectionFailedError,
    JetStreamError,
    PermissionDeniedError,
    RequestTimeoutError,
    translate_api_error,
)

T = TypeVar("T")
# nats-py errors that mean the connection itself is gone (others are about one request).
CONNECTION_ERRORS = (
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionDrainingError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.StaleConnectionError,
    nats.errors.OutboundBufferLimitError,
    nats.errors.NoServersError,
    nats.errors.UnexpectedEOF,
)


class Subscription(Protocol):
    """What the session ends on close: an open push subscription."""

    def unsubscribe(self) -> None: ...


class Session:
    """A connection to NATS with a synchronous API over a private event loop.

    Connects lazily (on the first `run`, `nc` or `js`) or explicitly with `connect()`;
    `close()` drains it. Feature modules take a `Session` and call `run` with a coroutine.
    """

    def __init__(self, settings: ConnectionSettings) -> None:
        self.settings = settings
        self._loop: EventLoopThread | None = None
        self._nc: NATS | None = None
        self._js: JetStreamContext | None = None
        # (monotonic time, text) of permission violations the server reported: a refused
        # request gets no answer, only this asynchronous error.
        self._violations: collections.deque[tuple[float, str]] = collections.deque(maxlen=64)
        self.subscriptions: set[Subscription] = set()  # open push subscriptions

    # -- lifecycle -------------------------------------------------------------------------

    def connect(self) -> Self:
        """Opens the connection (once); later calls return at once."""
        if self._nc is not None:
            return self
        loop = EventLoopThread()
        try:
            # open_connection bounds itself by connect_timeout; this is only a backstop.
            self._nc = loop.run(
                open_connection(self.settings, report_error=self._record_error),
                timeout=self.settings.connect_timeout + 10,
            )
        except TimeoutError as error:
            loop.close()
            raise ConnectionFailedError(
                f"cannot connect to NATS server {self.settings.server_list}: no answer within "
                f"{self.settings.connect_timeout + 10}s; check the server and the network",
                server=self.settings.server_list,
            ) from error
        except BaseException:
            loop.close()
            raise
        self._loop = loop
        self._js = self._nc.jetstream(
            prefix=self.settings.api_prefix or "$JS.API",
            domain=self.settings.domain,
            timeout=self.settings.request_timeout,
        )
        return self

    def close(self) -> None:
        """Drains the connection (pending acks and publishes are flushed), then closes it.

        Open push subscriptions end first: messages they buffered but nobody took would
        otherwise hold the drain up until its timeout (the server redelivers them).
        """
        for subscription in list(self.subscriptions):
            subscription.unsubscribe()
        nc, loop = self._nc, self._loop
        self._nc = self._js = self._loop = None
        self.__dict__.pop("jsm", None)
        if loop is None:
            return
        try:
            if nc is not None and not nc.is_closed:
                loop.run(nc.drain(), timeout=self.settings.request_timeout + 5)
        except (TimeoutError, OSError, nats.errors.Error):
            loop.run(nc.close(), timeout=5)
        finally:
            loop.close()

    def _record_error(self, error: Exception) -> None:
        """Called on the loop thread with errors the server reports after connecting."""
        text = str(error)
        if "permissions violation" in text.lower():
            self._violations.append((time.monotonic(), text))

    def _violation_since(self, started: float) -> str | None:
        for moment, text in reversed(self._violations):
            if moment >= started:
                return text
        return None

    def __enter__(self) -> Self:
        return self.connect()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def is_connected(self) -> bool:
        return self._nc is not None and self._nc.is_connected

    @property
    def nc(self) -> NATS:
        """The underlying nats-py connection (for the modules of this package)."""
        self.connect()
        assert self._nc is not None
        return self._nc

    @property
    def js(self) -> JetStreamContext:
        """The underlying nats-py JetStream context (for the modules of this package)."""
        self.connect()
        assert self._js is not None
        return self._js

    @cached_property
    def jsm(self) -> JetStreamManager:
        return self.js._jsm

    def api_request(
        self,
        endpoint: str,
        body: dict[str, Any] | None = None,
        *,
        what: str,
        repeatable: bool = True,
        **names: Any,
    ) -> dict[str, Any]:
        """One JetStream API request (`$JS.API.<endpoint>`), its JSON answer as a dict.

        A request that gets no answer from a cluster in a leader election (a timeout, or
        "temporarily unavailable") is sent again within `settings.retry_budget` seconds
        (see `retry.retry_transient`).

        Args:
            endpoint: e.g. 'STREAM.INFO.FILE_EVENTS'.
            body: the request JSON (None: an empty request).
            what: the operation, for error messages.
            repeatable: False for a request that must not be applied twice (a purge, a
                delete): it is then sent again only when it certainly was not applied.
            **names: stream / consumer / seq, attached to errors.

        Raises:
            ClusterUnavailableError: no leader answered within the retry budget.
            JetStreamError: a subclass naming the cause (see `run`).
        """
        jsm = self.jsm
        request = b"" if body is None else json.dumps(body).encode()
        subject = f"{jsm._prefix}.{endpoint}"
        timeout = self.settings.request_timeout
        return self.run(
            self.retrying(
                lambda: jsm._api_request(subject, request, timeout=timeout),
                what=what,
                repeatable=repeatable,
                **names,
            ),
            what=what,
            timeout=self.retry_timeout,
            **names,
        )

    def retrying(
        self,
        attempt: Callable[[], Awaitable[T]],
        *,
        what: str,
        repeatable: bool = True,
        gone: Callable[[], Awaitable[bool]] | None = None,
        **names: Any,
    ) -> Coroutine[Any, Any, T]:
        """`attempt` retried through leader elections within the settings' retry budget
        (a coroutine for `run`, with `timeout=self.retry_timeout`)."""
        started = time.monotonic()
        return retry_transient(
            attempt,
            budget=self.settings.retry_budget,
            what=what,
            repeatable=repeatable,
            gone=gone,
            refused=lambda: self._violation_since(started) is not None,
            **names,
        )

    @property
    def retry_timeout(self) -> float:
        """Seconds `run` waits for a retried call: the budget, one more try, a margin."""
        return self.settings.retry_budget + self.settings.request_timeout + 5

    def run(
        self,
        coro: Coroutine[Any, Any, T],
        *,
        what: str,
        timeout: float | None = None,
        **names: Any,
    ) -> T:
        """Runs a nats-py coroutine on the client's loop, translating its errors.

        Args:
            coro: the coroutine.
            what: the operation, for error messages ("add stream 'FILE_EVENTS'").
            timeout: seconds to wait; defaults to the request timeout plus a margin. Pass
                `math.inf` for work bounded by its own per-request timeouts (a batch).
            **names: stream / consumer / bucket / key / seq, attached to errors.

        Raises:
            JetStreamError: a subclass naming the cause.
        """
        self.connect()
        assert self._loop is not None
        wait = timeout if timeout is not None else self.settings.request_timeout + 5
        if math.isinf(wait):
            wait = None
        started = time.monotonic()
        try:
            return self._loop.run(coro, timeout=wait)
        except RequestTimeoutError as error:
            raise self._refused(started, what, names) or error from error
        except JetStreamError:
            raise
        except (TimeoutError, nats.errors.TimeoutError) as error:
            refused = self._refused(started, what, names)
            raise refused or translate_api_error(error, what, **names) from error
        except nats.js.errors.Error as error:
            raise translate_api_error(error, what, **names) from error
        except nats.errors.NoRespondersError as error:
            raise translate_api_error(
                nats.js.errors.ServiceUnavailableError(description="no responders"), what, **names
            ) from error
        except (*CONNECTION_ERRORS, OSError) as error:
            raise ConnectionFailedError(
                f"cannot {what}: the connection to {self.settings.server_list} failed ({error})",
                server=self.settings.server_list,
                **names,
            ) from error
        except nats.errors.Error as error:
            raise JetStreamError(f"cannot {what}: {error}", **names) from error

    def _refused(self, started: float, what: str, names: dict[str, Any]):
        """A PermissionDeniedError if the server reported a violation during the request."""
        violation = self._violation_since(started)
        if violation is None:
            return None
        return PermissionDeniedError(
            f"cannot {what}: the server refused it ({violation}); the NATS user lacks "
            "permission for that subject. Grant it (what the pipeline needs is listed by "
            "resources/jetstream/topology/permissions.py) or connect as a user that has it",
            server=self.settings.server_list,
            **names,
        )
