"""Object Store call errors: a missing or a sealed bucket as this package's errors.

`guard` wraps every coroutine an `ObjectStoreBucket` runs (and the one `bind` runs), so a
missing bucket is a `BucketNotFoundError` saying how to create it, and a write to a sealed
bucket a `ServerAPIError` saying that sealing is permanent.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

import nats.errors
import nats.js.errors

from resources.jetstream.errors import STREAM_NOT_FOUND, BucketNotFoundError, ServerAPIError

T = TypeVar("T")
STREAM_SEALED = 10109  # JetStream API error code: invalid operation on sealed stream


async def guard(coro: Coroutine[Any, Any, T], what: str, bucket: str, name: str | None = None):
    """Awaits `coro`, raising a missing stream or a sealed one as this package's errors."""
    names = {"bucket": bucket, "key": name}
    try:
        return await coro
    except (nats.js.errors.NoStreamResponseError, nats.errors.NoRespondersError) as error:
        raise bucket_missing(bucket, what) from error
    except nats.js.errors.APIError as error:
        if error.err_code == STREAM_NOT_FOUND:
            raise bucket_missing(bucket, what) from error
        if error.err_code == STREAM_SEALED:
            raise ServerAPIError(
                f"cannot {what}: object store {bucket!r} is sealed, so nothing in it can change "
                "(sealing is permanent); write to another bucket",
                code=error.code,
                err_code=error.err_code,
                **names,
            ) from error
        raise


def bucket_missing(bucket: str, what: str) -> BucketNotFoundError:
    """The error for a call on a bucket that does not exist, saying how to create it."""
    return BucketNotFoundError(
        f"cannot {what}: object store {bucket!r} does not exist; create it (declare an "
        "ObjectStoreSpec in the topology and reconcile, or `client.create_object_store(...)`) "
        "or fix the bucket name",
        bucket=bucket,
    )
