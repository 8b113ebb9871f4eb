"""Retrying JetStream calls through a cluster's leader elections, within a bounded budget.

On a cluster, a stream, a consumer or a KV bucket answers through its leader. For the few
seconds after that leader dies, nobody answers: requests get "no responders" (nothing
subscribed to the subject), time out, or get "JetStream system temporarily unavailable".
`retry_transient` repeats a call on those errors with exponential backoff until it succeeds
or the budget runs out, and then raises `ClusterUnavailableError`, never a "does not exist".

A retried call must be safe to repeat. Reads are; so are creates and updates that send a
whole configuration (the server answers a repeat with the same object), and a consumer
reset to a sequence. A call that is not (a purge, a delete, a publish without a msg-id)
is retried only after errors that prove it was never applied (`unanswered`): no responders,
or a 503. A compare-and-set is retried on timeouts too, and the caller recognises a repeat
whose first attempt had landed by reading back (see `kv.stream.KvStream._call`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import nats.errors
import nats.js.errors

from resources.jetstream.errors import ClusterUnavailableError

T = TypeVar("T")

FIRST_DELAY = 0.1  # seconds before the first retry
MAX_DELAY = 2.0  # seconds, the longest pause between two attempts

# JetStream API error codes of a cluster in transition (nats-server's errors.json).
CLUSTER_NOT_AVAILABLE = 10008  # "JetStream system temporarily unavailable" (503)
CLUSTER_NOT_LEADER = 10009  # "JetStream cluster can not handle request"
CLUSTER_NOT_ASSIGNED = 10006  # "JetStream cluster not assigned to this server"
CLUSTER_INCOMPLETE = 10004  # "incomplete results"
CLUSTER_NO_PEERS = 10005  # "no suitable peers for placement" (a node is down)
STREAM_OFFLINE = 10118
CONSUMER_OFFLINE = 10119
TRANSIENT_CODES = frozenset(
    {
        CLUSTER_NOT_AVAILABLE,
        CLUSTER_NOT_LEADER,
        CLUSTER_NOT_ASSIGNED,
        CLUSTER_INCOMPLETE,
        CLUSTER_NO_PEERS,
        STREAM_OFFLINE,
        CONSUMER_OFFLINE,
    }
)


def unanswered(error: BaseException) -> bool:
    """Whether `error` proves the request was not applied: nothing received it (a stream
    subject or a direct get without a leader), or the server said it cannot handle it now."""
    if isinstance(error, nats.errors.NoRespondersError | nats.js.errors.NoStreamResponseError):
        return True
    if isinstance(error, nats.js.errors.ServiceUnavailableError) and getattr(
        error, "err_code", None
    ):
        return True  # an answer; without a code it is nats-py's "no responders" on the API,
        # which means JetStream is not enabled at all
    return isinstance(error, nats.js.errors.APIError) and getattr(error, "err_code", None) in (
        CLUSTER_NOT_AVAILABLE,
        CLUSTER_NOT_LEADER,
        CLUSTER_NOT_ASSIGNED,
    )


def is_transient(error: BaseException) -> bool:
    """Whether `error` is what a cluster answers while a leader is being elected."""
    if unanswered(error) or isinstance(error, nats.errors.TimeoutError | TimeoutError):
        return True
    return getattr(error, "err_code", None) in TRANSIENT_CODES


async def retry_transient(
    attempt: Callable[[], Awaitable[T]],
    *,
    budget: float,
    what: str,
    repeatable: bool = True,
    gone: Callable[[], Awaitable[bool]] | None = None,
    refused: Callable[[], bool] | None = None,
    **names,
) -> T:
    """Awaits `attempt()` until it succeeds, fails for good, or `budget` seconds run out.

    Args:
        attempt: makes and awaits one try of the call (a new coroutine each time).
        budget: seconds to keep retrying; 0 tries once. A try that has begun may end up to
            its own timeout after the budget.
        what: the operation, for the error message ("put key 'k' in kv bucket 'b'").
        repeatable: False for a call that must not be applied twice: then it is retried only
            after errors that prove it was not applied (`unanswered`).
        gone: asked after "no responders"; True means the target does not exist, and the
            error is raised as it is (the caller reports the missing stream or bucket).
        refused: True once the server reported a permissions violation: a refused request
            gets no answer, so its timeout is raised as it is (the caller reports it).
        **names: stream / consumer / bucket / key, for the error.

    Raises:
        ClusterUnavailableError: every try failed with a transient error for `budget` seconds.
        Exception: the first non-transient error, as `attempt` raised it.
    """
    started = time.monotonic()
    deadline = started + budget
    delay = FIRST_DELAY
    while True:
        try:
            return await attempt()
        except Exception as error:
            retry = is_transient(error) if repeatable else unanswered(error)
            if not retry:
                raise
            if refused is not None and refused():
                raise
            if gone is not None and unanswered(error) and await gone():
                raise
            if time.monotonic() + delay > deadline:
                raise unavailable(what, error, time.monotonic() - started, **names) from error
        await asyncio.sleep(delay)
        delay = min(delay * 2, MAX_DELAY)


def unavailable(what: str, error: BaseException, waited: float, **names) -> ClusterUnavailableError:
    """The error for a call that found no leader for the whole retry budget."""
    target = _target(names)
    cause = getattr(error, "description", None) or str(error) or type(error).__name__
    return ClusterUnavailableError(
        f"cannot {what}: {target} had no leader that answered for {waited:.1f}s "
        f"(last error: {cause}); a JetStream server holding it is down or its replicas are "
        "still electing a leader. Check that a majority of its replicas' servers run "
        "(`nats server report jetstream`), then run again; raise the client's retry_budget "
        "if elections take longer here",
        waited=waited,
        **names,
    )


def _target(names: dict) -> str:
    if names.get("bucket"):
        return f"bucket {names['bucket']!r}"
    if names.get("consumer"):
        return f"consumer {names['consumer']!r} of stream {names.get('stream')!r}"
    if names.get("stream"):
        return f"stream {names['stream']!r}"
    return "the JetStream API"


__all__ = ["is_transient", "retry_transient", "unanswered", "unavailable"]
