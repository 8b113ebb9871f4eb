"""Errors raised by the JetStream resources.

One root class, `JetStreamError`, and one subclass per cause. Each carries the names it is
about (server, stream, consumer, bucket, key, seq) as attributes, and its message says what
is wrong and what to do about it. nats-py's own exceptions never escape the resource: they
are translated here, with the original kept as `__cause__`.
"""

from __future__ import annotations


class JetStreamError(Exception):
    """Root of every error raised by the JetStream resources."""

    def __init__(
        self,
        message: str,
        *,
        server: str | None = None,
        stream: str | None = None,
        consumer: str | None = None,
        bucket: str | None = None,
        key: str | None = None,
        seq: int | None = None,
    ) -> None:
        super().__init__(message)
        self.server = server
        self.stream = stream
        self.consumer = consumer
        self.bucket = bucket
        self.key = key
        self.seq = seq


class InvalidArgumentError(JetStreamError, ValueError):
    """An argument was rejected before any I/O (bad name, negative batch, ...)."""


class EmbeddedServerError(JetStreamError):
    """The embedded nats-server could not be found or started."""


class ConnectionFailedError(JetStreamError):
    """No server could be reached (refused, unreachable, or timed out)."""


class AuthenticationError(ConnectionFailedError):
    """The server rejected the credentials (user/password, token, NKey, .creds)."""


class TLSError(ConnectionFailedError):
    """The TLS handshake failed (untrusted certificate, missing client cert, ...)."""


class JetStreamUnavailableError(JetStreamError):
    """The server answered, but JetStream is not enabled for this account or domain."""


class PermissionDeniedError(JetStreamError):
    """The server refused the request: the NATS user lacks permission for its subject."""


class RequestTimeoutError(JetStreamError):
    """A JetStream API request got no answer within the request timeout."""


class ClusterUnavailableError(JetStreamError):
    """The stream, consumer or bucket stayed without an answering leader for the whole retry
    budget (a node is down or an election does not finish); nothing says it does not exist.

    Attributes:
        waited: seconds spent retrying before giving up.
    """

    def __init__(self, message: str, *, waited: float, **names) -> None:
        super().__init__(message, **names)
        self.waited = waited


class StreamNotFoundError(JetStreamError):
    """The named stream does not exist."""


class ConsumerNotFoundError(JetStreamError):
    """The named consumer does not exist on its stream."""


class MessageNotFoundError(JetStreamError):
    """No stored message matches the requested sequence or subject."""


class PublishExpectationError(JetStreamError):
    """A publish expectation (stream, last sequence, last msg-id, ...) was not met."""


class NoStreamForSubjectError(JetStreamError):
    """A publish went to a subject that no stream captures."""


class BucketNotFoundError(JetStreamError):
    """The named Key-Value or Object Store bucket does not exist."""


class KeyNotFoundError(JetStreamError):
    """The key does not exist in the Key-Value bucket (or was deleted)."""


class RevisionConflictError(JetStreamError):
    """A compare-and-set on a Key-Value key lost: its revision moved since it was read."""


class ObjectNotFoundError(JetStreamError):
    """The named object does not exist in the Object Store bucket."""


class ObjectCorruptedError(JetStreamError):
    """An object's bytes do not match its recorded SHA-256 digest or size."""


class UpdateNotAppliedError(JetStreamError):
    """The server accepted an update but kept a declared setting as it was.

    Some settings are forced by others (a stream with subject delete markers keeps
    roll-ups on, a sealed stream keeps discard 'new'). The other declared changes were made.

    Attributes:
        kept: field -> (value the server kept, value declared).
    """

    def __init__(self, message: str, *, kept: dict, **names) -> None:
        super().__init__(message, **names)
        self.kept = kept


class ServerAPIError(JetStreamError):
    """The JetStream API answered with an error not covered by a more specific class.

    Attributes:
        code: the HTTP-like status code of the API error.
        err_code: JetStream's own numeric error code.
    """

    def __init__(
        self, message: str, *, code: int | None = None, err_code: int | None = None, **names
    ) -> None:
        super().__init__(message, **names)
        self.code = code
        self.err_code = err_code


# JetStream API error codes (nats-server's `errors.json`) that map to a specific class.
STREAM_NOT_FOUND = 10059
CONSUMER_NOT_FOUND = 10014
NO_MESSAGE_FOUND = 10037
WRONG_LAST_SEQUENCE = 10071  # also for a missed last-subject-sequence expectation
WRONG_LAST_MSG_ID = 10070
EXPECTED_STREAM_MISMATCH = 10060
PUBLISH_EXPECTATION_CODES = frozenset(
    {WRONG_LAST_SEQUENCE, WRONG_LAST_MSG_ID, EXPECTED_STREAM_MISMATCH}
)


def translate_api_error(error: Exception, what: str, **names) -> JetStreamError:
    """Turns a nats-py JetStream API error into this module's class for its cause.

    Args:
        error: the nats-py exception.
        what: a short description of the failed operation, for the message
            (e.g. "add consumer 'bronze' to stream 'FILE_EVENTS'").
        **names: stream / consumer / bucket / key / seq the operation was about.
    """
    from nats.js import errors as nats_js_errors

    err_code = getattr(error, "err_code", None)
    code = getattr(error, "code", None)
    description = getattr(error, "description", None) or str(error)
    stream, consumer = names.get("stream"), names.get("consumer")
    if err_code == STREAM_NOT_FOUND:
        return StreamNotFoundError(
            f"cannot {what}: stream {stream!r} does not exist; create it (declare it in the "
            "topology and reconcile, or `client.streams.add(...)`) or fix the stream name",
            **names,
        )
    if err_code == CONSUMER_NOT_FOUND:
        return ConsumerNotFoundError(
            f"cannot {what}: stream {stream!r} has no consumer {consumer!r}; create it (declare "
            "it in the topology and reconcile, or `client.consumers.add(...)`) or fix the name",
            **names,
        )
    if err_code == NO_MESSAGE_FOUND:
        return MessageNotFoundError(f"cannot {what}: no such message ({description})", **names)
    if err_code in PUBLISH_EXPECTATION_CODES:
        return PublishExpectationError(
            f"cannot {what}: publish expectation not met ({description}); re-read the stream "
            "state and retry with the current expectation",
            **names,
        )
    if isinstance(error, nats_js_errors.ServiceUnavailableError):
        return JetStreamUnavailableError(
            f"cannot {what}: JetStream is not available ({description}); enable JetStream on "
            "the server (`-js` or a `jetstream {}` block) or check the domain / API prefix",
            **names,
        )
    if isinstance(error, TimeoutError):
        return RequestTimeoutError(
            f"cannot {what}: the server did not answer in time; check that JetStream is enabled "
            "and the server is healthy, or raise the request timeout",
            **names,
        )
    return ServerAPIError(f"cannot {what}: {description}", code=code, err_code=err_code, **names)
