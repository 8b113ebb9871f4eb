"""The stream behind a Key-Value or Object Store bucket: replicas and metadata.

nats-py creates a bucket's stream (`KV_<bucket>`, `OBJ_<bucket>`) without metadata and
with the replicas it was given; these helpers change them afterwards on the stream itself,
keeping every other setting.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Protocol

from resources.jetstream.core.session import Session
from resources.jetstream.errors import InvalidArgumentError
from resources.jetstream.streams.manage import Streams


class BucketSpec(Protocol):
    """What `check_replicas` reads of a `KeyValueSpec` or `ObjectStoreSpec`."""

    kind: str
    bucket: str
    replicas: int | None


def check_replicas(spec: BucketSpec) -> None:
    """Checks a bucket's declared replicas before any I/O: None, or 1 to 5."""
    replicas = spec.replicas
    if replicas is not None and (
        isinstance(replicas, bool) or not isinstance(replicas, int) or not 1 <= replicas <= 5
    ):
        raise InvalidArgumentError(
            f"{spec.kind} {spec.bucket!r}: replicas must be between 1 and 5 (None: the "
            f"server's default), got {replicas!r}"
        )


def set_replicas(client: Session, stream: str, replicas: int) -> None:
    """Changes the replicas of a bucket's stream, keeping every other setting."""
    streams = Streams(client)
    spec = streams.info(stream).spec
    streams.update(dataclasses.replace(spec, replicas=replicas))


def set_metadata(client: Session, stream: str, metadata: Mapping[str, str] | None) -> None:
    """Adds metadata to a bucket's stream (nats-py creates buckets without it)."""
    if metadata:
        streams = Streams(client)
        spec = streams.info(stream).spec
        streams.update(dataclasses.replace(spec, metadata=metadata))
