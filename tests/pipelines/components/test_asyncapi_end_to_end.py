"""Two public AsyncAPI documents, unedited (the Streetlights example as AsyncAPI 2.6.0 and
3.1.0, tests/pipelines/contract/fixtures/public/), each declared as the contract of a
stream by `asyncapi_file:` alone, land a stream end to end.

Per document: a real nats-server of its own (both documents' channels are the same subjects,
which two streams of one server may not share), the `JetStreamStream` component over a
stream capturing `smartylighting.streetlights.1.0.>`, the same nine messages published on
real subjects with real headers (valid and invalid on a payload rule, a parameter-free
header rule, a header type, JSON), and one `materialize` of bronze and silver with real
Spark and Delta. Then: each valid message is in its event type's silver table with the
streetlight id taken from its subject, the header's value typed, and, for the message the
turn-on and turn-off channels share, the channel it came on; each invalid one is in the
quarantine with the rule it broke.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dagster import ComponentTree, DagsterInstance, materialize

from pipelines.components.models import IngestModel, StreamModel
from pipelines.components.stream import JetStreamStream
from resources.jetstream import EmbeddedNatsServer, JetStreamResource, reconcile
from resources.lakehouse import LakehouseResource
from resources.quality import DataQualityResource
from resources.spark import SparkResource

PUBLIC = Path(__file__).resolve().parents[1] / "contract" / "fixtures" / "public"
PREFIX = "smartylighting.streetlights.1.0"
SENT = "2026-11-20T10:00:00Z"
# (subject, payload, my-app-header or None): the same for both documents.
MESSAGES = [
    (f"{PREFIX}.event.sl-1.lighting.measured", {"lumens": 120, "sentAt": SENT}, "7"),
    (f"{PREFIX}.event.sl-2.lighting.measured", {"lumens": -5, "sentAt": SENT}, "7"),
    (f"{PREFIX}.action.sl-1.turn.on", {"command": "on", "sentAt": SENT}, "3"),
    (f"{PREFIX}.action.sl-2.turn.off", {"command": "off", "sentAt": SENT}, None),
    (f"{PREFIX}.action.sl-3.turn.off", {"command": "explode", "sentAt": SENT}, None),
    (f"{PREFIX}.action.sl-4.dim", {"percentage": 50, "sentAt": SENT}, "500"),
    (f"{PREFIX}.action.sl-5.dim", {"percentage": 30, "sentAt": SENT}, "loud"),
    (f"{PREFIX}.action.sl-6.dim", b"not json", None),
    (f"{PREFIX}.action.sl-7.dim", {"percentage": 80, "sentAt": SENT}, "0"),
]
ON = {"2.6": f"{PREFIX}.action.{{streetlightId}}.turn.on", "3.1": "lightTurnOn"}
OFF = {"2.6": f"{PREFIX}.action.{{streetlightId}}.turn.off", "3.1": "lightTurnOff"}


def land(version: str, root: Path, spark) -> dict[str, list[tuple]]:
    """Publishes MESSAGES to a fresh server and lands them; returns each table's rows."""
    declared = JetStreamStream(
        stream=StreamModel(name="STREETLIGHTS", subjects=[f"{PREFIX}.>"]),
        ingests=[IngestModel(name="lights", durable="lights-bronze", table="bronze/lights")],
        asyncapi_file=str(PUBLIC / f"streetlights-kafka-{version}.yml"),
    )
    with EmbeddedNatsServer(store_dir=root / "nats") as server:
        resources = {
            "jetstream": JetStreamResource(servers=server.url),
            "spark": SparkResource(),
            "lakehouse": LakehouseResource(root=str(root / "lakehouse")),
            "quality": DataQualityResource(),
        }
        with resources["jetstream"].client() as client:
            reconcile(client, declared.topology())
            client.publish_batch(
                [
                    (
                        subject,
                        body if isinstance(body, bytes) else json.dumps(body).encode(),
                        {"my-app-header": header} if header is not None else None,
                    )
                    for subject, body, header in MESSAGES
                ]
            )
        defs = declared.build_defs(ComponentTree.for_test().load_context)
        with DagsterInstance.ephemeral() as instance:
            result = materialize(defs.assets, resources=resources, instance=instance)
        assert result.success

    def rows(table: str, *columns: str) -> list[tuple]:
        frame = spark.read.format("delta").load(resources["lakehouse"].table_path(table))
        return sorted(tuple(r) for r in frame.select(*columns).collect())

    return {
        "measured": rows(
            "silver/light_measured", "seq", "streetlight_id", "lumens", "my_app_header"
        ),
        "switch": rows(
            "silver/turn_on_off", "seq", "streetlight_id", "command", "my_app_header", "channel"
        ),
        "dim": rows("silver/dim_light", "seq", "streetlight_id", "percentage", "my_app_header"),
        "quarantine": rows("quarantine/streetlights", "seq", "subject", "failed_rules"),
        "bronze": rows("bronze/lights", "seq"),
    }


@pytest.fixture(scope="module", params=["2.6", "3.1"])
def landed(request, spark, tmp_path_factory) -> tuple[str, dict[str, list[tuple]]]:
    root = tmp_path_factory.mktemp(f"streetlights-{request.param}")
    return request.param, land(request.param, root, spark)


def test_a_public_asyncapi_document_lands_its_stream_in_silver_and_quarantine(landed):
    version, tables = landed

    assert tables["bronze"] == [(seq,) for seq in range(1, 10)]
    assert tables["measured"] == [(1, "sl-1", 120, 7)]
    assert tables["switch"] == [
        (3, "sl-1", "on", 3, ON[version]),
        (4, "sl-2", "off", None, OFF[version]),
    ]
    assert tables["dim"] == [(9, "sl-7", 80, 0)]
    quarantine = {
        seq: (subject.split(".")[5], rules) for seq, subject, rules in tables["quarantine"]
    }
    assert quarantine == {
        2: ("sl-2", ["lumens_in_range"]),
        5: ("sl-3", ["command_in_allowed_values"]),
        6: ("sl-4", ["my_app_header_in_range"]),
        7: ("sl-5", ["field_types_valid"]),
        8: ("sl-6", ["parseable_json"]),
    }
