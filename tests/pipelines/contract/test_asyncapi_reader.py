"""AsyncAPI 2.x and 3.x: the stream's channels (under its subjects, narrowed by a mark), their
messages as event types, channel parameters and headers as columns, and what fails."""

from pathlib import Path

import pytest
import yaml

from pipelines.contract import ContractError, Envelope, contract_from_asyncapi, read_asyncapi
from pipelines.contract.asyncapi_channels import covers
from pipelines.contract.datatypes import TYPE_HELP

FIXTURES = Path(__file__).parent / "fixtures"
ORDERS = FIXTURES / "orders.asyncapi.yaml"
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


def test_a_message_on_two_channels_is_one_event_type_with_both_subjects_and_a_channel_column(
    document,
):
    document["channels"]["ordersShippedEu"] = {
        "address": "orders.shipped.eu",
        "messages": {"OrderShipped": {"$ref": "#/components/messages/OrderShipped"}},
        "bindings": {"nats": {"jetstream": {"stream": "ORDERS"}}},
    }

    shipped = read(document).event_type("OrderShipped")

    assert shipped.subjects == ("orders.shipped", "orders.shipped.eu")
    assert [(d.name, d.expression, str(d.type)) for d in shipped.derived] == [
        (
            "channel",
            "CASE WHEN subject RLIKE '^orders[.]shipped$' THEN 'ordersShipped' "
            "WHEN subject RLIKE '^orders[.]shipped[.]eu$' THEN 'ordersShippedEu' END",
            "string",
        )
    ]
    assert read(document).event_type("OrderPlaced").derived == ()


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
        "o.yaml: #/channels: no channel is marked for stream 'PAYMENTS' (x-jsl-stream or "
        "bindings.nats.jetstream.stream), and the stream's subjects are not given; channels "
        "are marked for streams: AUDIT, ORDERS"
    )
    with pytest.raises(ContractError) as raised:
        contract_from_asyncapi(document, stream="PAYMENTS", subjects=["payments.>"], source="o")
    assert str(raised.value) == (
        "o: #/channels: no channel of stream 'PAYMENTS': no address falls under its subjects "
        "(payments.>); the addresses are orders.placed, orders.shipped, audit.orders; channels "
        "are marked for streams: AUDIT, ORDERS"
    )


@pytest.mark.parametrize(
    ("change", "where", "message"),
    [
        (
            lambda d: d.update(asyncapi="1.2.0"),
            "#/asyncapi",
            "expected an AsyncAPI 2.x (2.0 to 2.6) or 3.x (3.0, 3.1) document",
        ),
        (
            lambda d: d["components"]["schemas"]["OrderPlaced"]["properties"]["data"].update(
                {"x-jsl-typo": {}}
            ),
            "#/components/schemas/OrderPlaced/properties/data/x-jsl-typo",
            "unknown extension 'x-jsl-typo'",
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
    document["components"]["schemas"]["OrderId"]["type"] = "text"

    error, where = read_file_error(tmp_path, document, "type: text")

    assert error.startswith(f"{where}: #/components/schemas/OrderId/type: unsupported type")


def test_a_payload_keyword_no_column_expresses_is_left_to_the_validator(document):
    document["components"]["schemas"]["OrderId"]["patternProperties"] = {}

    placed = read(document).event_type("OrderPlaced")

    assert placed.schema_check.delegated == ("/components/schemas/OrderId/patternProperties",)
    assert placed.schema_check.at == "/components/messages/OrderPlaced/payload"


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


def unbound(document: dict) -> dict:
    """`document` as published by a team that knows nothing of this project: no marks."""
    for channel in document["channels"].values():
        channel.pop("bindings", None)
    return document


def test_without_a_mark_the_channels_under_the_stream_subjects_are_the_stream(document):
    contract = contract_from_asyncapi(
        unbound(document), stream="ORDERS", subjects=["orders.>"], envelope=ENVELOPE
    )

    assert [(e.name, e.subjects) for e in contract.event_types] == [
        ("OrderPlaced", ("orders.placed",)),
        ("OrderShipped", ("orders.shipped",)),
    ]


def test_a_mark_only_narrows_the_channels_under_the_subjects(document):
    document = unbound(document)
    document["channels"]["ordersShipped"]["x-jsl-stream"] = "SHIPPING"

    contract = contract_from_asyncapi(
        document, stream="ORDERS", subjects=["orders.>"], envelope=ENVELOPE
    )

    assert [e.name for e in contract.event_types] == ["OrderPlaced"]
    document["channels"]["auditOrders"]["x-jsl-stream"] = "ORDERS"
    with pytest.raises(ContractError) as raised:
        contract_from_asyncapi(document, stream="ORDERS", subjects=["orders.>"], source="o")
    assert str(raised.value) == (
        "o: #/channels/auditOrders: channel 'auditOrders' is marked for stream 'ORDERS', but "
        "its address 'audit.orders' is not under the stream's subjects (orders.>); add its "
        "subject to the stream"
    )


@pytest.mark.parametrize(
    ("wanted", "subject", "covered"),
    [
        ("orders.>", "orders.placed", True),
        ("orders.>", "orders.*.placed", True),
        ("orders.>", "orders", False),
        ("orders.*", "orders.*", True),
        ("orders.*", "orders.>", False),
        ("orders.*.placed", "orders.eu.placed", True),
        ("orders.eu.placed", "orders.*.placed", False),
        (">", "a.b.c", True),
        ("orders.placed", "orders.placed", True),
    ],
)
def test_an_address_is_the_stream_s_when_a_subject_covers_all_it_matches(wanted, subject, covered):
    assert covers(wanted, subject) is covered


STREETS_26 = (FIXTURES / "streets-2.6.asyncapi.yaml").read_text()


def streets(text: str = STREETS_26) -> dict:
    from pipelines.contract.yaml_source import parse_document

    return parse_document(text, yaml12=True).data


def describe(event) -> list[tuple]:
    return [
        (f.path, f.column, str(f.type), f.required, tuple(c.kind for c in f.constraints))
        for f in event.fields
    ]


def test_asyncapi_2_channel_keys_are_addresses_and_parameters_are_typed_subject_columns():
    contract = contract_from_asyncapi(streets(), stream="LIGHTS", subjects=["lights.>"])

    switch, fault = contract.event_types
    assert (switch.name, switch.subjects) == ("switch", ("lights.*.*.on", "lights.*.*.off"))
    assert describe(switch) == [
        ("state", "state", "string", False, ("enum",)),
        ("subject:1", "city", "string", True, ("enum",)),
        ("subject:2", "light_id", "long", True, ("range",)),
        ("header:retries", "attempt", "long", False, ("range",)),
    ]
    assert switch.field("state").constraints[0].values == ("on", "off")  # YAML 1.2: text
    assert switch.field("subject:1").constraints[0].values == ("paris", "lyon")
    assert [d.name for d in switch.derived] == ["channel"]
    assert "THEN 'lights.{city}.{lightId}.on'" in switch.derived[0].expression
    assert (fault.name, fault.subjects, fault.derived) == ("fault", ("lights.*.*.fault",), ())
    assert describe(fault)[-1] == ("header:trace-id", "trace_id", "string", True, ("format",))


STREETS_30 = (FIXTURES / "streets-3.0.asyncapi.yaml").read_text()


def test_asyncapi_3_parameters_are_text_with_their_enum_a_rule_unless_x_jsl_type_says():
    document = streets(STREETS_30)
    del document["components"]["messages"]["switch"]["headers"]

    (switch,) = contract_from_asyncapi(document, stream="L", subjects=["lights.>"]).event_types

    assert describe(switch) == [
        ("state", "state", "string", False, ()),
        ("subject:1", "city", "string", True, ("enum",)),
        ("subject:2", "light", "integer", True, ()),
    ]
    assert switch.field("subject:1").description == "The city."


def test_a_header_that_is_an_object_fails_naming_it():
    with pytest.raises(ContractError) as raised:
        contract_from_asyncapi(streets(STREETS_30), stream="L", subjects=["lights.>"], source="s")

    assert str(raised.value).startswith(
        "s: #/components/messages/switch/headers/properties/meta/type: 'header:meta' is read "
        "from text"
    )
    assert "struct" in str(raised.value)


def test_a_parameter_at_another_token_on_another_channel_of_the_message_fails():
    document = streets(STREETS_30)
    document["channels"]["lightOff"] = {
        "address": "lights.{lightId}.{city}.off",
        "messages": {"switch": {"$ref": "#/components/messages/switch"}},
    }

    with pytest.raises(ContractError) as raised:
        contract_from_asyncapi(document, stream="L", subjects=["lights.>"], source="s")

    assert str(raised.value) == (
        "s: #/channels/lightOff: message 'switch' is on channels whose parameter 'city' "
        "differs: token 1 of channel 'lightOn', token 2 of channel 'lightOff' "
        "('lights.{city}.{lightId}.on', 'lights.{lightId}.{city}.off'); a parameter column "
        "reads one subject token: declare a message per address layout"
    )


def test_a_parameter_inside_a_token_fails():
    document = streets(STREETS_30)
    document["channels"]["lightOn"]["address"] = "lights.city-{city}.on"

    with pytest.raises(ContractError, match="a parameter must be a whole subject token"):
        contract_from_asyncapi(document, stream="L", subjects=["lights.>"])


HEADER_TYPED = {
    "asyncapi": "3.0.0",
    "info": {"title": "Orders", "version": "1.0.0"},
    "channels": {
        "placed": {
            "address": "orders.{region}.placed",
            "messages": {"OrderPlaced": {"$ref": "#/components/messages/OrderPlaced"}},
        },
    },
    "components": {
        "messages": {
            "OrderPlaced": {
                "headers": {
                    "type": "object",
                    "required": ["Event-Type", "Nats-Msg-Id"],
                    "properties": {
                        "Event-Type": {"type": "string", "const": "order.placed"},
                        "Nats-Msg-Id": {"type": "string"},
                    },
                },
                "payload": {"type": "object", "properties": {"total": {"type": "number"}}},
            }
        }
    },
}


def test_a_header_discriminator_takes_the_event_type_from_the_headers_schema_const():
    envelope = Envelope(event_type="header:Event-Type", event_id="header:Nats-Msg-Id")

    contract = contract_from_asyncapi(
        HEADER_TYPED, stream="ORDERS", subjects=["orders.>"], envelope=envelope
    )

    (placed,) = contract.event_types
    assert placed.name == "order.placed"
    assert describe(placed) == [
        ("total", "total", "double", False, ()),
        ("subject:1", "region", "string", True, ()),
        ("header:Event-Type", "event_type", "string", True, ()),
        ("header:Nats-Msg-Id", "nats_msg_id", "string", True, ()),
    ]


def test_a_payload_one_of_told_apart_by_a_const_is_one_event_type_per_schema():
    document = yaml.safe_load(yaml.safe_dump(HEADER_TYPED))
    del document["components"]["messages"]["OrderPlaced"]["headers"]
    document["components"]["messages"]["OrderPlaced"]["payload"] = {
        "oneOf": [
            {
                "type": "object",
                "required": ["kind"],
                "properties": {"kind": {"const": kind}, "total": {"type": "number"}},
            }
            for kind in ("web", "shop")
        ]
    }

    contract = contract_from_asyncapi(
        document, stream="ORDERS", subjects=["orders.>"], envelope=Envelope(event_type="kind")
    )

    assert [(e.name, e.subjects) for e in contract.event_types] == [
        ("web", ("orders.*.placed",)),
        ("shop", ("orders.*.placed",)),
    ]
    assert [f.column for f in contract.event_type("shop").fields] == ["kind", "total", "region"]


def test_under_the_cloudevents_envelope_ce_headers_are_the_preset_s_columns():
    document = yaml.safe_load(yaml.safe_dump(HEADER_TYPED))
    document["components"]["messages"]["OrderPlaced"]["headers"] = {
        "type": "object",
        "required": ["ce-type", "ce-id"],
        "properties": {
            "ce-type": {"type": "string", "const": "order.placed"},
            "ce-id": {"type": "string"},
            "traceparent": {"type": "string"},
        },
    }

    contract = contract_from_asyncapi(
        document, stream="ORDERS", subjects=["orders.>"], envelope=Envelope.cloudevents()
    )

    (placed,) = contract.event_types
    assert placed.name == "order.placed"
    paths = [f.path for f in placed.fields]
    assert "header:ce-type" not in paths and "header:ce-id" not in paths
    assert {"cloudevents:type", "cloudevents:id", "header:traceparent", "subject:1"} <= set(paths)


def test_channels_of_other_streams_are_not_read_further(document):
    document = unbound(document)
    document["channels"]["mqtt"] = {
        "address": "lights/{id}/on",  # an MQTT topic: not a subject, not under orders.>
        "messages": {"Broken": {"$ref": "#/components/messages/Missing"}},
    }

    contract = contract_from_asyncapi(
        document, stream="ORDERS", subjects=["orders.>"], envelope=ENVELOPE
    )

    assert [e.name for e in contract.event_types] == ["OrderPlaced", "OrderShipped"]
