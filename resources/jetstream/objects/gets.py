"""Reading objects: their bytes (`get_bytes`, `get_file`, `get_stream`) and metas (`info`, `list`).

`ObjectGets` is a base of `ObjectStoreBucket`, so these are `bucket.<method>`. A link is
followed to its target (in this bucket or another), and the chunks come in through
`transfer.download`, checked against the meta's size, chunk count and digest.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from resources.jetstream.errors import (
    InvalidArgumentError,
    ObjectCorruptedError,
    ObjectNotFoundError,
)
from resources.jetstream.objects import transfer
from resources.jetstream.objects.meta import ObjectInfo, check_name
from resources.jetstream.objects.stream import ObjectStream


class ObjectGets(ObjectStream):
    """Reading objects and their metas from a bucket (`bucket.get_*`, `info`, `list`)."""

    def _bind_other(self, bucket: str) -> ObjectGets:
        """Binds to another bucket that a link points into (`ObjectStoreBucket` does)."""
        raise NotImplementedError

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
        with transfer.replace_on_success(target) as out:
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

    def _resolve(self, name: str) -> tuple[ObjectGets, ObjectInfo]:
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
        source = self if link.bucket == self.name else self._bind_other(link.bucket)
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
        transfer.download(
            self._runner(f"get object {info.name!r} from {self._where}", info.name),
            self._client.jsm,
            self._stream,
            transfer.chunk_subject(self.name, info.nuid),
            expected=(info.size, info.chunks, info.digest),
            write=write,
            direct=self._direct,
            corrupted=corrupted,
        )
