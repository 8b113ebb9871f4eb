"""Key-Value and Object Store buckets as declared in code.

The specs are what `Topology` reconciles; `ensure` creates the bucket if it is missing
(binding to an existing bucket never changes its configuration). `replicas` is the one
setting reconcile changes on an existing bucket, and only upwards unless asked
(`allow_fewer_replicas`); None leaves it to the server (1 on create) and as it is after.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nats.js import api

from resources.jetstream.errors import InvalidArgumentError
from resources.jetstream.spec_merge import check_metadata
from resources.jetstream.streams import Storage

BUCKET_NAME_RE = re.compile(r"[a-zA-Z0-9_-]+")  # what the KV and Object Store protocols allow


def validate_bucket(bucket: str) -> str:
    """Checks a Key-Value or Object Store bucket name before any I/O."""
    if not isinstance(bucket, str) or not BUCKET_NAME_RE.fullmatch(bucket):
        raise InvalidArgumentError(
            f"invalid bucket name {bucket!r}: use only letters, digits, '-' and '_'"
        )
    return bucket


if TYPE_CHECKING:
    from resources.jetstream.client import JetStreamClient


@dataclass(frozen=True)
class KeyValueSpec:
    """A Key-Value bucket.

    Examples:
        >>> KeyValueSpec("lakehouse-checkpoints", history=10)
    """

    bucket: str
    description: str | None = None
    history: int = 1
    ttl: float = 0  # seconds; 0 keeps values forever
    max_value_size: int = -1
    max_bytes: int = -1
    storage: Storage = Storage.FILE
    replicas: int | None = None  # 1 on create; None keeps an existing bucket's
    # set on the bucket's stream when created; not part of the hash (a dict)
    metadata: Mapping[str, str] | None = field(default=None, hash=False)

    kind = "kv bucket"

    def __post_init__(self) -> None:
        validate_bucket(self.bucket)
        object.__setattr__(self, "storage", Storage(self.storage))
        metadata = check_metadata(f"{self.kind} {self.bucket!r}", self.metadata)
        object.__setattr__(self, "metadata", metadata)
        check_replicas(self)
        if not 1 <= self.history <= 64:
            raise InvalidArgumentError(
                f"kv bucket {self.bucket!r}: history must be between 1 and 64, got {self.history!r}"
            )

    def to_nats(self) -> api.KeyValueConfig:
        return api.KeyValueConfig(
            bucket=self.bucket,
            description=self.description,
            history=self.history,
            ttl=self.ttl or None,
            max_value_size=self.max_value_size,
            max_bytes=self.max_bytes,
            storage=api.StorageType(self.storage.value),
            replicas=self.replicas or 1,
            direct=True,
        )

    @property
    def stream_name(self) -> str:
        """The stream that holds the bucket."""
        return f"KV_{self.bucket}"

    def ensure(self, client: JetStreamClient) -> bool:
        """Creates the bucket if missing; returns whether it was created."""
        if client.streams.exists(self.stream_name):
            return False
        client.run(
            client.js.create_key_value(self.to_nats()),
            what=f"create kv bucket {self.bucket!r}",
            bucket=self.bucket,
        )
        set_metadata(client, self.stream_name, self.metadata)
        return True


@dataclass(frozen=True)
class ObjectStoreSpec:
    """An Object Store bucket.

    Examples:
        >>> ObjectStoreSpec("lakehouse-artifacts", description="validation reports")
    """

    bucket: str
    description: str | None = None
    ttl: float = 0  # seconds; 0 keeps objects forever
    max_bytes: int = -1
    storage: Storage = Storage.FILE
    replicas: int | None = None  # 1 on create; None keeps an existing bucket's
    # set on the bucket's stream when created; not part of the hash (a dict)
    metadata: Mapping[str, str] | None = field(default=None, hash=False)

    kind = "object store"

    def __post_init__(self) -> None:
        validate_bucket(self.bucket)
        object.__setattr__(self, "storage", Storage(self.storage))
        metadata = check_metadata(f"{self.kind} {self.bucket!r}", self.metadata)
        object.__setattr__(self, "metadata", metadata)
        check_replicas(self)

    def to_nats(self) -> api.ObjectStoreConfig:
        return api.ObjectStoreConfig(
            bucket=self.bucket,
            description=self.description,
            ttl=self.ttl or None,
            max_bytes=self.max_bytes,
            storage=api.StorageType(self.storage.value),
            replicas=self.replicas or 1,
        )

    @property
    def stream_name(self) -> str:
        """The stream that holds the bucket."""
        return f"OBJ_{self.bucket}"

    def ensure(self, client: JetStreamClient) -> bool:
        """Creates the bucket if missing; returns whether it was created."""
        if client.streams.exists(self.stream_name):
            return False
        client.run(
            client.js.create_object_store(self.bucket, config=self.to_nats()),
            what=f"create object store {self.bucket!r}",
            bucket=self.bucket,
        )
        set_metadata(client, self.stream_name, self.metadata)
        return True


def check_replicas(spec: KeyValueSpec | ObjectStoreSpec) -> None:
    """Checks a bucket's declared replicas before any I/O: None, or 1 to 5."""
    replicas = spec.replicas
    if replicas is not None and (
        isinstance(replicas, bool) or not isinstance(replicas, int) or not 1 <= replicas <= 5
    ):
        raise InvalidArgumentError(
            f"{spec.kind} {spec.bucket!r}: replicas must be between 1 and 5 (None: the "
            f"server's default), got {replicas!r}"
        )


def set_replicas(client: JetStreamClient, stream: str, replicas: int) -> None:
    """Changes the replicas of a bucket's stream, keeping every other setting."""
    spec = client.streams.info(stream).spec
    client.streams.update(dataclasses.replace(spec, replicas=replicas))


def set_metadata(client: JetStreamClient, stream: str, metadata: Mapping[str, str] | None) -> None:
    """Adds metadata to a bucket's stream (nats-py creates buckets without it)."""
    if metadata:
        spec = client.streams.info(stream).spec
        client.streams.update(dataclasses.replace(spec, metadata=metadata))


__all__ = ["KeyValueSpec", "ObjectStoreSpec"]
