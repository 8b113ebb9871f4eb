"""The file trash pipeline's JetStream topology and ingests, declared once.

The demo, `make dev` and the tests provision the server from `FILE_TRASH_TOPOLOGY` with
`resources.jetstream.reconcile`; the assets are built from the ingest specs.
"""

from __future__ import annotations

from pipelines.ingest.spec import IngestSpec
from resources.jetstream import ObjectStoreSpec, StreamSpec, Topology

DAY = 86_400  # seconds

FILE_EVENTS = StreamSpec(
    name="FILE_EVENTS",
    subjects=("files.>",),
    description="File trash service events: FileDeletedEvent, FilePlacedInTrashEvent.",
    max_age=7 * DAY,
    max_bytes=1 << 30,
    duplicate_window=120,
)

BRONZE_FILE_EVENTS = IngestSpec(
    name="file_events",
    stream=FILE_EVENTS.name,
    durable="lakehouse-bronze",
    filter_subjects=("files.>",),
    table="bronze/file_events",
)

CHECKPOINTS = BRONZE_FILE_EVENTS.checkpoint_bucket_spec()

ARTIFACTS = ObjectStoreSpec(
    "lakehouse-artifacts", description="Validation reports and run manifests."
)

FILE_TRASH_TOPOLOGY = Topology(
    streams=(FILE_EVENTS,),
    consumers=(BRONZE_FILE_EVENTS.consumer_spec(),),
    kv_buckets=(CHECKPOINTS,),
    object_buckets=(ARTIFACTS,),
)
