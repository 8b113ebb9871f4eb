"""Object Store buckets: a synchronous `ObjectStoreBucket` that speaks ADR-20 itself.

A bucket is the stream `OBJ_<bucket>`. Each object is a run of chunks (`object_transfer.py`
moves them) plus one meta message on `$O.<bucket>.M.<base64url(name)>`, published with a
`Nats-Rollup: sub` header so only the latest meta of a name is kept. The meta is ADR-20's
JSON with Go's field names (name, nuid, size, chunks, digest, deleted, options.link,
headers as lists, RFC 3339 mtime), so other NATS clients share these buckets; the tests
check this against nats-py's own `ObjectStore`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import logging
import math
import os
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

import nats.errors
import nats.js.errors
from nats.js import api
from nats.js.kv import MSG_ROLLUP_SUBJECT
from nats.js.object_store import (
    OBJ_ALL_META_PRE_TEMPLATE,
    OBJ_STREAM_TEMPLATE,
)

from resources.jetstream import object_transfer
from resources.jetstream.errors import (
    STREAM_NOT_FOUND,
    BucketNotFoundError,
    InvalidArgumentError,
    JetStreamError,
    ObjectCorruptedError,
    ObjectNotFoundError,
    ServerAPIError,
)
from resources.jetstream.object_meta import (
    ObjectInfo,
    ObjectLink,
    ObjectStoreStatus,
    check_bucket,
    check_name,
    check_put,
    meta_subject,
)
from resources.jetstream.object_transfer import DEFAULT_CHUNK_SIZE, get_msg, next_msg

if TYPE_CHECKING:
    from resources.jetstream.buckets import ObjectStoreSpec
    from resources.jetstream.client import JetStreamClient

T = TypeVar("T")
log = logging.getLogger(__name__)
STREAM_SEALED = 10109  # JetStream API error code: invalid operation on sealed stream


class ObjectStoreBucket:
    """A bound Object Store bucket with a synchronous API (`client.object_store(name)`).

    Objects stream in and out in chunks (128 KiB by default), so none sits whole in memory
    (except in `put_bytes` / `get_bytes`). Every read checks the size, the chunk count and
    the SHA-256 digest, and raises `ObjectCorruptedError` rather than return bad bytes.

    Examples:
        >>> bucket = js.create_object_store(ObjectStoreSpec("lakehouse-artifacts"))
        >>> bucket.put_file("reports/2024-06-01.html", "/tmp/report.html").size
        48213
        >>> bucket.add_link("reports/latest.html", "reports/2024-06-01.html")
        >>> bucket.get_file("reports/latest.html", "/tmp/latest.html").name
        'reports/2024-06-01.html'
        >>> [info.name for info in bucket.list()]
        ['reports/2024-06-01.html', 'reports/latest.html']
    """

    def __init__(self, client: JetStreamClient, bucket: str, *, direct: bool = True) -> None:
        self._client = client
        self.name = bucket
        self._stream = OBJ_STREAM_TEMPLATE.format(bucket=bucket)
        self._direct = direct  # the stream serves direct gets (allow_direct)
        self._where = f"object store {bucket!r}"

    def __repr__(self) -> str:
        return f"ObjectStoreBucket({self.name!r})"

    # -- put -------------------------------------------------------------------------------

    def put_bytes(
        self,
        name: str,
        data: bytes,
        *,
        description: str | None = None,
        headers: Mapping[str, str] | None = None,
        metadata: Mapping[str, str] | None = None,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ) -> ObjectInfo:
        """Stores `data` as object `name`, replacing any object of that name.

        Args:
            name: the object name (any non-empty string, e.g. "reports/2024-06-01.html").
            data: the bytes to store.
            description: see `put_stream`, as are `headers`, `metadata` and `chunk_size`.

        Returns:
            The stored object's info.
        """
        if not isinstance(data, bytes | bytearray | memoryview):
            raise InvalidArgumentError(f"object {name!r}: data must be bytes, got {type(data)!r}")
        options = {"description": description, "headers": headers, "metadata": metadata}
        return self.put_stream(name, io.BytesIO(data), **options, chunk_size=chunk_size)

    def put_file(
        self,
        name: str,
        path: str | os.PathLike[str],
        *,
        description: str | None = None,
        headers: Mapping[str, str] | None = None,
        metadata: Mapping[str, str] | None = None,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ) -> ObjectInfo:
        """Streams the file at `path` into object `name`, one chunk at a time.

        Args:
            name: the object name.
            path: the file to read.
            description: see `put_stream`, as are `headers`, `metadata` and `chunk_size`.

        Returns:
            The stored object's info.

        Raises:
            FileNotFoundError: `path` does not exist (nothing is sent).
        """
        options = {"description": description, "headers": headers, "metadata": metadata}
        check_put(name, **options, chunk_size=chunk_size)
        with open(path, "rb") as reader:
            return self.put_stream(name, reader, **options, chunk_size=chunk_size)

    def put_stream(
        self,
        name: str,
        reader: BinaryIO,
        *,
        description: str | None = None,
        headers: Mapping[str, str] | None = None,
        metadata: Mapping[str, str] | None = None,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ) -> ObjectInfo:
        """Streams a binary reader into object `name`, replacing any object of that name.

        `reader.read` is never asked for more than `chunk_size` bytes, and at most 8 chunks
        are in flight. The new meta is published only after every chunk is stored, so
        readers see the old object or the new one, never a mix; the old chunks are purged
        afterwards, and the new ones if the put fails.

        Args:
            name: the object name.
            reader: a blocking binary stream (read to its end, not closed).
            description: a free-text description.
            headers: NATS-style headers kept with the object.
            metadata: free-form string metadata kept with the object.
            chunk_size: bytes per chunk (at most the server's max_payload).

        Returns:
            The stored object's info.

        Raises:
            InvalidArgumentError: a bad name, option or reader (before any I/O).
            ServerAPIError: the stream refused a chunk (sealed bucket, max_bytes reached, ...).
        """
        check_put(name, description, headers, metadata, chunk_size)
        if not callable(getattr(reader, "read", None)) or isinstance(reader, io.TextIOBase):
            raise InvalidArgumentError(
                f"object {name!r}: pass a binary reader (open(path, 'rb'), io.BytesIO, ...), "
                f"got {type(reader)!r}"
            )
        if chunk_size > self._client.nc.max_payload:
            raise InvalidArgumentError(
                f"object {name!r}: chunk_size {chunk_size!r} exceeds the server's max_payload "
                f"({self._client.nc.max_payload} bytes); use a smaller chunk_size"
            )
        what = f"put object {name!r} in {self._where}"
        previous = None
        with contextlib.suppress(ObjectCorruptedError):  # a put may replace a corrupt meta
            previous = self._find(name)
        nuid = object_transfer.new_nuid()
        subject = object_transfer.chunk_subject(self.name, nuid)
        try:
            run, timeout = self._runner(what, name), self._client.settings.request_timeout
            size, chunks, digest = object_transfer.upload(
                run, self._client.nc, subject, reader, chunk_size, timeout
            )
            info = ObjectInfo(
                bucket=self.name,
                name=name,
                size=size,
                chunks=chunks,
                digest=digest,
                modified=None,
                description=description or None,
                headers=dict(headers or {}),
                metadata=dict(metadata or {}),
                chunk_size=chunk_size,
                nuid=nuid,
            )
            stored = self._publish_meta(info, what)
        except BaseException:
            self._purge_quietly(subject)
            raise
        if previous is not None and previous.nuid and not previous.deleted:
            self._purge_quietly(object_transfer.chunk_subject(self.name, previous.nuid))
        return stored

    # -- get -------------------------------------------------------------------------------

    def get_bytes(self, name: str) -> bytes:
        """Reads object `name` (following a link) into memory, checked against its digest.

        Raises:
            ObjectNotFoundError: no such object (or it was deleted).
            ObjectCorruptedError: a chunk is missing or altered.
        """
        buffer = bytearray()
        self.get_stream(name, buffer)
        return bytes(buffer)

    def get_file(self, name: str, path: str | os.PathLike[str]) -> ObjectInfo:
        """Streams object `name` (following a link) into the file at `path`.

        The bytes go to a temporary file beside `path` that replaces `path` only once the
        size and digest check out; on any error `path` is left as it was.

        Returns:
            The info of the object read (the link's target for a link).

        Raises:
            ObjectNotFoundError: no such object (or it was deleted).
            ObjectCorruptedError: a chunk is missing or altered.
        """
        check_name(name)
        target = Path(path)
        if target.is_dir() or not target.parent.is_dir():
            raise InvalidArgumentError(
                f"cannot write object {name!r} to {str(target)!r}: give a file path in an "
                "existing directory"
            )
        source, info = self._resolve(name)
        with object_transfer.replace_on_success(target) as out:
            source._fetch(info, out.write)
        return info

    def get_stream(self, name: str, writer: BinaryIO | bytearray) -> ObjectInfo:
        """Streams object `name` (following a link) into a binary writer, chunk by chunk.

        The writer sees each chunk before the digest can be checked: on
        `ObjectCorruptedError` it has received part of the object. Use `get_file` for
        all-or-nothing.

        Returns:
            The info of the object read (the link's target for a link).
        """
        check_name(name)
        write = writer.extend if isinstance(writer, bytearray) else getattr(writer, "write", None)
        if not callable(write) or isinstance(writer, io.TextIOBase):
            raise InvalidArgumentError(
                f"cannot read object {name!r} into {type(writer)!r}: pass a binary writer"
            )
        source, info = self._resolve(name)
        source._fetch(info, write)
        return info

    def info(self, name: str, *, show_deleted: bool = False) -> ObjectInfo:
        """Returns the meta of object `name` (of the link itself for a link).

        Raises:
            ObjectNotFoundError: no such object, or it was deleted and not `show_deleted`.
        """
        check_name(name)
        info = self._find(name)
        if info is None or (info.deleted and not show_deleted):
            raise ObjectNotFoundError(
                f"object store {self.name!r} has no object {name!r} (never put, or deleted); "
                "put it first, or check the name with list()",
                bucket=self.name,
                key=name,
            )
        return info

    def list(self, *, show_deleted: bool = False) -> list[ObjectInfo]:
        """Returns the meta of every object and link, sorted by name; `[]` when empty."""
        infos = self._call(self._list(), f"list the objects of {self._where}", wait=math.inf)
        return sorted((i for i in infos if show_deleted or not i.deleted), key=lambda i: i.name)

    # -- change ----------------------------------------------------------------------------

    def delete(self, name: str) -> None:
        """Deletes object `name` (or link): a deleted meta stays, the chunks are purged.

        Raises:
            ObjectNotFoundError: no such object (or it was already deleted).
        """
        info = self.info(name)
        tombstone = replace(info, size=0, chunks=0, digest=None, modified=None, deleted=True)
        self._publish_meta(tombstone, f"delete object {name!r} in {self._where}")
        if info.link is None:
            self._purge_quietly(object_transfer.chunk_subject(self.name, info.nuid))

    def add_link(self, name: str, target: str, *, target_bucket: str | None = None) -> ObjectInfo:
        """Stores a link `name` that reads as object `target` (in `target_bucket` if given).

        Raises:
            ObjectNotFoundError: `target` does not exist.
            InvalidArgumentError: `target` is itself a link, or `name` holds an object.
        """
        check_name(name)
        check_name(target)
        if target_bucket is not None:
            check_bucket(target_bucket)
        if (target_bucket or self.name) == self.name and target == name:
            raise InvalidArgumentError(f"cannot link object {name!r} to itself")
        source = self if target_bucket in (None, self.name) else bind(self._client, target_bucket)
        linked = source.info(target)
        if linked.link is not None:
            raise InvalidArgumentError(
                f"cannot link {name!r} to {target!r} in object store {source.name!r}: it is a "
                "link itself; link to the object it points to"
            )
        return self._put_link(name, ObjectLink(source.name, target))

    def add_bucket_link(self, name: str, target_bucket: str) -> ObjectInfo:
        """Stores a link `name` to the whole bucket `target_bucket` (like a directory).

        Raises:
            BucketNotFoundError: `target_bucket` does not exist.
        """
        check_name(name)
        bind(self._client, target_bucket)
        return self._put_link(name, ObjectLink(target_bucket))

    # -- watch and bucket ------------------------------------------------------------------

    def watch(
        self,
        *,
        timeout: float,
        include_history: bool = False,
        ignore_deletes: bool = False,
        updates_only: bool = False,
    ) -> ObjectWatch:
        """Watches the bucket: an iterator of object metas that ends after `timeout` seconds.

        The watch starts before this returns: it yields the latest meta of each object
        (every kept meta with `include_history`, none with `updates_only`), then each put,
        delete or link as it happens. Iterating never blocks past the deadline. Close it
        (or use it as a context manager) to stop early.

        Args:
            timeout: seconds the watch lasts.
            include_history: start with every kept meta, not only the latest per object.
            ignore_deletes: skip deleted metas.
            updates_only: skip what exists; yield only later changes.

        Raises:
            InvalidArgumentError: a timeout that is not positive and finite, or both
                `include_history` and `updates_only`.
        """
        if not 0 < timeout < math.inf:
            raise InvalidArgumentError(f"watch {self._where}: timeout must be > 0, got {timeout!r}")
        if include_history and updates_only:
            raise InvalidArgumentError("watch: include_history and updates_only exclude each other")
        policy = (
            api.DeliverPolicy.NEW
            if updates_only
            else api.DeliverPolicy.ALL
            if include_history
            else api.DeliverPolicy.LAST_PER_SUBJECT
        )
        deadline = time.monotonic() + timeout
        sub = self._call(self._subscribe(policy), f"watch {self._where}")
        return ObjectWatch(self, sub, deadline, ignore_deletes=ignore_deletes)

    def status(self) -> ObjectStoreStatus:
        """Returns the bucket's configuration and counters."""
        coro = self._client.jsm.stream_info(self._stream)
        return ObjectStoreStatus.from_nats(self.name, self._call(coro, f"read {self._where}"))

    def seal(self) -> None:
        """Seals the bucket for good: it stays readable, but puts, deletes and links fail."""
        self._call(self._seal(), f"seal {self._where}")

    def destroy(self) -> None:
        """Deletes the bucket with every object.

        Raises:
            BucketNotFoundError: the bucket does not exist (any more).
        """
        self._call(self._client.jsm.delete_stream(self._stream), f"destroy {self._where}")

    # -- internals -------------------------------------------------------------------------

    def _resolve(self, name: str) -> tuple[ObjectStoreBucket, ObjectInfo]:
        """The bucket and info of what `name` reads as: itself, or its link's target."""
        info = self.info(name)
        link = info.link
        if link is None:
            return self, info
        if link.name is None:
            raise InvalidArgumentError(
                f"object {name!r} in {self._where} links the whole object store "
                f"{link.bucket!r}; read from client.object_store({link.bucket!r}) instead"
            )
        source = self if link.bucket == self.name else bind(self._client, link.bucket)
        try:
            target = source.info(link.name)
        except ObjectNotFoundError as error:
            raise ObjectNotFoundError(
                f"link {name!r} in {self._where} points to {link.name!r} in object store "
                f"{link.bucket!r}, which does not exist (any more); re-link or delete it",
                bucket=self.name,
                key=name,
            ) from error
        if target.link is not None:
            raise InvalidArgumentError(f"link {name!r} in {self._where} points to a link")
        return source, target

    def _fetch(self, info: ObjectInfo, write: Callable[[bytes], object]) -> None:
        def corrupted(reason: str) -> ObjectCorruptedError:
            return ObjectCorruptedError(
                f"object {info.name!r} in {self._where} is corrupted: {reason}; put it again "
                "from its source",
                bucket=self.name,
                key=info.name,
            )

        if not info.nuid:
            raise corrupted("its meta has no nuid")
        object_transfer.download(
            self._runner(f"get object {info.name!r} from {self._where}", info.name),
            self._client.jsm,
            self._stream,
            object_transfer.chunk_subject(self.name, info.nuid),
            expected=(info.size, info.chunks, info.digest),
            write=write,
            direct=self._direct,
            corrupted=corrupted,
        )

    def _find(self, name: str) -> ObjectInfo | None:
        """The latest meta of `name`, deleted or not; None if there is none."""
        return self._call(self._last_meta(name), f"read object {name!r} in {self._where}", name)

    def _put_link(self, name: str, link: ObjectLink) -> ObjectInfo:
        existing = self._find(name)
        if existing is not None and not existing.deleted and existing.link is None:
            raise InvalidArgumentError(
                f"object store {self.name!r} already has an object {name!r}; delete it first "
                "or choose another link name"
            )
        info = ObjectInfo(self.name, name, 0, 0, None, None, link=link)
        info = replace(info, nuid=object_transfer.new_nuid())
        return self._publish_meta(info, f"link {name!r} in {self._where}")

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
            return replace(info, modified=dt.datetime.now(dt.UTC))
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

    def _runner(self, what: str, name: str) -> object_transfer.Runner:
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
        guarded = _guard(coro, what, self.name, name)
        return self._client.run(guarded, what=what, timeout=timeout, bucket=self.name, key=name)


class ObjectWatch(Iterator[ObjectInfo]):
    """Object metas of one bucket as they are stored, until a deadline (`bucket.watch`).

    Examples:
        >>> with bucket.watch(timeout=60, updates_only=True) as watch:
        ...     for info in watch:
        ...         print(info.name, info.deleted)
    """

    def __init__(
        self, bucket: ObjectStoreBucket, sub: Any, deadline: float, *, ignore_deletes: bool
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


def bind(client: JetStreamClient, bucket: str) -> ObjectStoreBucket:
    """Binds to an existing Object Store bucket.

    Raises:
        InvalidArgumentError: a bad bucket name (before any I/O).
        BucketNotFoundError: the bucket does not exist.
    """
    check_bucket(bucket)
    what = f"bind to object store {bucket!r}"
    stream = OBJ_STREAM_TEMPLATE.format(bucket=bucket)
    coro = _guard(client.jsm.stream_info(stream), what, bucket)
    info = client.run(coro, what=what, bucket=bucket)
    return ObjectStoreBucket(client, bucket, direct=bool(info.config.allow_direct))


def create(client: JetStreamClient, spec: ObjectStoreSpec) -> ObjectStoreBucket:
    """Creates the bucket if it is missing (an existing one keeps its config), then binds."""
    spec.ensure(client)
    return bind(client, spec.bucket)


async def _guard(coro: Coroutine[Any, Any, T], what: str, bucket: str, name: str | None = None):
    """Awaits `coro`, raising a missing stream or a sealed one as this package's errors."""
    names = {"bucket": bucket, "key": name}
    try:
        return await coro
    except (nats.js.errors.NoStreamResponseError, nats.errors.NoRespondersError) as error:
        raise _bucket_missing(bucket, what) from error
    except nats.js.errors.APIError as error:
        if error.err_code == STREAM_NOT_FOUND:
            raise _bucket_missing(bucket, what) from error
        if error.err_code == STREAM_SEALED:
            raise ServerAPIError(
                f"cannot {what}: object store {bucket!r} is sealed, so nothing in it can change "
                "(sealing is permanent); write to another bucket",
                code=error.code,
                err_code=error.err_code,
                **names,
            ) from error
        raise


def _bucket_missing(bucket: str, what: str) -> BucketNotFoundError:
    return BucketNotFoundError(
        f"cannot {what}: object store {bucket!r} does not exist; create it (declare an "
        "ObjectStoreSpec in the topology and reconcile, or `client.create_object_store(...)`) "
        "or fix the bucket name",
        bucket=bucket,
    )


__all__ = [
    "ObjectInfo",
    "ObjectLink",
    "ObjectStoreBucket",
    "ObjectStoreStatus",
    "ObjectWatch",
    "bind",
    "create",
]
