"""Watching an Object Store bucket: `ObjectWatch`, the iterator `bucket.watch` returns.

It reads the bucket's meta messages from an ordered push consumer until its deadline, and
never blocks past it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from resources.jetstream.errors import JetStreamError
from resources.jetstream.objects.meta import ObjectInfo
from resources.jetstream.objects.transfer import next_msg

if TYPE_CHECKING:
    from resources.jetstream.objects.stream import ObjectStream


class ObjectWatch(Iterator[ObjectInfo]):
    """Object metas of one bucket as they are stored, until a deadline (`bucket.watch`).

    Examples:
        >>> with bucket.watch(timeout=60, updates_only=True) as watch:
        ...     for info in watch:
        ...         print(info.name, info.deleted)
    """

    def __init__(
        self, bucket: ObjectStream, sub: Any, deadline: float, *, ignore_deletes: bool
    ) -> None:
        self._bucket = bucket
        self._sub: Any = sub
        self._deadline = deadline  # time.monotonic()
        self._ignore_deletes = ignore_deletes

    def __next__(self) -> ObjectInfo:
        bucket = self._bucket
        while self._sub is not None and (left := self._deadline - time.monotonic()) > 0:
            msg = bucket._call(next_msg(self._sub, left), f"watch {bucket._where}", wait=left)
            if msg is not None:
                info = bucket._decode(msg, None)
                if not (self._ignore_deletes and info.deleted):
                    return info
        self.close()
        raise StopIteration

    def close(self) -> None:
        """Stops the watch (its ephemeral consumer goes away with the subscription)."""
        sub, self._sub = self._sub, None
        client = self._bucket._client
        if sub is not None and client.is_connected:  # never reconnect only to unsubscribe
            with contextlib.suppress(JetStreamError):
                self._bucket._call(sub.unsubscribe(), f"stop watching {self._bucket._where}")

    def __enter__(self) -> ObjectWatch:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
