"""Topology as code: streams, consumers and buckets declared once, reconciled idempotently.

`reconcile` creates what is missing, updates what drifted, reports every change, and deletes
nothing unless asked (`delete_undeclared=True`, which only touches consumers of declared
streams). It is safe on a server other tools also manage: only the fields a spec declares
are compared and changed (every other setting stays as the server has it), every change is
planned and checked before the first write, and a stream or bucket is never scaled down to
fewer replicas unless asked (`allow_fewer_replicas=True`). Of an existing bucket only its
declared replicas are compared and changed. Placement (cluster, tags) is not modelled, so it
is never changed: an update sends the server's own placement back. `plan` says what it would
do, writing nothing.

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

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from resources.backports import StrEnum
from resources.jetstream.consumers.spec import ConsumerSpec
from resources.jetstream.core.spec_merge import declared_changes, refuse_changes
from resources.jetstream.errors import InvalidArgumentError
from resources.jetstream.kv.spec import KeyValueSpec
from resources.jetstream.objects.spec import ObjectStoreSpec
from resources.jetstream.streams.buckets import set_replicas
from resources.jetstream.streams.spec import StreamSpec

if TYPE_CHECKING:
    from resources.jetstream.client import JetStreamClient


class Action(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    DELETED = "deleted"


@dataclass(frozen=True)
class Change:
    """What reconcile did (or `plan` would do) to one object.

    `diff` maps each declared field that differs to (found, declared); `spec` is the
    declared object.
    """

    kind: str
    name: str
    action: Action
    diff: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    spec: Any = field(default=None, repr=False, compare=False)

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

    A declared `None` is not declared and not compared; metadata is compared for the
    declared keys only (see `spec_merge.declared_changes`).
    """
    return declared_changes(found, declared)


def plan(
    client: JetStreamClient,
    topology: Topology,
    *,
    delete_undeclared: bool = False,
    allow_fewer_replicas: bool = False,
) -> list[Change]:
    """What `reconcile` would do, read from the server; nothing is written.

    Args:
        client: a JetStream client.
        topology: the declared objects.
        delete_undeclared: also plan to delete consumers of declared streams that the
            topology does not declare.
        allow_fewer_replicas: allow a declared stream or bucket to have fewer replicas
            than it has.

    Returns:
        One change per declared object (and per consumer to delete), in order.

    Raises:
        InvalidArgumentError: a declared field cannot change on the server (storage,
            retention to or from work queue, a consumer's deliver policy, ...), or a stream
            or bucket would lose replicas; it names the object and the field.
    """
    changes: list[Change] = []
    for spec in topology.streams:
        if not client.streams.exists(spec.name):
            changes.append(Change("stream", spec.name, Action.CREATED, spec=spec))
            continue
        found = client.streams.info(spec.name).spec
        diff = diff_specs(found, spec)
        refusals = found.refused_changes(diff)
        refusals += _fewer_replicas(diff, "stream", allow_fewer_replicas)
        refuse_changes(f"stream {spec.name!r}", refusals, stream=spec.name)
        changes.append(_change("stream", spec.name, diff, spec))
    for spec in topology.consumers:
        name = f"{spec.stream}/{spec.durable}"
        if not client.consumers.exists(spec.stream, spec.durable):
            changes.append(Change("consumer", name, Action.CREATED, spec=spec))
            continue
        found = client.consumers.info(spec.stream, spec.durable).spec
        diff = diff_specs(found, spec)
        where = f"consumer {spec.durable!r} of stream {spec.stream!r}"
        refuse_changes(
            where, found.refused_changes(diff), stream=spec.stream, consumer=spec.durable
        )
        changes.append(_change("consumer", name, diff, spec))
    if delete_undeclared:
        declared = {(c.stream, c.durable) for c in topology.consumers}
        for stream in topology.streams:
            if not client.streams.exists(stream.name):
                continue
            for existing in client.consumers.names(stream.name):
                if (stream.name, existing) not in declared:
                    name = f"{stream.name}/{existing}"
                    changes.append(Change("consumer", name, Action.DELETED, spec=stream.name))
    for bucket in (*topology.kv_buckets, *topology.object_buckets):
        if not client.streams.exists(bucket.stream_name):
            changes.append(Change(bucket.kind, bucket.bucket, Action.CREATED, spec=bucket))
            continue
        found = client.streams.info(bucket.stream_name).spec.replicas or 1
        diff = {}
        if bucket.replicas is not None and bucket.replicas != found:
            diff["replicas"] = (found, bucket.replicas)
        refusals = _fewer_replicas(diff, bucket.kind, allow_fewer_replicas)
        refuse_changes(f"{bucket.kind} {bucket.bucket!r}", refusals, bucket=bucket.bucket)
        changes.append(_change(bucket.kind, bucket.bucket, diff, bucket))
    return changes


def _fewer_replicas(diff: dict[str, tuple[Any, Any]], kind: str, allowed: bool) -> list[str]:
    """The refusal of a replicas change downwards, unless `allowed`."""
    old, new = diff.get("replicas", (0, 0))
    if new >= old or allowed:
        return []
    return [
        f"replicas would go down from {old} to {new}; reconcile never scales a {kind} down "
        f"unless asked (allow_fewer_replicas=True), so declare replicas={old} or leave "
        "replicas undeclared"
    ]


def reconcile(
    client: JetStreamClient,
    topology: Topology,
    *,
    delete_undeclared: bool = False,
    allow_fewer_replicas: bool = False,
) -> list[Change]:
    """Makes the server match the topology and returns what changed.

    Everything is planned and checked first (`plan`); only then is anything written. An
    update changes only the declared fields that differ and keeps every other setting.

    Args:
        client: a JetStream client.
        topology: the declared objects.
        delete_undeclared: also delete consumers of declared streams that the topology does
            not declare. Streams and buckets are never deleted here.
        allow_fewer_replicas: allow lowering a stream's or bucket's replicas to the
            declared number.

    Raises:
        InvalidArgumentError: as `plan`, before anything is written.
    """
    changes = plan(
        client,
        topology,
        delete_undeclared=delete_undeclared,
        allow_fewer_replicas=allow_fewer_replicas,
    )
    for change in changes:
        _apply(client, change)
    return changes


def _change(kind: str, name: str, diff: dict[str, tuple[Any, Any]], spec: Any) -> Change:
    return Change(kind, name, Action.UPDATED if diff else Action.UNCHANGED, diff, spec)


def _apply(client: JetStreamClient, change: Change) -> None:
    spec = change.spec
    if change.action is Action.UNCHANGED:
        return
    if change.kind == "stream":
        (client.streams.add if change.action is Action.CREATED else client.streams.update)(spec)
    elif change.kind == "consumer" and change.action is Action.DELETED:
        client.consumers.delete(spec, change.name.split("/", 1)[1])
    elif change.kind == "consumer":
        add = change.action is Action.CREATED
        (client.consumers.add if add else client.consumers.update)(spec)
    elif change.action is Action.UPDATED:
        set_replicas(client, spec.stream_name, change.diff["replicas"][1])
    else:
        spec.ensure(client)
