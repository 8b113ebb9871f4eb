"""`dg scaffold defs pipelines.components.JetStreamStream NAME --asyncapi FILE`: a `defs.yaml`
declaring a public AsyncAPI document's stream (its subjects from the channels, the document
copied unedited beside it, a silver table per message), which `dg check defs` loads."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from tests.pipelines.components.test_stream_component import COMPONENT, dg, project  # noqa: F401

PUBLIC = Path(__file__).resolve().parents[1] / "contract" / "fixtures" / "public"
PREFIX = "smartylighting.streetlights.1.0"


def test_scaffolding_from_an_asyncapi_document_declares_its_stream(project: Path) -> None:  # noqa: F811
    document = PUBLIC / "streetlights-kafka-3.1.yml"
    shutil.copy(document, project / "lights.yml")
    folder = project / "orders_project" / "defs" / "lights"
    try:
        done = dg("scaffold", "defs", COMPONENT, "lights", "--asyncapi", "lights.yml", cwd=project)
        assert done.returncode == 0, done.stdout + done.stderr
        declared = yaml.safe_load((folder / "defs.yaml").read_text())
        checked = dg("check", "defs", cwd=project)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    assert declared == {
        "type": COMPONENT,
        "attributes": {
            "stream": {
                "name": "STREETLIGHTS_KAFKA_API",
                "subjects": [
                    f"{PREFIX}.event.*.lighting.measured",
                    f"{PREFIX}.action.*.turn.on",
                    f"{PREFIX}.action.*.turn.off",
                    f"{PREFIX}.action.*.dim",
                ],
            },
            "ingests": [
                {
                    "name": "streetlights_kafka_api_events",
                    "durable": "streetlights_kafka_api-bronze",
                    "table": "bronze/streetlights_kafka_api_events",
                }
            ],
            "asyncapi_file": "lights.yml",
            "tables": {
                "lightMeasured": "silver/streetlights_kafka_api_light_measured",
                "turnOnOff": "silver/streetlights_kafka_api_turn_on_off",
                "dimLight": "silver/streetlights_kafka_api_dim_light",
            },
        },
    }
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_scaffolding_with_a_stream_and_subjects_narrows_the_document(project: Path) -> None:  # noqa: F811
    document = PUBLIC / "streetlights-kafka-2.6.yml"
    folder = project / "orders_project" / "defs" / "dim"
    try:
        done = dg(
            "scaffold", "defs", COMPONENT, "dim", "--asyncapi", str(document),
            "--stream", "DIM", "--subjects", f"{PREFIX}.action.*.dim", cwd=project,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        declared = yaml.safe_load((folder / "defs.yaml").read_text())["attributes"]
        copied = (folder / document.name).read_bytes()
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    assert declared["stream"] == {"name": "DIM", "subjects": [f"{PREFIX}.action.*.dim"]}
    assert declared["tables"] == {"dimLight": "silver/dim_dim_light"}
    assert copied == document.read_bytes()
