"""Watching Key-Value keys: the generator behind `KeyValueBucket.watch`.

It subscribes at the first `next()`, yields `KvEntry`s until its deadline, and stops its
nats-py `KeyWatcher` when it ends or is closed. Each wait is bounded by the time left.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import nats.errors
from nats.js.kv import KeyValue, StopIterSentinel

from resources.jetstream.errors import JetStreamError
from resources.jetstream.kv.entries import KvEntry

if TYPE_CHECKING:
    from resources.jetstream.kv.stream import KvStream


def watch_entries(
    bucket: KvStream, keys: str, timeout: float, history: bool, no_deletes: bool
) -> Iterator[KvEntry]:
    """Yields the entries of `keys` (see `KeyValueBucket.watch`, which checks the arguments).

    Args:
        bucket: the bucket watched; its calls translate errors and name it.
        keys: a key or a pattern.
        timeout: seconds the watch lasts, from the moment its subscription is ready.
        history: start with every kept revision, not only the latest.
        no_deletes: skip `DEL` and `PURGE` tombstones.
    """
    kv, what = bucket._kv, f"watch {keys!r} in"
    watcher = bucket._call(
        lambda: kv.watch(keys, include_history=history, ignore_deletes=no_deletes),
        what,
        repeatable=False,
    )
    deadline = time.monotonic() + timeout  # from the moment the subscription is ready
    try:
        while (remaining := deadline - time.monotonic()) > 0:
            update = bucket._call(
                lambda: next_update(watcher, remaining), what, repeatable=False, wait=remaining
            )
            if isinstance(update, StopIterSentinel):
                return
            if update is not None:  # None marks the end of the initial entries
                yield KvEntry.from_nats(update)
    finally:
        if bucket._client.is_connected:  # never reconnect only to unsubscribe
            with contextlib.suppress(JetStreamError):
                bucket._call(watcher.stop, f"stop watching {keys!r} in", repeatable=False)


async def next_update(watcher: KeyValue.KeyWatcher, timeout: float):
    """The watcher's next update; its stop sentinel when none arrives within `timeout`."""
    try:
        return await watcher.updates(timeout=timeout)
    except nats.errors.TimeoutError:
        return KeyValue.KeyWatcher.STOP_ITER
