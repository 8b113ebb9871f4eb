"""The file trash pipeline's JetStream topology and ingests, declared once.

The demo, `make dev` and the tests provision the server from `FILE_TRASH_TOPOLOGY` with
`resources.jetstream.reconcile`; the assets are built from the ingest specs.

Replicas of the stream, the consumers and the buckets come from `JSL_NATS_REPLICAS` (see
`pipelines.settings`), read when this module is imported: unset, they are undeclared (the
server's default on create, and an existing object keeps its own, so provisioning never
scales an operator's R3 stream down). `file_trash_topology(replicas)` builds the same
topology for another number.
"""

from __future__ import annotations

from dataclasses import replace

from pipelines.ingest.spec import IngestSpec
from pipelines.settings import Settings
from resources.jetstream import KeyValueSpec, ObjectStoreSpec, StreamSpec, Topology

DAY = 86_400  # seconds
REPLICAS = Settings.from_env().nats_replicas  # None: undeclared

FILE_EVENTS = StreamSpec(
    name="FILE_EVENTS",
    subjects=("files.>",),
    description="File trash service events: FileDeletedEvent, FilePlacedInTrashEvent.",
    max_age=7 * DAY,
    max_bytes=1 << 30,
    duplicate_window=120,
    replicas=REPLICAS,
)

BRONZE_FILE_EVENTS = IngestSpec(
    name="file_events",
    stream=FILE_EVENTS.name,
    durable="lakehouse-bronze",
    filter_subjects=("files.>",),
    table="bronze/file_events",
    checkpoint_replicas=REPLICAS,
)

# Fan-out: a second durable consumer on the same subjects, at its own position. Its falling
# behind never affects the bronze ingest (seeds: the audit-logger service).
AUDIT_LOG = IngestSpec(
    name="audit_log",
    stream=FILE_EVENTS.name,
    durable="audit-logger",
    filter_subjects=("files.>",),
    table="audit/audit_log",
    checkpoint_replicas=REPLICAS,
)

# Message filter: a consumer that only ever sees `files.trashed` (the notification service).
TRASH_NOTIFICATIONS = IngestSpec(
    name="trash_notifications",
    stream=FILE_EVENTS.name,
    durable="notification-service",
    filter_subjects=("files.trashed",),
    table="bronze/trash_notifications",
    checkpoint_replicas=REPLICAS,
)

INGESTS = (BRONZE_FILE_EVENTS, AUDIT_LOG, TRASH_NOTIFICATIONS)

CHECKPOINTS = BRONZE_FILE_EVENTS.checkpoint_bucket_spec()

REPLAY_REQUESTS = KeyValueSpec(
    "lakehouse-replays",
    description="Replay requests (a sequence range or a time window per key) and outcomes.",
    history=10,
    replicas=REPLICAS,
)

ARTIFACTS = ObjectStoreSpec(
    "lakehouse-artifacts", description="Validation reports and run manifests.", replicas=REPLICAS
)


def file_trash_topology(replicas: int | None) -> Topology:
    """The file trash topology with `replicas` for the stream and the buckets (None:
    undeclared). The consumers are durable and take the stream's replicas."""
    ingests = [replace(ingest, checkpoint_replicas=replicas) for ingest in INGESTS]
    return Topology(
        streams=(replace(FILE_EVENTS, replicas=replicas),),
        consumers=tuple(ingest.consumer_spec() for ingest in ingests),
        kv_buckets=(
            ingests[0].checkpoint_bucket_spec(),
            replace(REPLAY_REQUESTS, replicas=replicas),
        ),
        object_buckets=(replace(ARTIFACTS, replicas=replicas),),
    )


FILE_TRASH_TOPOLOGY = file_trash_topology(REPLICAS)
