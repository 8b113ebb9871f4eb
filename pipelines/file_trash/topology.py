"""The file trash pipeline's JetStream topology and ingests.

The stream and its three ingests are declared in `pipelines/defs/file_events/defs.yaml` (a
`JetStreamStream` component, which builds their assets); this module reads the same specs
from it (`pipelines.ingest.declaration`) and adds the buckets the domain needs. Its event contract,
which the declared silver is generated from, is `pipelines/file_trash/contract.yaml`. The demo,
`make dev` and the tests provision the server from `FILE_TRASH_TOPOLOGY` with
`resources.jetstream.reconcile`.

Replicas of the stream, the consumers and the buckets come from `JSL_NATS_REPLICAS` (see
`pipelines.settings`), read when this module is imported: unset, they are undeclared (the
server's default on create, and an existing object keeps its own, so provisioning never
scales an operator's R3 stream down). `file_trash_topology(replicas)` builds the same
topology for another number.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path

from pipelines.contract import Contract, read_contract
from pipelines.ingest.declaration import read_declaration
from pipelines.lakehouse.artifacts import ARTIFACTS_BUCKET, ARTIFACTS_DESCRIPTION
from pipelines.settings import Settings
from resources.jetstream import KeyValueSpec, ObjectStoreSpec, Topology

DEFS_YAML = Path(__file__).resolve().parents[1] / "defs" / "file_events" / "defs.yaml"
CONTRACT_FILE = Path(__file__).resolve().with_name("contract.yaml")  # defs.yaml's contract_file
REPLICAS = Settings.from_env().nats_replicas  # None: undeclared

# The stream and its ingests are declared in the defs folder, as any stream is; the specs
# are read from there.
FILE_EVENTS, (BRONZE_FILE_EVENTS, AUDIT_LOG, TRASH_NOTIFICATIONS) = read_declaration(DEFS_YAML)

INGESTS = (BRONZE_FILE_EVENTS, AUDIT_LOG, TRASH_NOTIFICATIONS)

CHECKPOINTS = BRONZE_FILE_EVENTS.checkpoint_bucket_spec()

REPLAY_REQUESTS = KeyValueSpec(
    "lakehouse-replays",
    description="Replay requests (a sequence range or a time window per key) and outcomes.",
    history=10,
    replicas=REPLICAS,
)

ARTIFACTS = ObjectStoreSpec(ARTIFACTS_BUCKET, description=ARTIFACTS_DESCRIPTION, replicas=REPLICAS)


@functools.cache
def file_trash_contract() -> Contract:
    """FILE_EVENTS' event contract (`pipelines/file_trash/contract.yaml`), which its silver
    is generated from."""
    return read_contract(CONTRACT_FILE)


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
