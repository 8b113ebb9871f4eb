"""Key-Value buckets: a synchronous `KeyValueBucket` over nats-py's `KeyValue`.

Every call runs on the session's loop through `KvStream._call` (`stream.py`), so nats-py
errors become `resources.jetstream.errors` classes that name the bucket and key. KV-specific
nats-py errors (wrong last sequence, deleted key, missing bucket) are caught by name in
`guard.py` and raised as `RevisionConflictError`, `KeyNotFoundError` and
`BucketNotFoundError`.

The values handed back (`KvEntry`, `KvOperation`, `KvStatus`) live in `entries.py`;
arguments are checked by `checks.py`, and `watch` is driven by `watch.py`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import TYPE_CHECKING

import nats.errors
import nats.js.errors
from nats.js.client import KV_STREAM_TEMPLATE

from resources.jetstream.errors import (
    BucketNotFoundError,
    InvalidArgumentError,
    KeyNotFoundError,
)
from resources.jetstream.kv.checks import check_bucket, check_key, check_revision
from resources.jetstream.kv.entries import KvEntry, KvOperation, KvStatus, stored_operation
from resources.jetstream.kv.guard import guard
from resources.jetstream.kv.stream import DELETED, KvStream
from resources.jetstream.kv.watch import watch_entries
from resources.jetstream.streams.state import StreamState

NO_MESSAGE_FOUND = 10037  # JSNoMessageFoundErr: no message at or after the sequence

if TYPE_CHECKING:
    from resources.jetstream.core.session import Session
    from resources.jetstream.kv.spec import KeyValueSpec


class KeyValueBucket(KvStream):
    """A bound Key-Value bucket with a synchronous API (`client.key_value(name)`).

    `get` raises `KeyNotFoundError` for a key without a value (never written, deleted or
    purged); `try_get` returns None instead.

    Examples:
        >>> bucket = js.create_key_value(KeyValueSpec("lakehouse-checkpoints", history=5))
        >>> rev = bucket.put("bronze.file_events", b"42")
        >>> bucket.update("bronze.file_events", b"57", revision=rev)
        >>> bucket.get("bronze.file_events").value
        b'57'
        >>> for entry in bucket.watch("bronze.>", timeout=5):
        ...     print(entry.key, entry.operation, entry.value)
    """

    def __repr__(self) -> str:
        return f"KeyValueBucket({self.name!r})"

    def put(self, key: str, value: bytes) -> int:
        """Writes `value` under `key`, whatever is there.

        Returns:
            The new revision.

        Raises:
            InvalidArgumentError: a bad key, or a value that is not bytes.
            BucketNotFoundError: the bucket was destroyed.
        """
        check_key(key, value=value)
        return self._call(lambda: self._kv.put(key, bytes(value)), "put", key)

    def create(self, key: str, value: bytes) -> int:
        """Writes `value` only if `key` has no value (never written, deleted or purged).

        Returns:
            The new revision.

        Raises:
            RevisionConflictError: the key already has a value.
        """
        check_key(key, value=value)
        data = bytes(value)
        return self._call(lambda: self._kv.create(key, data), "create", key, revision=0, value=data)

    def update(self, key: str, value: bytes, *, revision: int) -> int:
        """Writes `value` only if `key`'s latest revision is still `revision` (compare-and-set).

        Args:
            key: the key.
            value: the new value.
            revision: the revision last read (from `get`, `put`, ...); `create` a new key.

        Returns:
            The new revision.

        Raises:
            RevisionConflictError: the key was written or deleted since `revision`; its `seq`
                is the expected revision.
        """
        check_key(key, value=value)
        check_revision(key, revision)
        data = bytes(value)
        return self._call(
            lambda: self._kv.update(key, data, last=revision),
            "update",
            key,
            revision=revision,
            value=data,
        )

    def compare_and_set(self, key: str, value: bytes, *, revision: int | None) -> int:
        """Writes `value` if `key` is still as it was read: at `revision`, or without a value
        when `revision` is None (then it is `create`, else `update`).

        Returns:
            The new revision.

        Raises:
            RevisionConflictError: the key moved since it was read.
        """
        if revision is None:
            return self.create(key, value)
        return self.update(key, value, revision=revision)

    def get(self, key: str, *, revision: int | None = None) -> KvEntry:
        """Reads the latest value of `key`, or its entry at `revision`.

        Raises:
            KeyNotFoundError: the key was never written, was deleted or purged, or `revision`
                is not a value of this key.
        """
        check_key(key, revision=revision)
        return self._call(lambda: self._get(key, revision), "get", key)

    def try_get(self, key: str) -> KvEntry | None:
        """Like `get`, but returns None when the key has no value."""
        try:
            return self.get(key)
        except KeyNotFoundError:
            return None

    def delete(self, key: str, *, revision: int | None = None) -> None:
        """Marks `key` deleted with a `DEL` tombstone (its history keeps earlier revisions).

        Args:
            key: the key.
            revision: if given, delete only if the latest revision is still this one.

        Raises:
            RevisionConflictError: `revision` is given and the key was written since.
        """
        check_key(key, revision=revision)
        self._call(
            lambda: self._kv.delete(key, last=revision),
            "delete",
            key,
            revision=revision,
            value=None if revision is None else DELETED,
        )

    def purge(self, key: str) -> None:
        """Removes every revision of `key`, leaving one `PURGE` tombstone."""
        check_key(key)
        self._call(lambda: self._kv.purge(key), "purge", key)

    def keys(self) -> list[str]:
        """Returns the keys that have a value, sorted; `[]` for an empty bucket."""
        return sorted(self._call(self._keys, "list the keys of"))

    def history(self, key: str) -> list[KvEntry]:
        """Returns the kept revisions of `key`, oldest first, tombstones included.

        Raises:
            KeyNotFoundError: the key was never written (or all its revisions expired).
        """
        check_key(key)
        found = self._call(lambda: self._revisions(key), "read the history of", key)
        return [
            KvEntry(
                bucket=self.name,
                key=key,
                value=msg.data or b"",
                revision=msg.seq or 0,
                created=msg.time or dt.datetime.fromtimestamp(0, dt.timezone.utc),
                delta=len(found) - 1 - index,
                operation=KvOperation(stored_operation(msg.headers or {})),
            )
            for index, msg in enumerate(found)
        ]

    async def _revisions(self, key: str) -> list:
        """Every kept message of `key`, oldest first, read one by one with "next message
        for this subject from sequence n".

        Not nats-py's `KeyValue.history`: that one is a watch, which ends at a marker it
        may put before the first message arrives on a loaded machine (the consumer's
        pending count is already 0 while the delivery is still in flight), so a key with
        revisions was read as never written.
        """
        subject = f"{self._pre}{key}"
        found = []
        seq = 1
        while True:
            try:
                msg = await self._client.js.get_msg(
                    self._stream, seq=seq, subject=subject, next=True, direct=self._direct
                )
            except nats.js.errors.NotFoundError as error:
                if error.err_code not in (None, NO_MESSAGE_FOUND):  # None: a direct get's 404
                    raise  # the bucket's stream is gone: `guard` says so
                if not found:
                    raise nats.js.errors.NoKeysError from error  # `guard`: key not found
                return found
            found.append(msg)
            seq = (msg.seq or seq) + 1

    def watch(
        self,
        keys: str = ">",
        *,
        timeout: float,
        include_history: bool = False,
        ignore_deletes: bool = False,
    ) -> Iterator[KvEntry]:
        """Yields entries of matching keys as they are written, for `timeout` seconds.

        The watch starts at the first `next()`: it yields the latest entry of each matching
        key (every kept revision with `include_history`), then each write as it happens, and
        ends `timeout` seconds after its subscription is ready, or when the iterator is closed.

        Args:
            keys: a key, or a pattern with `*` for one token and a final `>` for the rest.
            timeout: seconds the watch lasts once subscribed (subscribing is bounded by the
                request timeout).
            include_history: start with every kept revision, not only the latest.
            ignore_deletes: skip `DEL` and `PURGE` tombstones.

        Raises:
            InvalidArgumentError: a bad pattern, or a timeout not positive and finite.
        """
        check_key(keys, wildcards=True)
        if not 0 < timeout < float("inf"):
            raise InvalidArgumentError(f"watch {keys!r}: timeout must be > 0, got {timeout!r}")
        return watch_entries(self, keys, timeout, include_history, ignore_deletes)

    def status(self) -> KvStatus:
        """Returns the bucket's configuration and counters."""
        jsm, timeout = self._client.jsm, self._client.settings.request_timeout
        subject = f"{jsm._prefix}.STREAM.INFO.{self._stream}"
        # its errors name the bucket
        info = self._call(lambda: jsm._api_request(subject, timeout=timeout), "read the status of")
        return KvStatus.from_state(self.name, StreamState.from_json(info))

    def destroy(self) -> None:
        """Deletes the bucket with every key and revision.

        Raises:
            BucketNotFoundError: the bucket does not exist (any more).
        """
        self._call(lambda: self._client.js.delete_key_value(self.name), "destroy", repeatable=False)

    # -- internals -------------------------------------------------------------------------

    async def _get(self, key: str, revision: int | None) -> KvEntry:
        subject = f"{self._pre}{key}"
        where = {"seq": revision} if revision else {"subject": subject}
        try:
            msg = await self._client.js.get_msg(self._stream, direct=self._direct, **where)
        except nats.js.errors.NotFoundError:
            msg = None
        op = stored_operation((msg and msg.headers) or {})
        if msg is None or msg.subject != subject or op != KvOperation.PUT:
            at = f" at revision {revision!r}" if revision else ""
            raise KeyNotFoundError(
                f"key {key!r} has no value{at} in kv bucket {self.name!r} (never written, "
                "deleted or purged); put() it first, or use try_get() to get None",
                bucket=self.name,
                key=key,
                seq=revision,
            )
        created = msg.time or dt.datetime.fromtimestamp(0, dt.timezone.utc)
        return KvEntry(self.name, key, msg.data or b"", msg.seq or 0, created, 0, KvOperation.PUT)

    async def _keys(self) -> list[str]:
        try:
            return await self._kv.keys()
        except nats.js.errors.NoKeysError:
            return []


def bind(client: Session, bucket: str) -> KeyValueBucket:
    """Binds to an existing Key-Value bucket.

    Reads of a replicated bucket (R3) go through its leader, so a read sees every write
    acknowledged before it; a one-replica bucket is read with direct gets.

    Raises:
        InvalidArgumentError: a bad bucket name (before any I/O).
        BucketNotFoundError: no such bucket; the message says how to create it.
    """
    check_bucket(bucket)
    stream = KV_STREAM_TEMPLATE.format(bucket=bucket)
    what = f"bind to kv bucket {bucket!r}"
    retried = client.retrying(lambda: client.js.stream_info(stream), what=what, bucket=bucket)
    info = client.run(
        guard(retried, what, bucket), what=what, timeout=client.retry_timeout, bucket=bucket
    )
    if (info.config.max_msgs_per_subject or 0) < 1:
        raise BucketNotFoundError(
            f"cannot {what}: stream {stream!r} exists but is not a kv bucket", bucket=bucket
        )
    # A direct get may be answered by any replica, and a follower that has not yet applied
    # the latest write answers with the value before it. Checkpoints, leases and watermarks
    # need to read their own writes, so a replicated bucket is read through its leader.
    replicated = (info.config.num_replicas or 1) > 1
    return KeyValueBucket(client, bucket, direct=bool(info.config.allow_direct) and not replicated)


def create(client: Session, spec: KeyValueSpec) -> KeyValueBucket:
    """Creates the bucket if it is missing (an existing one keeps its config), then binds.

    Raises:
        InvalidArgumentError: a bucket name nats-py would reject (before any I/O).
    """
    check_bucket(spec.bucket)
    spec.ensure(client)
    return bind(client, spec.bucket)


__all__ = ["KeyValueBucket", "bind", "create"]
