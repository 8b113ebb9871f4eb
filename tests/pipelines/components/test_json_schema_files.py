"""`json_schema_files`: a stream's contract from JSON Schema files as a tool wrote them."""

import json
from pathlib import Path

import pytest
import yaml

from pipelines.components.errors import ComponentDeclarationError
from pipelines.components.stream import JetStreamStream

PLACED = {
    "title": "OrderPlaced",
    "type": "object",
    "required": ["eventId", "eventType", "amount"],
    "properties": {
        "eventId": {"type": "string", "format": "uuid"},
        "eventType": {"const": "OrderPlaced"},
        "amount": {"type": "integer", "exclusiveMinimum": 0},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
}
DEFS = """\
type: pipelines.components.JetStreamStream

attributes:
  stream:
    name: ORDERS
    subjects: ["orders.>"]
  ingests:
    - {name: orders_events, durable: orders-bronze, table: bronze/orders_events}
  json_schema_files: [{files}]
  envelope: {event_type: eventType, event_id: eventId}
"""


def declared(folder: Path, files: str, schemas: dict[str, dict]) -> JetStreamStream:
    for name, schema in schemas.items():
        (folder / name).write_text(json.dumps(schema, indent=2))
    text = DEFS.replace("{files}", files)
    (folder / "defs.yaml").write_text(text)
    return JetStreamStream(**yaml.safe_load(text)["attributes"])


def test_the_files_are_the_contract(tmp_path):
    shipped = {**PLACED, "title": "OrderShipped", "required": ["eventId", "eventType"]}
    shipped["properties"] = {**PLACED["properties"], "eventType": {"const": "OrderShipped"}}
    stream = declared(
        tmp_path, "placed.json, shipped.json", {"placed.json": PLACED, "shipped.json": shipped}
    )
    contract = stream.read_contract(tmp_path)

    assert [e.name for e in contract.event_types] == ["OrderPlaced", "OrderShipped"]
    rules = [r.name for r in contract.rules if not r.builtin]
    assert rules == ["event_id_is_uuid", "amount_in_range"]


def test_a_broken_schema_names_the_defs_yaml_line_then_the_file_line_and_pointer(tmp_path):
    wrong = {"amount": {"type": "numbr"}, "note": {"type": "string", "pattern": "(("}}
    broken = {**PLACED, "properties": {**PLACED["properties"], **wrong}}
    stream = declared(tmp_path, "placed.json", {"placed.json": broken})

    with pytest.raises(ComponentDeclarationError) as raised:
        stream.read_contract(tmp_path)

    text = str(raised.value)
    assert text.startswith(f"{tmp_path}/defs.yaml:9: attributes.json_schema_files: placed.json:")
    assert "#/properties/amount/type: unsupported type 'numbr'" in text
    # Every problem of the document in one read, each with its place:
    assert "and 1 more problem(s):\n  - placed.json:" in text
    assert "#/properties/note/pattern: " in text


def test_a_missing_file_names_the_defs_yaml_line_and_the_files_there(tmp_path):
    stream = declared(tmp_path, "placed.json, shiped.json", {"placed.json": PLACED})

    with pytest.raises(ComponentDeclarationError) as raised:
        stream.read_contract(tmp_path)

    assert str(raised.value).startswith(
        f"{tmp_path}/defs.yaml:9: attributes.json_schema_files: no file 'shiped.json' in "
    )
