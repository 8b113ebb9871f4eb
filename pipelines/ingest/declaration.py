"""A `JetStreamStream` declaration's stream and ingests as specs, read the same way by the
component (`pipelines.components.models`) and by code that needs the specs without loading
Dagster's components (`pipelines/file_trash/topology.py` reads the file trash's defs.yaml so).

    stream:   name, subjects, description, max_age_seconds, max_bytes,
              duplicate_window_seconds, replicas           -> resources.jetstream.StreamSpec
    ingests:  name, durable, table, filter_subjects, max_messages, readers,
              max_lag_messages, max_lag_age_seconds        -> pipelines.ingest.IngestSpec

Replicas left unset come from `JSL_NATS_REPLICAS` (`pipelines.settings`), for the stream and
for each ingest's checkpoint bucket; unset there too, they are not declared (the server's
default on create, and an existing stream keeps its own).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from pipelines.ingest.spec import IngestSpec
from pipelines.settings import Settings
from resources.jetstream import StreamSpec

# Declared name -> StreamSpec field.
STREAM_FIELDS = {
    "name": "name",
    "subjects": "subjects",
    "description": "description",
    "max_age_seconds": "max_age",
    "max_bytes": "max_bytes",
    "duplicate_window_seconds": "duplicate_window",
    "replicas": "replicas",
}
# Declared name -> IngestSpec field (the rest of an ingest is Dagster's: key prefix, replay).
INGEST_FIELDS = {
    "name": "name",
    "durable": "durable",
    "table": "table",
    "filter_subjects": "filter_subjects",
    "max_messages": "max_messages",
    "readers": "readers",
    "max_lag_messages": "max_lag_messages",
    "max_lag_age_seconds": "max_lag_age",
}


def default_replicas() -> int | None:
    """`JSL_NATS_REPLICAS`, or None (undeclared)."""
    return Settings.from_env().nats_replicas


def stream_spec(declared: Mapping[str, Any]) -> StreamSpec:
    """The stream's spec from its declaration (`stream:` of a defs.yaml)."""
    given = {
        STREAM_FIELDS[key]: value
        for key, value in declared.items()
        if key in STREAM_FIELDS and value is not None
    }
    given["subjects"] = tuple(given.get("subjects", ()))
    given.setdefault("replicas", default_replicas())
    return StreamSpec(**given)


def ingest_spec(stream: StreamSpec, declared: Mapping[str, Any]) -> IngestSpec:
    """An ingest's spec from its declaration (one of `ingests:`), reading `stream`; its
    checkpoint bucket takes the stream's replicas."""
    given = {
        INGEST_FIELDS[key]: value
        for key, value in declared.items()
        if key in INGEST_FIELDS and value is not None
    }
    given["filter_subjects"] = tuple(given.get("filter_subjects", ()))
    return IngestSpec(stream=stream.name, checkpoint_replicas=stream.replicas, **given)


def read_declaration(defs_yaml: Path) -> tuple[StreamSpec, tuple[IngestSpec, ...]]:
    """The stream and ingest specs a `JetStreamStream` defs.yaml declares, read as plain YAML
    (no `{{ env.X }}` templates; `dg check defs` validates the file itself).

    Raises:
        ValueError: naming the file, when it is not a JetStreamStream declaration.
    """
    document = yaml.safe_load(defs_yaml.read_text())
    attributes = (document or {}).get("attributes") or {}
    if not isinstance(attributes.get("stream"), Mapping) or not attributes.get("ingests"):
        raise ValueError(f"{defs_yaml}: declares no JetStreamStream stream and ingests")
    stream = stream_spec(attributes["stream"])
    return stream, tuple(ingest_spec(stream, ingest) for ingest in attributes["ingests"])
