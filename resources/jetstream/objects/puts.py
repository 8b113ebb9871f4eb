"""Putting objects: the streaming `put_bytes`, `put_file` and `put_stream` of a bucket.

`ObjectPuts` is a base of `ObjectStoreBucket`, so these are `bucket.put_*`. The chunks go
out through `transfer.upload` under a fresh nuid; the meta is published only after
the last chunk is stored, and the chunks no meta refers to are purged.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Mapping
from typing import BinaryIO

from resources.jetstream.errors import InvalidArgumentError, ObjectCorruptedError
from resources.jetstream.objects import transfer
from resources.jetstream.objects.meta import ObjectInfo, check_put
from resources.jetstream.objects.stream import ObjectStream
from resources.jetstream.objects.transfer import DEFAULT_CHUNK_SIZE


class ObjectPuts(ObjectStream):
    """Storing objects in a bucket, chunk by chunk (`bucket.put_*`)."""

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
        nuid = transfer.new_nuid()
        subject = transfer.chunk_subject(self.name, nuid)
        try:
            run, timeout = self._runner(what, name), self._client.settings.request_timeout
            size, chunks, digest = transfer.upload(
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
            self._purge_quietly(transfer.chunk_subject(self.name, previous.nuid))
        return stored
