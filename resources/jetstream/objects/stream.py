"""A bucket's stream `OBJ_<bucket>` as the Object Store uses it: calls, metas and purges.

`ObjectStream` is the base of `ObjectStoreBucket` (through `ObjectPuts` and `ObjectGets`):
it runs every call on the client's loop with errors translated (`guard.py`), reads,
publishes, lists and decodes the meta messages on `$O.<bucket>.M.>`, seals the stream, and
purges chunks that no meta refers to any more.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Coroutine
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from nats.js import api
from nats.js.kv import MSG_ROLLUP_SUBJECT
from nats.js.object_store import OBJ_ALL_META_PRE_TEMPLATE, OBJ_STREAM_TEMPLATE

from resources.jetstream.errors import JetStreamError, ObjectCorruptedError
from resources.jetstream.objects import transfer
from resources.jetstream.objects.guard import STREAM_SEALED, guard
from resources.jetstream.objects.meta import ObjectInfo, meta_subject
from resources.jetstream.objects.transfer import get_msg

if TYPE_CHECKING:
    from resources.jetstream.core.session import Session

T = TypeVar("T")
log = logging.getLogger("resources.jetstream.objects")  # one logger for the Object Store


class ObjectStream:
    """The stream behind one Object Store bucket; `ObjectStoreBucket` builds on it."""

    def __init__(self, client: Session, bucket: str, *, direct: bool = True) -> None:
        self._client = client
        self.name = bucket
        self._stream = OBJ_STREAM_TEMPLATE.format(bucket=bucket)
        self._direct = direct  # the stream serves direct gets (allow_direct)
        self._where = f"object store {bucket!r}"

    def _find(self, name: str) -> ObjectInfo | None:
        """The latest meta of `name`, deleted or not; None if there is none."""
        return self._call(self._last_meta(name), f"read object {name!r} in {self._where}", name)

    def _publish_meta(self, info: ObjectInfo, what: str) -> ObjectInfo:
        """Publishes `info` as the name's only meta; returns it as stored (with its time)."""
        subject = meta_subject(self.name, info.name)
        payload = json.dumps(info.to_wire()).encode()
        headers = {api.Header.ROLLUP: MSG_ROLLUP_SUBJECT}
        js, jsm = self._client.js, self._client.jsm
        ack = self._call(js.publish(subject, payload, headers=headers), what, info.name)
        stored = self._call(
            get_msg(jsm, self._stream, seq=ack.seq, direct=self._direct), what, info.name
        )
        if stored is None:  # already replaced by a newer put
            return replace(info, modified=dt.datetime.now(dt.timezone.utc))
        return self._decode(stored, info.name)

    async def _last_meta(self, name: str) -> ObjectInfo | None:
        subject = meta_subject(self.name, name)
        jsm = self._client.jsm
        msg = await get_msg(jsm, self._stream, subject=subject, direct=self._direct)
        return None if msg is None else self._decode(msg, name)

    async def _list(self) -> list[ObjectInfo]:
        all_meta = OBJ_ALL_META_PRE_TEMPLATE.format(bucket=self.name)
        if await get_msg(self._client.jsm, self._stream, subject=all_meta) is None:
            return []
        sub = await self._subscribe(api.DeliverPolicy.LAST_PER_SUBJECT)
        infos = []
        try:
            while True:  # each wait is bounded by the request timeout
                msg = await sub.next_msg(timeout=self._client.settings.request_timeout)
                infos.append(self._decode(msg, None))
                if msg.metadata.num_pending == 0:
                    return infos
        finally:
            await sub.unsubscribe()

    async def _subscribe(self, policy: api.DeliverPolicy):
        all_meta = OBJ_ALL_META_PRE_TEMPLATE.format(bucket=self.name)
        js = self._client.js
        return await js.subscribe(
            all_meta, stream=self._stream, ordered_consumer=True, deliver_policy=policy
        )

    async def _seal(self) -> None:
        jsm = self._client.jsm
        info = await jsm.stream_info(self._stream)
        info.config.sealed = True
        await jsm.update_stream(info.config)

    def _decode(self, msg: Any, name: str | None) -> ObjectInfo:
        """An `ObjectInfo` from a meta message (a stored message or a delivered one)."""
        modified = getattr(msg, "time", None)
        if modified is None and getattr(msg, "reply", None):
            modified = msg.metadata.timestamp
        try:
            return ObjectInfo.from_wire(json.loads(msg.data), modified)
        except (ValueError, TypeError, AttributeError) as error:
            raise ObjectCorruptedError(
                f"the meta on {msg.subject!r} in {self._where} is not valid object JSON "
                f"({error}); delete the object or put it again",
                bucket=self.name,
                key=name,
            ) from error

    def _purge_quietly(self, subject: str) -> None:
        """Purges chunks that are no longer referenced; a failure is logged, not raised."""
        try:
            coro = self._client.jsm.purge_stream(self._stream, subject=subject)
            self._call(coro, f"purge {subject!r} in {self._where}")
        except JetStreamError as error:
            if getattr(error, "err_code", None) != STREAM_SEALED:  # sealed: nothing was stored
                log.warning("left unreferenced chunks on %r: %s", subject, error)

    def _runner(self, what: str, name: str) -> transfer.Runner:
        return lambda coro: self._call(coro, what, name)

    def _call(
        self,
        coro: Coroutine[Any, Any, T],
        what: str,
        name: str | None = None,
        *,
        wait: float | None = None,
    ) -> T:
        timeout = None if wait is None else wait + self._client.settings.request_timeout
        guarded = guard(coro, what, self.name, name)
        return self._client.run(guarded, what=what, timeout=timeout, bucket=self.name, key=name)
