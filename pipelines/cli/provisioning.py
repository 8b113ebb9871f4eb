"""The topology the project declares: the file trash pipeline's and every declared stream's.

`jsl provision`, `make demo` and `make dev` reconcile this one topology against the server, so
a stream declared in `pipelines/defs/<name>/defs.yaml` (a `JetStreamStream` component) is
created with its consumers and buckets the same way the file trash stream is.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pipelines.file_trash.topology import FILE_TRASH_TOPOLOGY
from pipelines.settings import SOURCE_DIR
from resources.jetstream import Topology


def component_topologies(project_dir: Path = SOURCE_DIR) -> list[Topology]:
    """The topology of each `JetStreamStream` component of the dg project at `project_dir`
    (its defs folder, with `{{ env.X }}` templates resolved; by default this package's own,
    `pipelines/defs`, read where the package is: package data, not state)."""
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


def declared_topology(project_dir: Path = SOURCE_DIR) -> Topology:
    """The file trash topology and every declared stream's, merged."""
    return merge_topologies(FILE_TRASH_TOPOLOGY, *component_topologies(project_dir))


def project_topology(project_dir: Path) -> Topology:
    """Every declared stream's topology in another dg project (`jsl provision --project`):
    its `JetStreamStream` components only, not the file trash pipeline's.

    Raises:
        ValueError: the project declares no `JetStreamStream` component.
    """
    project_dir = Path(project_dir).resolve()
    if str(project_dir) not in sys.path:
        sys.path.insert(0, str(project_dir))  # the component tree imports the project
    found = component_topologies(project_dir)
    if not found:
        raise ValueError(
            f"project {project_dir} declares no JetStreamStream component in its defs folder; "
            "add one with `dg scaffold defs pipelines.components.JetStreamStream NAME "
            "--stream NAME`"
        )
    return merge_topologies(*found)
