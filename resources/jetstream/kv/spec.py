"""A Key-Value bucket as declared in code: what `Topology` reconciles.

`ensure` creates the bucket if it is missing (binding to an existing bucket never changes
its configuration). `replicas` is the one setting reconcile changes on an existing bucket,
and only upwards unless asked (`allow_fewer_replicas`); None leaves it to the server (1 on
create) and as it is after.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nats.js import api

from resources.jetstream.core.session import Session
from resources.jetstream.core.spec_merge import check_metadata
from resources.jetstream.core.validation import validate_bucket
from resources.jetstream.errors import InvalidArgumentError
from resources.jetstream.streams.buckets import check_replicas, set_metadata
from resources.jetstream.streams.manage import Streams
from resources.jetstream.streams.spec import Storage


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

    def ensure(self, client: Session) -> bool:
        """Creates the bucket if missing; returns whether it was created."""
        if Streams(client).exists(self.stream_name):
            return False
        client.run(
            client.js.create_key_value(self.to_nats()),
            what=f"create kv bucket {self.bucket!r}",
            bucket=self.bucket,
        )
        set_metadata(client, self.stream_name, self.metadata)
        return True
