"""JSON Schema payloads: the mapping table of the module docstring, and what fails."""

import datetime as dt
import json

import pytest

from pipelines.contract import (
    AllowedValues,
    ContractError,
    Envelope,
    FieldType,
    Format,
    Layout,
    MaxLength,
    NestedObjects,
    NotInFuture,
    Pattern,
    Range,
    Severity,
    StringFormat,
    TimestampEncoding,
    TypeKind,
    UnknownFields,
    contract_from_json_schemas,
    read_json_schemas,
)
from pipelines.contract.datatypes import TYPE_HELP

ENVELOPE = Envelope(event_type="eventType", event_id="eventId")


def schema(data: dict, **root) -> dict:
    """A payload schema with an envelope and `data`'s properties."""
    return {
        "type": "object",
        "required": ["eventId", "eventType", "data"],
        "properties": {
            "eventId": {"type": "string"},
            "eventType": {"type": "string", "const": "Thing"},
            "data": {"type": "object", "properties": data, "required": list(data)},
        },
        **root,
    }


FLAT = Layout(NestedObjects.FLATTEN)


def event(data: dict, **root):
    """The event type of `schema(data)`, its objects flattened (`data.x` is a column): the
    mapping of each keyword, one column each (the struct layout: test_nested_layout.py)."""
    contract = contract_from_json_schemas(
        {"thing": schema(data, **root)}, envelope=ENVELOPE, layout=FLAT
    )
    return contract.event_type("Thing")


def one(prop: dict):
    return event({"x": prop}).field("data.x")


def error(data: dict, **root) -> str:
    with pytest.raises(ContractError) as raised:
        event(data, **root)
    return str(raised.value)


@pytest.mark.parametrize(
    ("prop", "expected"),
    [
        ({"type": "string"}, FieldType(TypeKind.STRING)),
        ({"type": "string", "format": "date-time"}, FieldType(TypeKind.TIMESTAMP)),
        ({"type": "string", "format": "date"}, FieldType(TypeKind.DATE)),
        ({"type": "integer"}, FieldType(TypeKind.LONG)),
        ({"type": "integer", "format": "int64"}, FieldType(TypeKind.LONG)),
        ({"type": "integer", "format": "int32"}, FieldType(TypeKind.INTEGER)),
        ({"type": "number"}, FieldType(TypeKind.DOUBLE)),
        ({"type": "boolean"}, FieldType(TypeKind.BOOLEAN)),
        ({"type": ["string", "null"]}, FieldType(TypeKind.STRING)),
        ({"enum": ["a", "b"]}, FieldType(TypeKind.STRING)),
        (
            {"type": "number", "x-jsl-type": "decimal(12,2)"},
            FieldType(TypeKind.DECIMAL, precision=12, scale=2),
        ),
        (
            {"type": "integer", "x-jsl-type": "timestamp(epoch_millis)"},
            FieldType(TypeKind.TIMESTAMP, encoding=TimestampEncoding.EPOCH_MILLIS),
        ),
        (
            {"type": "array", "items": {"type": "integer"}},
            FieldType(TypeKind.ARRAY, element=FieldType(TypeKind.LONG)),
        ),
        (
            {"type": "object", "additionalProperties": {"type": "number"}},
            FieldType(TypeKind.MAP, element=FieldType(TypeKind.DOUBLE)),
        ),
    ],
)
def test_each_json_schema_type_maps_to_its_contract_type(prop, expected):
    assert one(prop).type == expected


def test_nested_objects_flatten_into_snake_case_columns_and_required_follows_parents():
    found = event(
        {
            "fileSize": {"type": "integer", "description": "bytes"},
            "owner": {
                "type": "object",
                "required": ["userId"],
                "properties": {"userId": {"type": "string"}, "nick": {"type": "string"}},
            },
        }
    )

    assert [(f.path, f.column, f.required) for f in found.fields] == [
        ("eventId", "event_id", True),
        ("eventType", "event_type", True),
        ("data.fileSize", "file_size", True),
        ("data.owner.userId", "user_id", True),
        ("data.owner.nick", "nick", False),
    ]
    assert found.field("data.fileSize").description == "bytes"


def test_struct_arrays_of_objects_and_column_renames():
    address = {"type": "object", "properties": {"zip": {"type": "string"}}}
    found = event(
        {
            "home": {**address, "x-jsl-type": "struct"},
            "lines": {"type": "array", "items": address},
            "id": {"type": "string", "x-jsl-column": "thing_id"},
        }
    )

    assert found.field("data.home").type.spark_sql == "struct<zip:string>"
    assert found.field("data.lines").type.spark_sql == "array<struct<zip:string>>"
    assert found.field("data.id").column == "thing_id"


def test_keywords_become_constraints_with_rule_names_and_severities():
    found = event(
        {
            "n": {"type": "integer", "minimum": 1, "maximum": 5, "x-jsl-severity": "block"},
            "code": {
                "type": "string",
                "pattern": "^[a-z]+$",
                "maxLength": 8,
                "x-jsl-rule": {"pattern": "code_lower"},
            },
            "kind": {"type": "string", "const": "k"},
            "id": {"type": "string", "format": "uuid", "x-jsl-rule": "id_uuid"},
            "at": {"type": "string", "format": "date-time", "x-jsl-not-in-future": "PT1M"},
            "when": {"type": "string", "format": "date-time", "x-jsl-type": "string"},
        }
    )
    constraints = {f.column: f.constraints for f in found.fields}

    assert constraints["n"] == (Range(minimum=1, maximum=5, severity=Severity.BLOCK),)
    assert constraints["code"] == (
        Pattern(regex="^[a-z]+$", rule="code_lower"),
        MaxLength(length=8),
    )
    assert constraints["kind"] == (AllowedValues(values=("k",)),)
    assert constraints["id"] == (Format(format=StringFormat.UUID, rule="id_uuid"),)
    assert constraints["at"] == (NotInFuture(skew=dt.timedelta(minutes=1)),)
    assert constraints["when"] == (Format(format=StringFormat.DATE_TIME),)
    assert constraints["event_type"] == ()  # the discriminator's const names the event type


def test_additional_properties_false_everywhere_rejects_unknown_fields():
    strict = schema({"x": {"type": "string"}}, additionalProperties=False)
    strict["properties"]["data"]["additionalProperties"] = False
    contract = contract_from_json_schemas({"t": strict}, envelope=ENVELOPE)
    kept = event({"x": {"type": "string"}}, **{"x-jsl-unknown-fields": "keep"})

    assert contract.event_type("Thing").unknown_fields is UnknownFields.REJECT
    assert kept.unknown_fields is UnknownFields.KEEP
    assert event({"x": {"type": "string"}}).unknown_fields is UnknownFields.IGNORE
    mixed = event({"x": {"type": "string"}}, additionalProperties=False)
    assert mixed.unknown_fields is UnknownFields.IGNORE  # closed here, open there:
    assert mixed.schema_check.delegated == ("/additionalProperties",)  # the validator judges


def test_refs_resolve_inside_the_document_and_delegation_names_where_the_target_is():
    root = schema({"x": {"$ref": "#/$defs/Code"}})
    root["$defs"] = {"Code": {"type": "string", "not": {}}}

    found = contract_from_json_schemas({"t": root}, envelope=ENVELOPE).event_type("Thing")

    assert found.schema_check.delegated == ("/$defs/Code/not",)
    root["$defs"]["Code"] = {"type": "string", "maxLength": 3}
    found = contract_from_json_schemas({"t": root}, envelope=ENVELOPE, layout=FLAT)
    found = found.event_type("Thing")
    assert found.field("data.x").constraints == (MaxLength(length=3),)
    assert found.schema_check is None


@pytest.mark.parametrize(
    "keyword",
    ["not", "if", "then", "else", "patternProperties", "dependentSchemas", "dependentRequired",
     "prefixItems", "contains", "unevaluatedProperties"],
)  # fmt: skip
def test_a_keyword_no_column_expresses_is_left_to_the_validator(keyword):
    found = event({"x": {"type": "string", keyword: {}}})

    assert found.field("data.x").type == FieldType(TypeKind.STRING)
    assert found.schema_check.delegated == (f"/properties/data/properties/x/{keyword}",)


def test_an_unknown_keyword_is_an_annotation_but_a_misspelt_extension_fails():
    assert event({"x": {"type": "string", "tsAdditionalProperties": False}}).schema_check is None
    text = error({"x": {"type": "string", "x-jsl-typo": {}}})

    assert "#/properties/data/properties/x/x-jsl-typo: unknown extension 'x-jsl-typo'" in text


@pytest.mark.parametrize(
    ("prop", "kind", "where"),
    [
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, TypeKind.VARIANT, "x/anyOf"),
        ({"oneOf": [{"type": "integer"}, {"type": "string", "format": "date-time"}]},
         TypeKind.VARIANT, "x/oneOf"),
        ({"anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "uri"}]},
         TypeKind.STRING, "x/anyOf"),
        ({"anyOf": [{"type": "integer"}, {"type": "number"}]}, TypeKind.DOUBLE, "x/anyOf"),
        ({"anyOf": [{}, {"type": "string"}]}, TypeKind.VARIANT, "x/anyOf"),
        ({"allOf": [{"minimum": 1}, {"minimum": 2}]}, TypeKind.VARIANT, "x/allOf/1/minimum"),
        ({"type": "null"}, TypeKind.VARIANT, "x/type"),
        ({"type": ["string", "integer"]}, TypeKind.VARIANT, "x/type"),
        ({"type": "object", "additionalProperties": False}, TypeKind.MAP, "x/additionalProperties"),
        ({"type": "array", "items": [{"type": "string"}]}, TypeKind.ARRAY, "x/items"),
    ],
)  # fmt: skip
def test_what_one_column_type_cannot_hold_is_a_column_of_its_kind_judged_by_the_validator(
    prop, kind, where
):
    found = event({"x": prop})

    assert found.field("data.x").type.kind is kind
    assert f"/properties/data/properties/{where}" in found.schema_check.delegated


def test_pydantic_sentinel_branch_of_an_optional_field_is_no_type_of_its_column():
    unset = {
        "anyOf": [{"const": "<UNSET>", "type": "string"}, {"type": "integer"}, {"type": "null"}]
    }
    found = event({"x": unset})

    assert found.field("data.x").type == FieldType(TypeKind.LONG)
    assert found.field("data.x").nullable is True
    assert found.schema_check is None


def test_an_allof_narrowing_keeps_the_column_and_leaves_the_narrowing_to_the_validator():
    root = schema({})
    root["allOf"] = [
        {"properties": {"action": {"type": "string"}}},
        {"properties": {"action": {"type": "string", "enum": ["opened"]}}},
    ]
    found = contract_from_json_schemas({"t": root}, envelope=ENVELOPE).event_type("Thing")

    assert found.field("action").type == FieldType(TypeKind.STRING)
    assert found.schema_check.delegated == ("/allOf/1/properties/action",)


@pytest.mark.parametrize(
    ("prop", "where", "message"),
    [
        ({"$ref": "other.json#/A"}, "x/$ref", "points outside this document"),
        ({"$ref": "#/$defs/Missing"}, "x/$ref", "points to nothing in this document"),
        ({"type": "number", "x-jsl-type": "decimal(50,1)"}, "x/x-jsl-type", "precision"),
        ({"type": "string", "pattern": "(("}, "x/pattern", "invalid regular expression"),
        ({"type": "integer", "minimum": 3, "maximum": 1}, "x/maximum", "minimum 3 is greater"),
        ({"type": "string", "maxLength": -1}, "x/maxLength", "max_length must be a positive"),
        ({"type": "string", "x-jsl-severity": "loud", "pattern": "a"}, "x/x-jsl-severity", ""),
        ({"type": "string", "x-jsl-rule": "r"}, "x/x-jsl-rule", "needs exactly one constraint"),
        ({"type": "string", "x-jsl-column": "a b"}, "x/x-jsl-column", "not a plain identifier"),
    ],
)
def test_a_bad_property_fails_with_its_schema_path(prop, where, message):
    text = error({"x": prop})

    assert f"#/properties/data/properties/{where}: " in text
    assert message in text


def test_properties_whose_last_keys_share_a_column_are_named_by_their_whole_path():
    found = event(
        {
            "id": {"type": "string"},
            "eventId": {"type": "string"},
            "+1": {"type": "integer"},
            "-1": {"type": "integer"},
        }
    )

    assert found.field("eventId").column == "event_id"  # at the top: its own name
    assert found.field("data.eventId").column == "data__event_id"
    assert found.field("data.+1").column == "x2b_1"
    assert found.field("data.-1").column == "x2d_1"


def test_a_property_named_like_a_column_silver_adds_lands_under_its_whole_path():
    root = schema({})
    root["properties"]["subject"] = {"type": "string"}
    found = contract_from_json_schemas({"t": root}, envelope=ENVELOPE).event_type("Thing")

    assert found.field("subject").column == "payload__subject"


def test_a_column_someone_named_that_collides_names_both_schema_paths():
    text = error({"id": {"type": "string", "x-jsl-column": "event_id"}})

    assert "two properties land in column 'event_id'" in text
    assert "#/properties/eventId (eventId); set x-jsl-column" in text


def test_the_discriminator_needs_a_const():
    root = schema({"x": {"type": "string"}})
    del root["properties"]["eventType"]["const"]

    with pytest.raises(ContractError, match="#/properties/eventType: the discriminator eventType"):
        contract_from_json_schemas({"t": root}, envelope=ENVELOPE)


def test_schema_files_are_read_with_lines_and_named_by_their_stem(tmp_path):
    path = tmp_path / "Reading.schema.yaml"
    path.write_text("type: object\nproperties:\n  value:\n    type: numbr\n")

    with pytest.raises(ContractError) as raised:
        read_json_schemas([path], subjects={"Reading": ["sensors.reading"]})

    assert str(raised.value).startswith(f"{path}:4: #/properties/value/type: unsupported")
    path.write_text("type: object\nproperties:\n  value: {type: number}\n")
    contract = read_json_schemas([path], subjects={"Reading": ["sensors.reading"]})
    assert contract.event_type("Reading").table == "silver/reading"


def test_x_jsl_severities_at_a_schema_root_set_the_built_in_rules_severities():
    blocking = {"required_fields_present": "quarantine+block"}
    contract = contract_from_json_schemas(
        {"thing": schema({"x": {"type": "string"}}, **{"x-jsl-severities": blocking})},
        envelope=ENVELOPE,
    )

    severities = {rule.name: rule.severity for rule in contract.rules}
    assert severities["required_fields_present"] is Severity.QUARANTINE_BLOCK
    assert severities["field_types_valid"] is Severity.QUARANTINE


@pytest.mark.parametrize(
    ("root", "data", "message"),
    [
        (
            {"x-jsl-severities": {"field_types_valid": "warn"}},
            {},
            "thing]: #/x-jsl-severities/field_types_valid: a built-in rule's row cannot stay",
        ),
        (
            {"x-jsl-severities": {"x_in_range": "block"}},
            {},
            "#/x-jsl-severities/x_in_range: 'x_in_range' is not a built-in rule",
        ),
        (
            {"x-jsl-severities": "block"},
            {},
            "#/x-jsl-severities: x-jsl-severities maps built-in rules to quarantine",
        ),
        (
            {},
            {"x": {"type": "string", "x-jsl-severities": {}}},
            "#/properties/data/properties/x/x-jsl-severities: x-jsl-severities is read only at "
            "the root of the document",
        ),
    ],
)
def test_bad_x_jsl_severities_fail_with_their_schema_path(root, data, message):
    assert message in error(data or {"y": {"type": "string"}}, **root)


def test_two_schemas_giving_a_built_in_rule_different_severities_fail():
    def thing(name: str, severity: str) -> dict:
        root = {"x-jsl-severities": {"event_id_unique": severity}}
        found = schema({"x": {"type": "string"}}, **root)
        found["properties"]["eventType"]["const"] = name
        return found

    with pytest.raises(ContractError) as raised:
        contract_from_json_schemas(
            {"a": thing("A", "quarantine+block"), "b": thing("B", "quarantine")},
            envelope=ENVELOPE,
        )

    assert "schemas[b]: #/x-jsl-severities/event_id_unique: event_id_unique is quarantine" in str(
        raised.value
    )


@pytest.mark.parametrize(
    ("prop", "where", "message"),
    [
        ({"type": "float"}, "x/type", "unsupported type 'float'; use string, integer, number"),
    ],
)
def test_an_unknown_type_lists_the_schema_types_and_the_contract_types(prop, where, message):
    text = error({"x": prop})

    assert f"#/properties/data/properties/{where}: {message}" in text
    assert 'boolean, object or array (or one of them and "null"' in text
    assert text.endswith(f"or x-jsl-type with a contract type: {TYPE_HELP}")


def test_a_misspelt_extension_or_a_rule_name_without_a_constraint_lists_what_there_is():
    keyword = error({"x": {"type": "string", "x-jsl-columns": "y"}})
    rule = error({"x": {"type": "string", "x-jsl-rule": {"range": "r"}}})

    assert "unknown extension 'x-jsl-columns'; this project's are x-jsl-column" in keyword
    assert "x-jsl-unknown-fields" in keyword
    assert "constraints are none; add one (minimum, maximum, exclusiveMinimum" in rule


def test_an_unknown_x_jsl_unknown_fields_names_its_keyword_and_the_choices():
    text = error({"x": {"type": "string"}}, **{"x-jsl-unknown-fields": "drop"})

    assert "#/x-jsl-unknown-fields: unknown_fields is one of keep, ignore, reject" in text


def test_the_validator_keeps_only_the_definitions_the_event_schema_reaches():
    root = schema({"x": {"$ref": "#/$defs/Code"}, "y": {"not": {}}})
    root["$defs"] = {
        "Code": {"$ref": "#/$defs/Text"},
        "Text": {"type": "string"},
        "Unused": {"type": "integer"},
    }
    check = contract_from_json_schemas({"t": root}, envelope=ENVELOPE).event_type("Thing")

    document = json.loads(check.schema_check.document)
    assert sorted(document["$defs"]) == ["Code", "Text"]
    assert check.schema_check.at == ""
