"""Object Store values: object info and links, bucket status, the meta wire format, checks.

`ObjectInfo` maps to and from ADR-20's meta JSON with Go's field names, so buckets written
here are read by other NATS clients and the other way round.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nats.js import api
from nats.js.object_store import OBJ_META_PRE_TEMPLATE

from resources.jetstream.core.validation import validate_name
from resources.jetstream.errors import InvalidArgumentError
from resources.jetstream.objects.transfer import DEFAULT_CHUNK_SIZE
from resources.jetstream.streams.spec import Storage, wire_value

VALID_BUCKET_RE = re.compile(r"^[a-zA-Z0-9_-]+$")  # nats-py's VALID_BUCKET_RE
HEADER_NAME_RE = re.compile(r"^[!-9;-~]+$")  # printable ASCII without ':'


@dataclass(frozen=True)
class ObjectLink:
    """Where a link points: one object (`name`), or a whole bucket (`name` is None)."""

    bucket: str
    name: str | None = None


@dataclass(frozen=True)
class ObjectInfo:
    """An object's meta: what was stored under a name (or that it was deleted).

    Attributes:
        modified: when the server stored this meta (UTC).
        link: set for a link; its own size, chunks and digest are then empty.
        chunk_size: the most bytes per chunk the writer used.
        nuid: the token of the object's chunk subject `$O.<bucket>.C.<nuid>`.
    """

    bucket: str
    name: str
    size: int  # bytes
    chunks: int
    digest: str | None  # "SHA-256=<base64url>"
    modified: dt.datetime | None
    description: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    deleted: bool = False
    link: ObjectLink | None = None
    chunk_size: int | None = None
    nuid: str = field(default="", repr=False)

    @classmethod
    def from_wire(cls, meta: Mapping[str, Any], modified: dt.datetime | None) -> ObjectInfo:
        """Reads a meta message's JSON, ignoring unknown fields."""
        options = meta.get("options") or {}
        link = options.get("link") or None
        return cls(
            bucket=meta.get("bucket") or "",
            name=meta.get("name") or "",
            size=int(meta.get("size") or 0),
            chunks=int(meta.get("chunks") or 0),
            digest=meta.get("digest") or None,
            modified=modified or parse_time(meta.get("mtime")),
            description=meta.get("description") or None,
            # Go writes headers as {name: [values]}, nats-py as {name: value}
            headers={
                k: ", ".join(v) if isinstance(v, list) else str(v)
                for k, v in (meta.get("headers") or {}).items()
            },
            metadata=dict(meta.get("metadata") or {}),
            deleted=bool(meta.get("deleted")),
            link=ObjectLink(link.get("bucket") or "", link.get("name") or None) if link else None,
            chunk_size=options.get("max_chunk_size") or None,
            nuid=meta.get("nuid") or "",
        )

    def to_wire(self) -> dict[str, Any]:
        """The meta message's JSON, with Go's field names and omissions."""
        modified = self.modified or dt.datetime.now(dt.timezone.utc)
        meta: dict[str, Any] = {
            "name": self.name,
            "bucket": self.bucket,
            "nuid": self.nuid,
            "size": self.size,
            "mtime": modified.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z"),
            "chunks": self.chunks,
        }
        options: dict[str, Any] = {}
        if self.link is not None:
            options["link"] = {"bucket": self.link.bucket}
            if self.link.name is not None:
                options["link"]["name"] = self.link.name
        if self.chunk_size:
            options["max_chunk_size"] = self.chunk_size
        optional = {
            "digest": self.digest,
            "description": self.description,
            "headers": {k: [v] for k, v in self.headers.items()},
            "metadata": dict(self.metadata),
            "options": options,
            "deleted": self.deleted,
        }
        meta.update({k: v for k, v in optional.items() if v})
        return meta


@dataclass(frozen=True)
class ObjectStoreStatus:
    """A bucket's configuration and counters at one moment."""

    bucket: str
    description: str | None
    ttl: float  # seconds; 0 keeps objects forever
    max_bytes: int  # -1 is unlimited
    storage: Storage
    replicas: int
    sealed: bool
    bytes: int  # stored bytes, chunks and metas included

    @classmethod
    def from_nats(cls, bucket: str, info: api.StreamInfo) -> ObjectStoreStatus:
        config = info.config
        return cls(
            bucket=bucket,
            description=config.description,
            ttl=config.max_age or 0,
            max_bytes=config.max_bytes if config.max_bytes is not None else -1,
            storage=Storage(wire_value(config.storage, Storage.FILE)),
            replicas=config.num_replicas or 1,
            sealed=bool(config.sealed),
            bytes=info.state.bytes,
        )


def meta_subject(bucket: str, name: str) -> str:
    encoded = base64.urlsafe_b64encode(name.encode()).decode()
    return OBJ_META_PRE_TEMPLATE.format(bucket=bucket, obj=encoded)


def parse_time(text: object) -> dt.datetime | None:
    if not isinstance(text, str) or not text or text.startswith("0001-"):  # Go's zero time
        return None
    with contextlib.suppress(ValueError):
        return api.Base._parse_utc_iso(text)
    return None


def check_bucket(bucket: str) -> None:
    validate_name("bucket", bucket)
    if not VALID_BUCKET_RE.match(bucket):
        raise InvalidArgumentError(
            f"invalid bucket name {bucket!r}: use only letters, digits, '-' and '_'"
        )


def check_name(name: str) -> None:
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"invalid object name {name!r}: use a non-empty string")


def check_put(
    name: str,
    description: str | None = None,
    headers: Mapping[str, str] | None = None,
    metadata: Mapping[str, str] | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> None:
    check_name(name)
    if description is not None and not isinstance(description, str):
        raise InvalidArgumentError(f"object {name!r}: description must be a str or None")
    for kind, pairs in (("headers", headers), ("metadata", metadata)):
        items = list((pairs or {}).items())
        if not all(isinstance(k, str) and k and isinstance(v, str) for k, v in items):
            raise InvalidArgumentError(f"object {name!r}: {kind} must map str to str: {pairs!r}")
    for key, value in (headers or {}).items():
        if not HEADER_NAME_RE.match(key) or "\r" in value or "\n" in value:
            raise InvalidArgumentError(
                f"object {name!r}: invalid header {key!r}: {value!r} (no ':', spaces or newlines)"
            )
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise InvalidArgumentError(
            f"object {name!r}: chunk_size must be a positive number of bytes, got {chunk_size!r}"
        )
