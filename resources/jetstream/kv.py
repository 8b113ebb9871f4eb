"""Key-Value buckets: a synchronous `KeyValueBucket` over nats-py's `KeyValue`.

Every call runs on the client's loop through `client.run`, so nats-py errors become
`resources.jetstream.errors` classes that name the bucket and key. KV-specific nats-py errors
(wrong last sequence, deleted key, missing bucket) are caught by name and raised as
`RevisionConflictError`, `KeyNotFoundError` and `BucketNotFoundError`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

import nats.errors
import nats.js.errors
from nats.js.client import KV_PRE_TEMPLATE, KV_STREAM_TEMPLATE
from nats.js.kv import KV_MARKER_REASON, KV_OP, VALID_KEY_RE, KeyValue, StopIterSentinel

from resources.jetstream.errors import (
    STREAM_NOT_FOUND,
    BucketNotFoundError,
    InvalidArgumentError,
    JetStreamError,
    KeyNotFoundError,
    RevisionConflictError,
)
from resources.jetstream.streams import Storage, StreamState, validate_name

if TYPE_CHECKING:
    from resources.jetstream.buckets import KeyValueSpec
    from resources.jetstream.client import JetStreamClient

T = TypeVar("T")
_VALID_BUCKET_RE = re.compile(r"^[a-zA-Z0-9_-]+$")  # nats-py's VALID_BUCKET_RE
_WRONG_LAST_SEQUENCE = frozenset({10071, 10164})  # as in nats-py's KeyValue._update
_MARKER_OPS = {"MaxAge": "PURGE", "Purge": "PURGE", "Remove": "DEL"}  # server 2.11+ markers


class KvOperation(StrEnum):
    PUT = "PUT"
    DEL = "DEL"
    PURGE = "PURGE"


@dataclass(frozen=True)
class KvEntry:
    """One revision of a key: a value (`PUT`) or a tombstone (`DEL`, `PURGE`)."""

    bucket: str
    key: str
    value: bytes
    revision: int  # the stream sequence of this write
    created: dt.datetime  # UTC
    delta: int  # entries still pending after this one in a watch or history; 0 from get
    operation: KvOperation

    @classmethod
    def from_nats(cls, entry: KeyValue.Entry) -> KvEntry:
        return cls(
            bucket=entry.bucket,
            key=entry.key,
            value=entry.value or b"",
            revision=entry.revision or 0,
            created=entry.created or dt.datetime.fromtimestamp(0, dt.UTC),
            delta=entry.delta or 0,
            operation=KvOperation(entry.operation or KvOperation.PUT),
        )


@dataclass(frozen=True)
class KvStatus:
    """A bucket's configuration and counters at one moment."""

    bucket: str
    values: int  # stored entries, tombstones and older revisions included
    history: int  # revisions kept per key
    ttl: float  # seconds; 0 keeps values forever
    bytes: int
    storage: Storage
    max_value_size: int  # -1 is unlimited
    max_bytes: int  # -1 is unlimited
    replicas: int
    description: str | None


class KeyValueBucket:
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

    def __init__(self, client: JetStreamClient, bucket: str, *, direct: bool = False) -> None:
        self._client = client
        self.name = bucket
        self._stream = KV_STREAM_TEMPLATE.format(bucket=bucket)
        self._pre = KV_PRE_TEMPLATE.format(bucket=bucket)
        self._direct = direct

    def __repr__(self) -> str:
        return f"KeyValueBucket({self.name!r})"

    @property
    def _kv(self) -> KeyValue:
        # Built per call from `client.js`, so a reconnected client is picked up.
        return KeyValue(self.name, self._stream, self._pre, self._client.js, self._direct)

    def put(self, key: str, value: bytes) -> int:
        """Writes `value` under `key`, whatever is there.

        Returns:
            The new revision.

        Raises:
            InvalidArgumentError: a bad key, or a value that is not bytes.
            BucketNotFoundError: the bucket was destroyed.
        """
        _check_key(key, value=value)
        return self._call(self._kv.put(key, bytes(value)), "put", key)

    def create(self, key: str, value: bytes) -> int:
        """Writes `value` only if `key` has no value (never written, deleted or purged).

        Returns:
            The new revision.

        Raises:
            RevisionConflictError: the key already has a value.
        """
        _check_key(key, value=value)
        return self._call(self._kv.create(key, bytes(value)), "create", key, revision=0)

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
        _check_key(key, value=value)
        _check_revision(key, revision)
        coro = self._kv.update(key, bytes(value), last=revision)
        return self._call(coro, "update", key, revision=revision)

    def get(self, key: str, *, revision: int | None = None) -> KvEntry:
        """Reads the latest value of `key`, or its entry at `revision`.

        Raises:
            KeyNotFoundError: the key was never written, was deleted or purged, or `revision`
                is not a value of this key.
        """
        _check_key(key, revision=revision)
        return self._call(self._get(key, revision), "get", key)

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
        _check_key(key, revision=revision)
        self._call(self._kv.delete(key, last=revision), "delete", key, revision=revision)

    def purge(self, key: str) -> None:
        """Removes every revision of `key`, leaving one `PURGE` tombstone."""
        _check_key(key)
        self._call(self._kv.purge(key), "purge", key)

    def keys(self) -> list[str]:
        """Returns the keys that have a value, sorted; `[]` for an empty bucket."""
        return sorted(self._call(self._keys(), "list the keys of"))

    def history(self, key: str) -> list[KvEntry]:
        """Returns the kept revisions of `key`, oldest first, tombstones included.

        Raises:
            KeyNotFoundError: the key was never written (or all its revisions expired).
        """
        _check_key(key)
        entries = self._call(self._kv.history(key), "read the history of", key)
        return [KvEntry.from_nats(entry) for entry in entries]

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
        _check_key(keys, wildcards=True)
        if not 0 < timeout < float("inf"):
            raise InvalidArgumentError(f"watch {keys!r}: timeout must be > 0, got {timeout!r}")
        return self._watch(keys, timeout, include_history, ignore_deletes)

    def status(self) -> KvStatus:
        """Returns the bucket's configuration and counters."""
        info = self._call(self._client.js.stream_info(self._stream), "read the status of")
        state = StreamState.from_nats(info)
        spec = state.spec
        return KvStatus(
            bucket=self.name,
            values=state.messages,
            history=spec.max_msgs_per_subject,
            ttl=spec.max_age,
            bytes=state.bytes,
            storage=spec.storage,
            max_value_size=spec.max_msg_size,
            max_bytes=spec.max_bytes,
            replicas=spec.replicas,
            description=spec.description,
        )

    def destroy(self) -> None:
        """Deletes the bucket with every key and revision.

        Raises:
            BucketNotFoundError: the bucket does not exist (any more).
        """
        self._call(self._client.js.delete_key_value(self.name), "destroy")

    # -- internals -------------------------------------------------------------------------

    def _watch(self, keys: str, timeout: float, history: bool, no_deletes: bool):
        watch = self._kv.watch(keys, include_history=history, ignore_deletes=no_deletes)
        watcher = self._call(watch, f"watch {keys!r} in")
        deadline = time.monotonic() + timeout  # from the moment the subscription is ready
        try:
            while (remaining := deadline - time.monotonic()) > 0:
                update = self._call(
                    _next_update(watcher, remaining), f"watch {keys!r} in", wait=remaining
                )
                if isinstance(update, StopIterSentinel):
                    return
                if update is not None:  # None marks the end of the initial entries
                    yield KvEntry.from_nats(update)
        finally:
            if self._client.is_connected:  # never reconnect only to unsubscribe
                with contextlib.suppress(JetStreamError):
                    self._call(watcher.stop(), f"stop watching {keys!r} in")

    async def _get(self, key: str, revision: int | None) -> KvEntry:
        subject = f"{self._pre}{key}"
        where = {"seq": revision} if revision else {"subject": subject}
        try:
            msg = await self._client.js.get_msg(self._stream, direct=self._direct, **where)
        except nats.js.errors.NotFoundError:
            msg = None
        headers = (msg and msg.headers) or {}
        op = headers.get(KV_OP) or _MARKER_OPS.get(headers.get(KV_MARKER_REASON), "PUT")
        if msg is None or msg.subject != subject or op != KvOperation.PUT:
            at = f" at revision {revision!r}" if revision else ""
            raise KeyNotFoundError(
                f"key {key!r} has no value{at} in kv bucket {self.name!r} (never written, "
                "deleted or purged); put() it first, or use try_get() to get None",
                bucket=self.name,
                key=key,
                seq=revision,
            )
        created = msg.time or dt.datetime.fromtimestamp(0, dt.UTC)
        return KvEntry(self.name, key, msg.data or b"", msg.seq or 0, created, 0, KvOperation.PUT)

    async def _keys(self) -> list[str]:
        try:
            return await self._kv.keys()
        except nats.js.errors.NoKeysError:
            return []

    def _call(
        self,
        coro: Coroutine[Any, Any, T],
        verb: str,
        key: str | None = None,
        *,
        revision: int | None = None,
        wait: float | None = None,
    ) -> T:
        """Runs `coro` via `client.run`: "cannot <verb> key 'k' in kv bucket 'b': ..."."""
        where = f"kv bucket {self.name!r}"
        what = f"{verb} key {key!r} in {where}" if key is not None else f"{verb} {where}"
        guarded = _guard(coro, what, self.name, key, revision)
        timeout = None if wait is None else wait + self._client.settings.request_timeout
        return self._client.run(guarded, what=what, timeout=timeout, bucket=self.name, key=key)


async def _guard(coro, what, bucket, key=None, revision=None):
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
        raise _bucket_missing(bucket, what) from error
    except nats.js.errors.APIError as error:
        if error.err_code in _WRONG_LAST_SEQUENCE and revision is not None:  # delete(revision=)
            raise RevisionConflictError(
                f"cannot {what}: {conflict}", seq=revision, **names
            ) from error
        if error.err_code == STREAM_NOT_FOUND:
            raise _bucket_missing(bucket, what) from error
        raise


async def _next_update(watcher: KeyValue.KeyWatcher, timeout: float):
    try:
        return await watcher.updates(timeout=timeout)
    except nats.errors.TimeoutError:
        return KeyValue.KeyWatcher.STOP_ITER


def bind(client: JetStreamClient, bucket: str) -> KeyValueBucket:
    """Binds to an existing Key-Value bucket.

    Raises:
        InvalidArgumentError: a bad bucket name (before any I/O).
        BucketNotFoundError: no such bucket; the message says how to create it.
    """
    _check_bucket(bucket)
    stream = KV_STREAM_TEMPLATE.format(bucket=bucket)
    what = f"bind to kv bucket {bucket!r}"
    info = client.run(_guard(client.js.stream_info(stream), what, bucket), what=what, bucket=bucket)
    if (info.config.max_msgs_per_subject or 0) < 1:
        raise BucketNotFoundError(
            f"cannot {what}: stream {stream!r} exists but is not a kv bucket", bucket=bucket
        )
    return KeyValueBucket(client, bucket, direct=bool(info.config.allow_direct))


def create(client: JetStreamClient, spec: KeyValueSpec) -> KeyValueBucket:
    """Creates the bucket if it is missing (an existing one keeps its config), then binds.

    Raises:
        InvalidArgumentError: a bucket name nats-py would reject (before any I/O).
    """
    _check_bucket(spec.bucket)
    spec.ensure(client)
    return bind(client, spec.bucket)


def _bucket_missing(bucket: str, what: str) -> BucketNotFoundError:
    return BucketNotFoundError(
        f"cannot {what}: the bucket does not exist; create it with "
        f"`client.create_key_value(KeyValueSpec({bucket!r}))` or declare it in the topology "
        "and reconcile",
        bucket=bucket,
    )


def _check_bucket(bucket: str) -> None:
    validate_name("bucket", bucket)
    if not _VALID_BUCKET_RE.fullmatch(bucket):
        raise InvalidArgumentError(
            f"invalid kv bucket name {bucket!r}: use ASCII letters, digits, '-' and '_'"
        )


_NO_VALUE = object()


def _check_key(key: str, *, wildcards=False, value=_NO_VALUE, revision=None) -> None:
    """Checks a key (or a watch pattern), and the value and revision given with it."""
    tokens = key.split(".") if isinstance(key, str) and key else [""]
    allowed = {"*", ">"} if wildcards else set()
    bad = any(t not in allowed and not VALID_KEY_RE.fullmatch(t) for t in tokens)
    if bad or ">" in tokens[:-1]:
        raise InvalidArgumentError(
            f"invalid kv key {key!r}: use dot-separated tokens of letters, digits, '-', '_', "
            "'/' and '='" + (", with '*' for one token and a final '>'" if wildcards else ""),
            key=key if isinstance(key, str) else None,
        )
    if value is not _NO_VALUE and not isinstance(value, bytes | bytearray | memoryview):
        raise InvalidArgumentError(
            f"value for kv key {key!r} must be bytes, got {type(value).__name__} {value!r:.40}",
            key=key,
        )
    if revision is not None:
        _check_revision(key, revision)


def _check_revision(key: str, revision: int) -> None:
    if isinstance(revision, bool) or not isinstance(revision, int) or revision < 1:
        raise InvalidArgumentError(
            f"revision for kv key {key!r} must be an int >= 1, got {revision!r}"
            " (use create() for a key that must not exist)",
            key=key,
        )


__all__ = ["KeyValueBucket", "KvEntry", "KvOperation", "KvStatus", "bind", "create"]
