"""The file trash pipeline's JetStream topology and ingests, declared once.

The demo, `make dev` and the tests provision the server from `FILE_TRASH_TOPOLOGY` with
`resources.jetstream.reconcile`; the assets are built from the ingest specs.
"""

from __future__ import annotations

from pipelines.ingest.spec import IngestSpec
from resources.jetstream import KeyValueSpec, ObjectStoreSpec, StreamSpec, Topology

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

# Fan-out: a second durable consumer on the same subjects, at its own position. Its falling
# behind never affects the bronze ingest (seeds: the audit-logger service).
AUDIT_LOG = IngestSpec(
    name="audit_log",
    stream=FILE_EVENTS.name,
    durable="audit-logger",
    filter_subjects=("files.>",),
    table="audit/audit_log",
)

# Message filter: a consumer that only ever sees `files.trashed` (the notification service).
TRASH_NOTIFICATIONS = IngestSpec(
    name="trash_notifications",
    stream=FILE_EVENTS.name,
    durable="notification-service",
    filter_subjects=("files.trashed",),
    table="bronze/trash_notifications",
)

INGESTS = (BRONZE_FILE_EVENTS, AUDIT_LOG, TRASH_NOTIFICATIONS)

CHECKPOINTS = BRONZE_FILE_EVENTS.checkpoint_bucket_spec()

REPLAY_REQUESTS = KeyValueSpec(
    "lakehouse-replays",
    description="Replay requests (a sequence range or a time window per key) and outcomes.",
    history=10,
)

ARTIFACTS = ObjectStoreSpec(
    "lakehouse-artifacts", description="Validation reports and run manifests."
)

FILE_TRASH_TOPOLOGY = Topology(
    streams=(FILE_EVENTS,),
    consumers=tuple(ingest.consumer_spec() for ingest in INGESTS),
    kv_buckets=(CHECKPOINTS, REPLAY_REQUESTS),
    object_buckets=(ARTIFACTS,),
)
