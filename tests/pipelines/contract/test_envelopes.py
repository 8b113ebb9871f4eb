"""Envelopes and field paths beyond the payload, as read (no Spark): `header:<Name>`,
`subject:<index>`, the `cloudevents` preset, and the errors that name where and what to write
(docs/envelopes.md)."""

import json

import pytest

from pipelines.components.models import EnvelopeModel, envelope_of
from pipelines.contract import (
    ContractError,
    Envelope,
    FieldType,
    TypeKind,
    contract_from_dict,
    read_contract,
    read_json_schemas,
)
from pipelines.contract.event_types import CLOUDEVENTS_FIELDS, EnvelopePreset
from pipelines.contract.fields import Field, SourceKind, field_source


def by_subject(fields: dict, envelope: object = None) -> dict:
    """A contract dict with one event type E on subject `a.>` holding `fields`."""
    data = {"events": {"E": {"subjects": ["a.>"], "fields": fields}}}
    return data if envelope is None else {"envelope": envelope, **data}


def error(data: dict) -> str:
    with pytest.raises(ContractError) as raised:
        contract_from_dict(data, source="c.yaml")
    return str(raised.value)


@pytest.mark.parametrize(
    ("path", "kind", "name", "column"),
    [
        ("data.fileSize", SourceKind.PAYLOAD, "data.fileSize", "file_size"),
        ("header:Nats-Msg-Id", SourceKind.HEADER, "Nats-Msg-Id", "nats_msg_id"),
        ("header:ce-id", SourceKind.HEADER, "ce-id", "ce_id"),
        ("header:X.Trace", SourceKind.HEADER, "X.Trace", "x_trace"),
        ("subject:5", SourceKind.SUBJECT, "5", "subject_5"),
        ("cloudevents:traceparent", SourceKind.CLOUDEVENTS, "traceparent", "ce_traceparent"),
    ],
)
def test_a_path_names_where_it_reads_and_its_default_column(path, kind, name, column):
    field = Field(path, FieldType(TypeKind.STRING))

    assert (field.source.kind, field.source.name, field.column) == (kind, name, column)
    assert field_source(path) == field.source


def test_header_and_subject_fields_are_typed_constrained_and_keep_their_column():
    contract = contract_from_dict(
        by_subject(
            {
                "subject:2": {"type": "integer", "column": "light_id", "minimum": 1},
                "header:X-Lux": {"type": "double", "required": True},
            }
        )
    )
    light, lux = contract.event_type("E").fields

    assert (light.column, light.type.kind, light.source.index) == ("light_id", "integer", 2)
    assert (lux.column, lux.required) == ("x_lux", True)
    rule = next(r for r in contract.rules if r.name == "light_id_in_range")
    assert (rule.column, rule.path) == ("light_id", "subject:2")


def test_a_header_envelope_path_no_field_declares_is_declared_for_every_event_type():
    contract = contract_from_dict(
        {
            "envelope": {
                "event_type": "kind",
                "event_id": "header:Nats-Msg-Id",
                "event_time": "header:Event-Time",
                "fields": {"kind": {"required": True}},
            },
            "events": {"A": {"fields": {"x": "long"}}, "B": {"fields": {"y": "long"}}},
        }
    )

    for event in contract.event_types:
        msg_id, time = event.fields[:2]
        assert (msg_id.path, msg_id.type.kind, msg_id.required) == (
            "header:Nats-Msg-Id", "string", True
        )  # fmt: skip
        assert (time.path, time.type.kind, time.required) == (
            "header:Event-Time",
            "timestamp",
            False,
        )
    assert "event_id_unique" in contract.rule_names


def test_a_declared_header_envelope_field_is_kept_as_declared():
    contract = contract_from_dict(
        by_subject(
            {"header:Seq-No": {"type": "long", "required": True, "column": "seq_no"}},
            {"event_id": "subject:1"},
        )
    )
    fields = contract.event_type("E").fields

    assert [(f.path, f.column, str(f.type)) for f in fields] == [
        ("subject:1", "subject_1", "string"),
        ("header:Seq-No", "seq_no", "long"),
    ]


def test_the_cloudevents_preset_reads_type_id_and_time_and_adds_the_attributes_first():
    contract = contract_from_dict(
        {
            "envelope": "cloudevents",
            "events": {"com.example.placed": {"fields": {"orderId": {"required": True}}}},
        }
    )
    event = contract.event_type("com.example.placed")

    assert contract.envelope == Envelope.cloudevents()
    assert contract.envelope.preset is EnvelopePreset.CLOUDEVENTS
    assert (contract.envelope.event_type, contract.envelope.event_id) == (
        "cloudevents:type", "cloudevents:id"
    )  # fmt: skip
    assert contract.envelope.event_time == "cloudevents:time"
    assert event.fields[: len(CLOUDEVENTS_FIELDS)] == CLOUDEVENTS_FIELDS
    assert [c for c, _ in event.columns] == [
        "ce_id", "ce_type", "ce_source", "ce_time", "ce_subject", "ce_datacontenttype",
        "ce_specversion", "order_id",
    ]  # fmt: skip
    assert event.table == "silver/com_example_placed"


def test_the_preset_by_name_or_key_is_the_same_and_takes_extension_attributes():
    events = {"T": {"fields": {"x": "string"}}}
    named = contract_from_dict({"envelope": "cloudevents", "events": events})
    keyed = contract_from_dict(
        {
            "envelope": {
                "preset": "cloudevents",
                "fields": {"cloudevents:traceparent": {"column": "trace"}},
            },
            "events": events,
        }
    )

    ce, x = keyed.event_type("T").fields[:7], keyed.event_type("T").field("x")
    assert named.event_type("T").fields == (*ce, x)
    assert keyed.event_type("T").field("cloudevents:traceparent").column == "trace"


def test_an_envelope_without_a_preset_prints_as_before():
    # The fingerprint of every row's contract version is the repr: unchanged for old contracts.
    assert repr(Envelope("a", "b", "c")) == "Envelope(event_type='a', event_id='b', event_time='c')"


@pytest.mark.parametrize(
    ("data", "where", "message"),
    [
        (
            by_subject({"header:Nats Msg": "string"}),
            "events.E.fields['header:Nats Msg']",
            "does not name a NATS header: write header:<Name> with a name of printable ASCII",
        ),
        (
            by_subject({"header:a:b": "string"}),
            "events.E.fields.header:a:b",
            "other than ':' and space (e.g. header:Nats-Msg-Id)",
        ),
        (
            by_subject({"subject:x": {"column": "c"}}),
            "events.E.fields.subject:x",
            "does not name a subject token: write subject:<index> with the 0-based index",
        ),
        (
            by_subject({"subject:1": "array<string>"}),
            "events.E.fields.subject:1.type",
            "is read from text, which cannot hold array<string>: declare it as one of string",
        ),
        (
            by_subject({"data": {"fields": {"header:X": "string"}}}),
            "events.E.fields.data.fields.header:X",
            "only top-level fields read headers or subject tokens: declare it at the top level",
        ),
        (
            by_subject({"x": "string"}, {"event_id": "subject:-1"}),
            "envelope.event_id",
            "'subject:-1' does not name a subject token",
        ),
        (
            by_subject({"x": "string"}, {"event_id": "a..b"}),
            "envelope.event_id",
            "a field path is dotted JSON keys such as data.fileSize, header:<Name> or subject:",
        ),
        (
            by_subject({"data": {"fields": {'it\'s "x"': "string"}}}),
            "events.E.fields.data.fields['it\\'s \"x\"']",
            "holds both quote characters, which Spark cannot read from a VARIANT",
        ),
        (
            by_subject({"header:Id": "boolean"}, {"event_id": "header:Id"}),
            "events.E.fields.header:Id.type",
            "the envelope's event_id 'header:Id' must be of type string or long or integer",
        ),
        (
            {"envelope": {"preset": "cloudevents", "event_id": "id"}, "events": {"E": {}}},
            "envelope.event_id",
            "the cloudevents preset reads event_id itself (CloudEvents id); remove event_id, or "
            "drop the preset",
        ),
        (
            by_subject({"x": "string"}, "kafka"),
            "envelope",
            "the envelope preset is one of cloudevents, got 'kafka'",
        ),
        (
            by_subject({"x": "string"}, {"preset": "kafka"}),
            "envelope.preset",
            "the envelope preset is one of cloudevents, got 'kafka'",
        ),
        (
            by_subject({"cloudevents:id": "string"}),
            "events.E.fields.cloudevents:id",
            "is read only under the cloudevents preset: write `envelope: cloudevents`",
        ),
        (
            by_subject({"x": "string"}, {"event_type": "cloudevents:type"}),
            "envelope.event_type",
            "is read only under the cloudevents preset",
        ),
        (
            {"envelope": "cloudevents", "events": {"E": {"fields": {"ceId": "string"}}}},
            "events.E.fields.ceId.column",
            "both land in column 'ce_id'; set `column` on one of them; the envelope adds "
            "cloudevents:id (column ce_id)",
        ),
    ],
)
def test_a_bad_path_or_envelope_fails_naming_where_and_what_to_write(data, where, message):
    text = error(data)

    assert text.startswith(f"c.yaml: {where}: "), text
    assert message in text


def test_errors_from_a_file_name_its_line(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "envelope:\n"
        "  preset: cloudevents\n"
        "  event_time: occurredAt\n"
        "events:\n"
        "  E: {fields: {x: string}}\n"
    )
    with pytest.raises(ContractError, match=r"c\.yaml:3: envelope\.event_time: the cloudevents"):
        read_contract(path)
    path.write_text("events:\n  E:\n    subjects: [a]\n    fields:\n      subject:one: string\n")
    with pytest.raises(ContractError, match=r"c\.yaml:5: events\.E\.fields\.subject:one: "):
        read_contract(path)


def test_the_component_envelope_takes_paths_or_the_preset_name():
    assert envelope_of("cloudevents") == Envelope.cloudevents()
    assert envelope_of(EnvelopeModel(event_id="header:Nats-Msg-Id")) == Envelope(
        event_id="header:Nats-Msg-Id"
    )
    assert envelope_of(None) == Envelope()
    with pytest.raises(ValueError, match=r"^envelope: an envelope preset is one of cloudevents"):
        envelope_of("kafka")
    with pytest.raises(ValueError, match=r"^envelope.event_id: 'subject:x' does not name"):
        envelope_of(EnvelopeModel(event_id="subject:x"))


def test_json_schema_files_under_cloudevents_are_named_by_their_file(tmp_path):
    # The schema describes the data; the type comes from CloudEvents, so the file names it.
    schema = {
        "type": "object",
        "required": ["orderId"],
        "properties": {"orderId": {"type": "string"}, "amount": {"type": "number"}},
    }
    path = tmp_path / "com.example.order.placed.schema.json"
    path.write_text(json.dumps(schema))

    (event,) = read_json_schemas([path], envelope=Envelope.cloudevents()).event_types

    assert event.name == "com.example.order.placed"  # the CloudEvents type, as sent
    assert [f.column for f in event.fields][:3] == ["ce_id", "ce_type", "ce_source"]
    assert {"order_id", "amount"} <= {f.column for f in event.fields}
