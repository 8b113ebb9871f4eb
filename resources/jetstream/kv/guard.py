"""Key-Value call errors: nats-py's KV errors, caught by name, as this package's classes.

`guard` wraps every coroutine a `KeyValueBucket` runs: a wrong last sequence becomes
`RevisionConflictError`, a missing or deleted key `KeyNotFoundError`, and a missing bucket
`BucketNotFoundError` saying how to create it. "No responders" reaches `guard` only once the
bucket's stream is known not to exist: on a cluster it also means "no leader right now", and
`KeyValueBucket._call` retries that (then raises `ClusterUnavailableError`).
"""

from __future__ import annotations

import nats.errors
import nats.js.errors

from resources.jetstream.errors import (
    STREAM_NOT_FOUND,
    BucketNotFoundError,
    KeyNotFoundError,
    RevisionConflictError,
)

WRONG_LAST_SEQUENCE = frozenset({10071, 10164})  # as in nats-py's KeyValue._update


async def guard(coro, what, bucket, key=None, revision=None):
    """Awaits `coro`, raising nats-py's KV errors (caught by name) as this package's classes."""
    names = {"bucket": bucket, "key": key}
    if revision == 0:
        conflict = "the key already exists; update() it with its revision, or put() over it"
    else:
        conflict = f"expected revision {revision!r}, but the key changed since; get() it, retry"
    try:
        return await coro
    except nats.js.errors.KeyWrongLastSequenceError as error:
        raise RevisionConflictError(f"cannot {what}: {conflict}", seq=revision, **names) from error
    except (
        nats.js.errors.KeyNotFoundError,
        nats.js.errors.KeyDeletedError,
        nats.js.errors.NoKeysError,  # history(): not a single revision
    ) as error:
        message = f"cannot {what}: the key does not exist (never written, or deleted / purged)"
        raise KeyNotFoundError(message, **names) from error
    except (
        nats.js.errors.BucketNotFoundError,
        nats.js.errors.NoStreamResponseError,  # a publish that no stream captured
        nats.errors.NoRespondersError,  # a direct get that no stream served
    ) as error:
        raise bucket_missing(bucket, what) from error
    except nats.js.errors.APIError as error:
        if error.err_code in WRONG_LAST_SEQUENCE and revision is not None:  # delete(revision=)
            raise RevisionConflictError(
                f"cannot {what}: {conflict}", seq=revision, **names
            ) from error
        if error.err_code == STREAM_NOT_FOUND:
            raise bucket_missing(bucket, what) from error
        raise


def bucket_missing(bucket: str, what: str) -> BucketNotFoundError:
    """The error for a call on a bucket that does not exist, saying how to create it."""
    return BucketNotFoundError(
        f"cannot {what}: the bucket does not exist; create it with "
        f"`client.create_key_value(KeyValueSpec({bucket!r}))` or declare it in the topology "
        "and reconcile",
        bucket=bucket,
    )
