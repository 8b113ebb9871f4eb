"""AsyncAPI 3.0: the stream's channels, their messages as event types, and what fails."""

from pathlib import Path

import pytest
import yaml

from pipelines.contract import ContractError, Envelope, contract_from_asyncapi, read_asyncapi
from pipelines.contract.datatypes import TYPE_HELP

ORDERS = Path(__file__).parent / "fixtures" / "orders.asyncapi.yaml"
ENVELOPE = Envelope(event_type="eventType", event_id="eventId", event_time="occurredAt")


@pytest.fixture
def document() -> dict:
    return yaml.safe_load(ORDERS.read_text())


def read(document: dict, stream: str = "ORDERS"):
    return contract_from_asyncapi(document, stream=stream, envelope=ENVELOPE, source="o.yaml")


def test_only_the_channels_bound_to_the_stream_are_read(document):
    contract = read(document)

    assert [(e.name, e.subjects) for e in contract.event_types] == [
        ("OrderPlaced", ("orders.placed",)),
        ("OrderShipped", ("orders.shipped",)),
    ]
    assert [e.table for e in contract.event_types] == [
        "silver/order_placed",
        "silver/order_shipped",
    ]


def test_a_message_on_two_channels_is_one_event_type_with_both_subjects(document):
    document["channels"]["ordersShippedEu"] = {
        "address": "orders.{region}.shipped",
        "messages": {"OrderShipped": {"$ref": "#/components/messages/OrderShipped"}},
        "bindings": {"nats": {"jetstream": {"stream": "ORDERS"}}},
    }

    shipped = read(document).event_type("OrderShipped")

    assert shipped.subjects == ("orders.shipped", "orders.*.shipped")


def test_without_a_discriminator_the_message_name_names_the_event_type(document):
    for name in ("OrderPlaced", "OrderShipped"):
        del document["components"]["schemas"][name]["properties"]["eventType"]["const"]

    contract = contract_from_asyncapi(document, stream="ORDERS")

    assert [e.name for e in contract.event_types] == ["OrderPlaced", "OrderShipped"]
    assert "known_event_type" not in contract.rule_names


def test_a_stream_without_channels_fails_naming_the_streams_the_document_has(document):
    with pytest.raises(ContractError) as raised:
        read(document, stream="PAYMENTS")

    assert str(raised.value) == (
        "o.yaml: #/channels: no channel is bound to stream 'PAYMENTS' "
        "(bindings.nats.jetstream.stream); its streams: AUDIT, ORDERS"
    )


@pytest.mark.parametrize(
    ("change", "where", "message"),
    [
        (lambda d: d.update(asyncapi="2.6.0"), "#/asyncapi", "expected an AsyncAPI 3.x document"),
        (
            lambda d: d["components"]["schemas"]["OrderPlaced"]["properties"]["data"].update(
                oneOf=[]
            ),
            "#/components/schemas/OrderPlaced/properties/data/oneOf",
            "unsupported JSON Schema keyword 'oneOf' (declare one schema per event type instead)",
        ),
        (
            lambda d: d["components"]["messages"]["OrderPlaced"].pop("payload"),
            "#/components/messages/OrderPlaced/payload",
            "the message has no payload schema",
        ),
        (
            lambda d: d["components"]["messages"]["OrderShipped"]["payload"].update(
                schemaFormat="application/vnd.apache.avro;version=1.9.0"
            ),
            "#/components/messages/OrderShipped/payload/schemaFormat",
            "is not JSON Schema",
        ),
        (
            lambda d: d["channels"]["ordersPlaced"].pop("address"),
            "#/channels/ordersPlaced/address",
            "channel 'ordersPlaced' of stream 'ORDERS' needs an address",
        ),
        (
            lambda d: d["channels"]["ordersPlaced"]["messages"].update(
                Other={"$ref": "#/components/messages/Missing"}
            ),
            "#/channels/ordersPlaced/messages/Other/$ref",
            "points to nothing in this document",
        ),
        (
            lambda d: d["components"]["schemas"]["OrderShipped"]["properties"]["eventType"].update(
                const="OrderPlaced"
            ),
            "#/channels",
            "two messages of stream 'ORDERS' are event type 'OrderPlaced'",
        ),
    ],
)
def test_a_bad_document_fails_with_the_json_pointer(document, change, where, message):
    change(document)

    with pytest.raises(ContractError) as raised:
        read(document)

    assert str(raised.value).startswith(f"o.yaml: {where}: ")
    assert message in str(raised.value)


def read_file_error(tmp_path: Path, document: dict, marker: str) -> tuple[str, str]:
    """Reads `document` from a file; returns the error and `<file>:<line>` of `marker`."""
    path = tmp_path / "orders.asyncapi.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if marker in text)
    with pytest.raises(ContractError) as raised:
        read_asyncapi(path, stream="ORDERS", envelope=ENVELOPE)
    return str(raised.value), f"{path}:{line}"


def test_errors_from_a_file_name_its_line(tmp_path, document):
    document["components"]["schemas"]["OrderId"]["patternProperties"] = {}

    error, where = read_file_error(tmp_path, document, "patternProperties")

    assert error.startswith(f"{where}: #/components/schemas/OrderId/patternProperties: unsupported")


def test_x_jsl_severities_at_the_document_root_set_the_built_in_rules_severities(document):
    document["x-jsl-severities"] = {"event_id_unique": "quarantine+block"}

    contract = read(document)

    severities = {rule.name: rule.severity.value for rule in contract.rules}
    assert severities["event_id_unique"] == "quarantine+block"
    assert severities["parseable_json"] == "quarantine"


def test_x_jsl_severities_elsewhere_or_wrong_fail_with_the_json_pointer(tmp_path, document):
    document["x-jsl-severities"] = {"event_id_unique": "block"}
    error, where = read_file_error(tmp_path, document, "event_id_unique")
    assert error.startswith(
        f"{where}: #/x-jsl-severities/event_id_unique: a built-in rule's row cannot stay"
    )

    del document["x-jsl-severities"]
    document["components"]["schemas"]["OrderPlaced"]["x-jsl-severities"] = {}
    with pytest.raises(ContractError) as raised:
        read(document)
    assert "OrderPlaced/x-jsl-severities: x-jsl-severities is read only at the document's root" in (
        str(raised.value)
    )


def test_an_unsupported_payload_type_or_format_lists_what_is_supported(tmp_path, document):
    schemas = document["components"]["schemas"]
    schemas["OrderPlaced"]["properties"]["data"]["properties"]["customerId"] = {"type": "varchar"}

    error, where = read_file_error(tmp_path, document, "varchar")

    assert error.startswith(
        f"{where}: #/components/schemas/OrderPlaced/properties/data/properties/customerId/type: "
        "unsupported type 'varchar'; use string, integer, number, boolean, object or array"
    )
    assert error.endswith(f"or x-jsl-type with a contract type: {TYPE_HELP}")
    message = document["components"]["messages"]["OrderShipped"]
    message["payload"]["schemaFormat"] = "application/vnd.apache.avro;version=1.9.0"
    schemas["OrderPlaced"]["properties"]["data"]["properties"]["customerId"] = {"type": "string"}
    with pytest.raises(ContractError) as raised:
        read(document)
    assert "payload/schemaFormat: schemaFormat 'application/vnd.apache.avro;version=1.9.0'" in (
        str(raised.value)
    )
    assert "JSON Schema payloads only: use application/schema+json or application/schema+yaml" in (
        str(raised.value)
    )
