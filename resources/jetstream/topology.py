"""Topology as code: streams, consumers and buckets declared once, reconciled idempotently.

`reconcile` creates what is missing, updates what drifted, reports every change, and deletes
nothing unless asked (`delete_undeclared=True`, which only touches consumers of declared
streams).

Examples:
    >>> topology = Topology(
    ...     streams=(StreamSpec("FILE_EVENTS", ("files.>",)),),
    ...     consumers=(ConsumerSpec("FILE_EVENTS", "lakehouse-bronze"),),
    ...     kv_buckets=(KeyValueSpec("lakehouse-checkpoints", history=5),),
    ... )
    >>> for change in reconcile(client, topology):
    ...     print(change)          # stream 'FILE_EVENTS': created
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from resources.jetstream.buckets import KeyValueSpec, ObjectStoreSpec
from resources.jetstream.consumers import ConsumerSpec
from resources.jetstream.errors import InvalidArgumentError
from resources.jetstream.streams import StreamSpec

if TYPE_CHECKING:
    from resources.jetstream.client import JetStreamClient


class Action(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    DELETED = "deleted"


@dataclass(frozen=True)
class Change:
    """What reconcile did to one object; `diff` maps a field to (found, declared)."""

    kind: str
    name: str
    action: Action
    diff: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    def __str__(self) -> str:
        details = ", ".join(f"{k}: {old!r} -> {new!r}" for k, (old, new) in self.diff.items())
        return f"{self.kind} {self.name!r}: {self.action.value}" + (
            f" ({details})" if details else ""
        )


@dataclass(frozen=True)
class Topology:
    """Everything a pipeline needs on the server, declared in one place."""

    streams: tuple[StreamSpec, ...] = ()
    consumers: tuple[ConsumerSpec, ...] = ()
    kv_buckets: tuple[KeyValueSpec, ...] = ()
    object_buckets: tuple[ObjectStoreSpec, ...] = ()

    def __post_init__(self) -> None:
        declared = {s.name for s in self.streams}
        for consumer in self.consumers:
            if consumer.stream not in declared:
                raise InvalidArgumentError(
                    f"consumer {consumer.durable!r} is declared on stream {consumer.stream!r}, "
                    "which the topology does not declare; add the stream to the topology"
                )

    def stream(self, name: str) -> StreamSpec:
        """The declared stream called `name`."""
        for spec in self.streams:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def consumer(self, stream: str, durable: str) -> ConsumerSpec:
        """The declared consumer `durable` of `stream`."""
        for spec in self.consumers:
            if (spec.stream, spec.durable) == (stream, durable):
                return spec
        raise KeyError((stream, durable))


def diff_specs(found: Any, declared: Any) -> dict[str, tuple[Any, Any]]:
    """Fields where `found` (read back from the server) differs from `declared`.

    A declared `None` means "the server's default" and is not compared.
    """
    changes = {}
    for f in fields(declared):
        want, have = getattr(declared, f.name), getattr(found, f.name)
        if want is not None and want != have:
            changes[f.name] = (have, want)
    return changes


def reconcile(
    client: JetStreamClient, topology: Topology, *, delete_undeclared: bool = False
) -> list[Change]:
    """Makes the server match the topology and returns what changed.

    Args:
        client: a JetStream client.
        topology: the declared objects.
        delete_undeclared: also delete consumers of declared streams that the topology does
            not declare. Streams and buckets are never deleted here.
    """
    changes: list[Change] = []
    for spec in topology.streams:
        if not client.streams.exists(spec.name):
            client.streams.add(spec)
            changes.append(Change("stream", spec.name, Action.CREATED))
            continue
        diff = diff_specs(client.streams.info(spec.name).spec, spec)
        if diff:
            client.streams.update(spec)
        changes.append(
            Change("stream", spec.name, Action.UPDATED if diff else Action.UNCHANGED, diff)
        )
    for spec in topology.consumers:
        name = f"{spec.stream}/{spec.durable}"
        if not client.consumers.exists(spec.stream, spec.durable):
            client.consumers.add(spec)
            changes.append(Change("consumer", name, Action.CREATED))
            continue
        diff = diff_specs(client.consumers.info(spec.stream, spec.durable).spec, spec)
        if diff:
            client.consumers.update(spec)
        changes.append(Change("consumer", name, Action.UPDATED if diff else Action.UNCHANGED, diff))
    if delete_undeclared:
        declared = {(c.stream, c.durable) for c in topology.consumers}
        for stream in topology.streams:
            for existing in client.consumers.names(stream.name):
                if (stream.name, existing) not in declared:
                    client.consumers.delete(stream.name, existing)
                    changes.append(Change("consumer", f"{stream.name}/{existing}", Action.DELETED))
    for bucket in (*topology.kv_buckets, *topology.object_buckets):
        created = bucket.ensure(client)
        changes.append(
            Change(bucket.kind, bucket.bucket, Action.CREATED if created else Action.UNCHANGED)
        )
    return changes
