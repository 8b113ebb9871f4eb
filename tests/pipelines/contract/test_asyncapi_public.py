"""Two public AsyncAPI documents, unedited (the official Streetlights example over Kafka, as
AsyncAPI 2.6.0 and 3.1.0; origin and license in fixtures/public/README.md), each read as the
contract of a stream whose subjects cover its channels: the same event types, parameter and
header columns and rules from both versions."""

import hashlib
from pathlib import Path

import pytest

from pipelines.contract import read_asyncapi

PUBLIC = Path(__file__).parent / "fixtures" / "public"
# The files as published (sha256), so an edit shows.
DOCUMENTS = {
    "streetlights-kafka-2.6.yml": "71eff9ffa9b2fb0550fbd90544f669818281546606a6528d92866aba"
    "645f2a99",
    "streetlights-kafka-3.1.yml": "916c6d5a3c16ce9d2837f24ffc27509044de4fe8c2685de50917438b"
    "0d5b2076",
}
SUBJECTS = ["smartylighting.streetlights.1.0.>"]
PREFIX = "smartylighting.streetlights.1.0"
COMMON = [
    ("subject:5", "streetlight_id", "string", True),
    ("header:my-app-header", "my_app_header", "long", False),
]


@pytest.fixture(params=list(DOCUMENTS))
def document(request) -> Path:
    path = PUBLIC / request.param
    assert hashlib.sha256(path.read_bytes()).hexdigest() == DOCUMENTS[request.param]
    return path


def fields(event) -> list[tuple]:
    return [(f.path, f.column, str(f.type), f.required) for f in event.fields]


def test_a_public_document_is_a_stream_contract_with_parameter_and_header_columns(document):
    contract = read_asyncapi(document, stream="STREETLIGHTS", subjects=SUBJECTS)

    assert [(e.name, e.table, e.subjects) for e in contract.event_types] == [
        ("lightMeasured", "silver/light_measured", (f"{PREFIX}.event.*.lighting.measured",)),
        (
            "turnOnOff",
            "silver/turn_on_off",
            (f"{PREFIX}.action.*.turn.on", f"{PREFIX}.action.*.turn.off"),
        ),
        ("dimLight", "silver/dim_light", (f"{PREFIX}.action.*.dim",)),
    ]
    measured, switch, dim = contract.event_types
    sent_at = ("sentAt", "sent_at", "timestamp(iso8601)", False)
    assert fields(measured) == [("lumens", "lumens", "long", False), sent_at, *COMMON]
    assert fields(switch) == [("command", "command", "string", False), sent_at, *COMMON]
    assert fields(dim) == [("percentage", "percentage", "long", False), sent_at, *COMMON]
    assert switch.field("command").constraints[0].values == ("on", "off")
    assert contract.rule_names == (
        "parseable_json",
        "required_fields_present",
        "field_types_valid",
        "lumens_in_range",
        "my_app_header_in_range",
        "command_in_allowed_values",
        "percentage_in_range",
    )
    assert contract.version == "1.0.0"


def test_the_shared_turn_on_off_message_keeps_its_channel_in_a_column(document):
    switch = read_asyncapi(document, stream="S", subjects=SUBJECTS).event_type("turnOnOff")

    (channel,) = switch.derived
    on, off = (
        ("lightTurnOn", "lightTurnOff")
        if "3.1" in document.name
        else (
            f"{PREFIX}.action.{{streetlightId}}.turn.on",
            f"{PREFIX}.action.{{streetlightId}}.turn.off",
        )
    )
    assert channel.expression == (
        "CASE WHEN subject RLIKE '^smartylighting[.]streetlights[.]1[.]0[.]action[.][^.]+"
        f"[.]turn[.]on$' THEN '{on}' WHEN subject RLIKE '^smartylighting[.]streetlights[.]1"
        f"[.]0[.]action[.][^.]+[.]turn[.]off$' THEN '{off}' END"
    )


def test_a_stream_over_part_of_the_subjects_takes_those_channels_only(document):
    contract = read_asyncapi(document, stream="S", subjects=[f"{PREFIX}.action.*.dim"])

    assert [e.name for e in contract.event_types] == ["dimLight"]
