"""The file trash's stream and ingests are declared in `pipelines/defs/file_events/defs.yaml`;
the specs the rest of the project uses are read from there, the same way the component does."""

from pathlib import Path

import pytest
import yaml
from dagster import ComponentTree

from pipelines.cli.provisioning import declared_topology
from pipelines.components import JetStreamStream
from pipelines.file_trash.topology import DEFS_YAML, FILE_EVENTS, FILE_TRASH_TOPOLOGY, INGESTS
from pipelines.ingest.declaration import ingest_spec, read_declaration, stream_spec
from pipelines.settings import PROJECT_DIR


def test_the_file_trash_stream_and_ingests_are_read_from_their_defs_yaml(monkeypatch):
    monkeypatch.delenv("JSL_NATS_REPLICAS", raising=False)

    stream, ingests = read_declaration(DEFS_YAML)

    assert (stream.name, stream.subjects, stream.max_age, stream.max_bytes) == (
        "FILE_EVENTS", ("files.>",), 7 * 86_400, 1 << 30
    )  # fmt: skip
    assert (stream.duplicate_window, stream.replicas) == (120, None)
    assert [(i.name, i.durable, i.table, i.filter_subjects) for i in ingests] == [
        ("file_events", "lakehouse-bronze", "bronze/file_events", ("files.>",)),
        ("audit_log", "audit-logger", "audit/audit_log", ("files.>",)),
        ("trash_notifications", "notification-service", "bronze/trash_notifications",
         ("files.trashed",)),
    ]  # fmt: skip
    assert (stream, ingests) == (FILE_EVENTS, INGESTS)


def test_the_component_builds_the_same_specs_so_provisioning_declares_them_once():
    [component] = ComponentTree.for_project(PROJECT_DIR).get_all_components(JetStreamStream)
    topology = component.topology()

    assert topology.streams == (FILE_EVENTS,)
    assert set(topology.consumers) == set(FILE_TRASH_TOPOLOGY.consumers)
    merged = declared_topology(PROJECT_DIR)
    assert (merged.streams, set(merged.consumers)) == (
        FILE_TRASH_TOPOLOGY.streams, set(FILE_TRASH_TOPOLOGY.consumers)
    )  # fmt: skip


def test_replicas_left_unset_come_from_jsl_nats_replicas_for_the_stream_and_checkpoints(
    monkeypatch,
):
    monkeypatch.setenv("JSL_NATS_REPLICAS", "3")

    stream = stream_spec({"name": "ORDERS", "subjects": ["orders.>"]})
    ingest = ingest_spec(stream, {"name": "o", "durable": "o", "table": "bronze/o"})
    pinned = stream_spec({"name": "ORDERS", "subjects": ["orders.>"], "replicas": 1})

    assert (stream.replicas, ingest.checkpoint_replicas, pinned.replicas) == (3, 3, 1)


def test_a_file_that_declares_no_stream_is_named(tmp_path: Path):
    path = tmp_path / "defs.yaml"
    path.write_text(yaml.safe_dump({"type": "x", "attributes": {}}))

    with pytest.raises(ValueError) as raised:
        read_declaration(path)

    assert str(raised.value) == f"{path}: declares no JetStreamStream stream and ingests"
