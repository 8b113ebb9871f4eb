"""The stream under a Key-Value bucket, and how every bucket call runs.

`KvStream` is the base of `KeyValueBucket`: it holds the bucket's stream and subject prefix,
builds nats-py's `KeyValue` per call, and runs each call through `client.run` with retries
through leader elections (`_call`). `kv.watch` drives a watch on it.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import nats.errors
import nats.js.errors
from nats.js.client import KV_PRE_TEMPLATE, KV_STREAM_TEMPLATE
from nats.js.kv import KeyValue

from resources.jetstream.errors import STREAM_NOT_FOUND
from resources.jetstream.kv.entries import KvOperation, stored_operation
from resources.jetstream.kv.guard import WRONG_LAST_SEQUENCE, guard

if TYPE_CHECKING:
    from resources.jetstream.core.session import Session

T = TypeVar("T")
DELETED = object()  # what a delete at a revision writes, for reading a repeat back


class KvStream:
    """A Key-Value bucket's stream and the runner of its calls (the base of `KeyValueBucket`)."""

    def __init__(self, client: Session, bucket: str, *, direct: bool = False) -> None:
        self._client = client
        self.name = bucket
        self._stream = KV_STREAM_TEMPLATE.format(bucket=bucket)
        self._pre = KV_PRE_TEMPLATE.format(bucket=bucket)
        self._direct = direct

    @property
    def _kv(self) -> KeyValue:
        # Built per call from `client.js`, so a reconnected client is picked up.
        return KeyValue(self.name, self._stream, self._pre, self._client.js, self._direct)

    def _call(
        self,
        attempt: Callable[[], Coroutine[Any, Any, T]],
        verb: str,
        key: str | None = None,
        *,
        revision: int | None = None,
        value: bytes | object | None = None,
        repeatable: bool = True,
        wait: float | None = None,
    ) -> T:
        """Runs `attempt()` via `client.run`, retried through leader elections (within the
        client's retry budget): "cannot <verb> key 'k' in kv bucket 'b': ...".

        A compare-and-set (`value` given: the bytes written, or `DELETED`) that loses after
        a try timed out reads the key back: if the timed-out try had landed, the key holds
        `value` (or a tombstone) and the call succeeded.
        """
        where = f"kv bucket {self.name!r}"
        what = f"{verb} key {key!r} in {where}" if key is not None else f"{verb} {where}"
        names = {"bucket": self.name, "key": key}
        timed_out = False

        async def one_try() -> T:
            nonlocal timed_out
            try:
                return await attempt()
            except (nats.errors.TimeoutError, TimeoutError):
                timed_out = True
                raise

        async def with_retries() -> T:
            try:
                return await self._client.retrying(
                    one_try, what=what, repeatable=repeatable, gone=self._gone, **names
                )
            except (nats.js.errors.KeyWrongLastSequenceError, nats.js.errors.APIError) as error:
                conflict = isinstance(error, nats.js.errors.KeyWrongLastSequenceError) or (
                    getattr(error, "err_code", None) in WRONG_LAST_SEQUENCE
                )
                if conflict and timed_out and value is not None and key is not None:
                    landed = await self._landed(key, value)
                    if landed is not None:
                        return landed  # type: ignore[return-value]
                raise

        guarded = guard(with_retries(), what, self.name, key, revision)
        timeout = self._client.retry_timeout + (wait or 0)
        return self._client.run(guarded, what=what, timeout=timeout, **names)

    async def _gone(self) -> bool:
        """Whether the bucket's stream does not exist (asked after "no responders")."""
        jsm = self._client.jsm
        subject = f"{jsm._prefix}.STREAM.INFO.{self._stream}"
        try:
            await jsm._api_request(subject, timeout=self._client.settings.request_timeout)
        except nats.js.errors.APIError as error:
            return getattr(error, "err_code", None) == STREAM_NOT_FOUND
        except (nats.errors.Error, TimeoutError):
            return False
        return False

    async def _landed(self, key: str, value: bytes | object) -> int | None:
        """The revision of `key` if its latest entry is the write `value` (or, for
        `DELETED`, a tombstone); None if the key holds anything else."""
        try:
            msg = await self._client.js.get_msg(
                self._stream, subject=f"{self._pre}{key}", direct=self._direct
            )
        except nats.js.errors.NotFoundError:
            return None
        op = stored_operation(msg.headers or {})
        if value is DELETED:
            return (msg.seq or 0) if op != KvOperation.PUT else None
        return (msg.seq or 0) if op == KvOperation.PUT and msg.data == value else None
