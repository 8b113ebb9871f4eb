"""The topology the project declares: the file trash pipeline's and every declared stream's.

`jsl provision`, `make demo` and `make dev` reconcile this one topology against the server, so
a stream declared in `pipelines/defs/<name>/defs.yaml` (a `JetStreamStream` component) is
created with its consumers and buckets the same way the file trash stream is.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.file_trash.topology import FILE_TRASH_TOPOLOGY
from pipelines.settings import PROJECT_DIR
from resources.jetstream import Topology


def component_topologies(project_dir: Path = PROJECT_DIR) -> list[Topology]:
    """The topology of each `JetStreamStream` component of the dg project at `project_dir`
    (its defs folder, with `{{ env.X }}` templates resolved)."""
    # Imported here: loading the component tree imports the components and their
    # dependencies, which the commands that do not provision never need.
    from dagster.components.core.component_tree import ComponentTree

    from pipelines.components import JetStreamStream

    tree = ComponentTree.for_project(project_dir)
    return [component.topology() for component in tree.get_all_components(JetStreamStream)]


def merge_topologies(*topologies: Topology) -> Topology:
    """One topology holding all of `topologies`' objects; an object declared twice the same
    way is kept once, and a bucket shared by several (the checkpoint bucket) keeps its first
    declaration.

    Raises:
        ValueError: two topologies declare a stream, or a consumer, differently.
    """
    streams: dict[str, object] = {}
    consumers: dict[tuple[str, str], object] = {}
    kv: dict[str, object] = {}
    objects: dict[str, object] = {}
    for topology in topologies:
        for stream in topology.streams:
            if streams.setdefault(stream.name, stream) != stream:
                raise ValueError(f"stream {stream.name!r} is declared twice, differently")
        for consumer in topology.consumers:
            key = (consumer.stream, consumer.durable)
            if consumers.setdefault(key, consumer) != consumer:
                raise ValueError(
                    f"consumer {consumer.durable!r} of stream {consumer.stream!r} is declared "
                    "twice, differently"
                )
        for bucket in topology.kv_buckets:
            kv.setdefault(bucket.bucket, bucket)
        for bucket in topology.object_buckets:
            objects.setdefault(bucket.bucket, bucket)
    return Topology(
        streams=tuple(streams.values()),
        consumers=tuple(consumers.values()),
        kv_buckets=tuple(kv.values()),
        object_buckets=tuple(objects.values()),
    )


def declared_topology(project_dir: Path = PROJECT_DIR) -> Topology:
    """The file trash topology and every declared stream's, merged."""
    return merge_topologies(FILE_TRASH_TOPOLOGY, *component_topologies(project_dir))
