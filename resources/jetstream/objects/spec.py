"""An Object Store bucket as declared in code: what `Topology` reconciles.

`ensure` creates the bucket if it is missing (binding to an existing bucket never changes
its configuration); `replicas` behaves as for a Key-Value bucket (see `kv.spec`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nats.js import api

from resources.jetstream.core.session import Session
from resources.jetstream.core.spec_merge import check_metadata
from resources.jetstream.core.validation import validate_bucket
from resources.jetstream.streams.buckets import check_replicas, set_metadata
from resources.jetstream.streams.manage import Streams
from resources.jetstream.streams.spec import Storage


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

    def ensure(self, client: Session) -> bool:
        """Creates the bucket if missing; returns whether it was created."""
        if Streams(client).exists(self.stream_name):
            return False
        client.run(
            client.js.create_object_store(self.bucket, config=self.to_nats()),
            what=f"create object store {self.bucket!r}",
            bucket=self.bucket,
        )
        set_metadata(client, self.stream_name, self.metadata)
        return True
