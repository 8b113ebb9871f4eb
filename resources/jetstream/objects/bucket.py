"""Object Store buckets: a synchronous `ObjectStoreBucket` that speaks ADR-20 itself.

A bucket is the stream `OBJ_<bucket>`. Each object is a run of chunks (`transfer.py`
moves them) plus one meta message on `$O.<bucket>.M.<base64url(name)>`, published with a
`Nats-Rollup: sub` header so only the latest meta of a name is kept. The meta is ADR-20's
JSON with Go's field names (name, nuid, size, chunks, digest, deleted, options.link,
headers as lists, RFC 3339 mtime), so other NATS clients share these buckets; the tests
check this against nats-py's own `ObjectStore`.

`ObjectStoreBucket` is assembled from bases, one concern each: `ObjectPuts` (`put_*`, in
`puts.py`), `ObjectGets` (`get_*`, `info`, `list`, in `gets.py`) and their
`ObjectStream` (calls on the bucket's stream and its meta messages, in `stream.py`).
This module adds deleting, links, `watch` (an `ObjectWatch`, from `watch.py`),
status, sealing and destroying, and `bind` / `create`. The values (`ObjectInfo`,
`ObjectLink`, `ObjectStoreStatus`) live in `meta.py`.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from nats.js import api
from nats.js.object_store import OBJ_STREAM_TEMPLATE

from resources.jetstream.errors import InvalidArgumentError
from resources.jetstream.objects import transfer
from resources.jetstream.objects.gets import ObjectGets
from resources.jetstream.objects.guard import guard
from resources.jetstream.objects.meta import (
    ObjectInfo,
    ObjectLink,
    ObjectStoreStatus,
    check_bucket,
    check_name,
)
from resources.jetstream.objects.puts import ObjectPuts
from resources.jetstream.objects.watch import ObjectWatch

if TYPE_CHECKING:
    from resources.jetstream.core.session import Session
    from resources.jetstream.objects.spec import ObjectStoreSpec


class ObjectStoreBucket(ObjectPuts, ObjectGets):
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

    def __repr__(self) -> str:
        return f"ObjectStoreBucket({self.name!r})"

    def _bind_other(self, bucket: str) -> ObjectStoreBucket:
        return bind(self._client, bucket)

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
            self._purge_quietly(transfer.chunk_subject(self.name, info.nuid))

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

    def _put_link(self, name: str, link: ObjectLink) -> ObjectInfo:
        existing = self._find(name)
        if existing is not None and not existing.deleted and existing.link is None:
            raise InvalidArgumentError(
                f"object store {self.name!r} already has an object {name!r}; delete it first "
                "or choose another link name"
            )
        info = ObjectInfo(self.name, name, 0, 0, None, None, link=link)
        info = replace(info, nuid=transfer.new_nuid())
        return self._publish_meta(info, f"link {name!r} in {self._where}")


def bind(client: Session, bucket: str) -> ObjectStoreBucket:
    """Binds to an existing Object Store bucket.

    Raises:
        InvalidArgumentError: a bad bucket name (before any I/O).
        BucketNotFoundError: the bucket does not exist.
    """
    check_bucket(bucket)
    what = f"bind to object store {bucket!r}"
    stream = OBJ_STREAM_TEMPLATE.format(bucket=bucket)
    coro = guard(client.jsm.stream_info(stream), what, bucket)
    info = client.run(coro, what=what, bucket=bucket)
    return ObjectStoreBucket(client, bucket, direct=bool(info.config.allow_direct))


def create(client: Session, spec: ObjectStoreSpec) -> ObjectStoreBucket:
    """Creates the bucket if it is missing (an existing one keeps its config), then binds."""
    spec.ensure(client)
    return bind(client, spec.bucket)


__all__ = ["ObjectStoreBucket", "bind", "create"]
