"""The JSON Schema validation vocabulary read into constraints: each keyword, nullable forms,
composition, formats, and the schemas pydantic writes, read with no edit (no Spark here)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import logging
import uuid
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field, TypeAdapter

from pipelines.contract import (
    AllowedValues,
    ContractError,
    Envelope,
    FieldType,
    Format,
    MaxItems,
    MaxLength,
    MaxProperties,
    MinItems,
    MinLength,
    MinProperties,
    MultipleOf,
    Pattern,
    Range,
    StringFormat,
    TypeKind,
    UniqueItems,
    contract_from_dict,
    contract_from_json_schemas,
    read_json_schemas,
)
from pipelines.contract import Field as ContractField
from pipelines.contract.fingerprint import event_type_version
from resources.backports import StrEnum

ENVELOPE = Envelope(event_type="eventType", event_id="eventId")


def thing(props: dict, required: list[str] | None = None, **root) -> dict:
    """A payload schema of event type Thing with `props` beside its envelope."""
    return {
        "type": "object",
        "required": ["eventId", "eventType", *(props if required is None else required)],
        "properties": {
            "eventId": {"type": "string"},
            "eventType": {"const": "Thing"},
            **props,
        },
        **root,
    }


def read(schema: dict, **options):
    return contract_from_json_schemas({"thing": schema}, envelope=ENVELOPE, **options)


def field(prop: dict, *, required: bool = True) -> ContractField:
    return read(thing({"x": prop}, [] if not required else None)).event_type("Thing").field("x")


def failure(schema: dict) -> str:
    with pytest.raises(ContractError) as raised:
        read(schema)
    return str(raised.value)


@pytest.mark.parametrize(
    ("prop", "expected"),
    [
        ({"type": "string", "minLength": 3}, MinLength(length=3)),
        ({"type": "string", "maxLength": 9}, MaxLength(length=9)),
        ({"type": "integer", "minimum": 1}, Range(minimum=1)),
        ({"type": "integer", "maximum": 9}, Range(maximum=9)),
        ({"type": "number", "exclusiveMinimum": 0}, Range(exclusive_minimum=0)),
        ({"type": "number", "exclusiveMaximum": 1.5}, Range(exclusive_maximum=1.5)),
        ({"type": "number", "minimum": 0, "exclusiveMinimum": True}, Range(exclusive_minimum=0)),
        ({"type": "number", "maximum": 2, "exclusiveMaximum": False}, Range(maximum=2)),
        ({"type": "number", "multipleOf": 0.01}, MultipleOf(factor=0.01)),
        ({"type": "array", "items": {"type": "string"}, "minItems": 1}, MinItems(count=1)),
        ({"type": "array", "items": {"type": "string"}, "maxItems": 4}, MaxItems(count=4)),
        ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, UniqueItems()),
        (
            {"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 1},
            MinProperties(count=1),
        ),
        (
            {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 3},
            MaxProperties(count=3),
        ),
        ({"type": "string", "const": "k"}, AllowedValues(values=("k",))),
        ({"type": "integer", "enum": [1, 2]}, AllowedValues(values=(1, 2))),
        ({"type": "boolean", "const": True}, AllowedValues(values=(True,))),
        ({"type": "string", "pattern": "abc"}, Pattern(regex="abc")),
        ({"type": "string", "format": "hostname"}, Format(format=StringFormat.HOSTNAME)),
    ],
)
def test_each_validation_keyword_becomes_its_constraint(prop, expected):
    assert field(prop).constraints == (expected,)


def test_the_rules_are_named_after_the_column_and_say_what_is_valid_in_a_sentence():
    props = {
        "code": {"type": "string", "minLength": 2, "maxLength": 5},
        "qty": {"type": "integer", "exclusiveMinimum": 0, "maximum": 10, "multipleOf": 2},
        "tags": {
            "type": "array",
            "items": {"type": "string", "format": "uuid"},
            "minItems": 1,
            "uniqueItems": True,
        },
        "meta": {"type": "object", "additionalProperties": True, "maxProperties": 2},
    }
    rules = {r.name: r.description for r in read(thing(props)).rules if not r.builtin}

    assert rules == {
        "code_min_length": "code is at least 2 characters long.",
        "code_max_length": "code is at most 5 characters long.",
        "qty_in_range": "qty is greater than 0 and at most 10.",
        "qty_multiple_of": "qty is a multiple of 2.",
        "tags_min_items": "tags has at least 1 element.",
        "tags_unique_items": "tags has no two equal elements.",
        "tags_each_is_uuid": "each element of tags is a UUID such as "
        "123e4567-e89b-12d3-a456-426614174000.",
        "meta_max_properties": "meta has at most 2 properties.",
    }


@pytest.mark.parametrize(
    "prop",
    [
        {"type": ["string", "null"]},
        {"anyOf": [{"type": "string"}, {"type": "null"}]},
        {"oneOf": [{"type": "null"}, {"type": "string"}]},
        {"type": "string", "nullable": True},
        {"enum": ["a", None]},
    ],
)
def test_every_nullable_form_is_a_required_field_that_may_be_null(prop):
    found = field(prop)

    assert (found.type, found.required, found.nullable) == (FieldType(TypeKind.STRING), True, True)


def test_a_plain_required_field_is_not_nullable_and_an_enum_with_null_keeps_its_other_values():
    assert not field({"type": "string"}).nullable
    assert field({"enum": ["a", "b", None]}).constraints == (AllowedValues(values=("a", "b")),)


def test_all_of_merges_object_schemas_as_pydantic_and_zod_write_inheritance():
    root = {
        "$defs": {
            "Base": {
                "type": "object",
                "required": ["eventId", "eventType"],
                "properties": {"eventId": {"type": "string"}, "eventType": {"const": "Thing"}},
            }
        },
        "allOf": [
            {"$ref": "#/$defs/Base"},
            {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}},
        ],
    }
    found = read(root).event_type("Thing")

    assert [(f.path, f.required) for f in found.fields] == [
        ("eventId", True),
        ("eventType", True),
        ("n", True),
    ]
    narrowed = {"allOf": [thing({"n": {"type": "integer"}}), thing({"n": {"maximum": 9}})]}
    found = read(narrowed).event_type("Thing")  # both apply: the first makes the column
    assert found.field("n").type.kind is TypeKind.LONG
    assert found.schema_check.delegated == ("/allOf/1/properties/n",)  # the validator: both


def test_a_ref_with_keywords_beside_it_is_the_target_and_them():
    root = thing({"x": {"$ref": "#/$defs/Code", "maxLength": 4, "description": "the code"}})
    root["$defs"] = {"Code": {"type": "string", "minLength": 2}}
    found = read(root).event_type("Thing").field("x")

    assert found.constraints == (MinLength(length=2), MaxLength(length=4))
    assert found.description == "the code"


def test_a_pydantic_decimal_is_a_string_column_judged_as_a_number_or_the_declared_decimal():
    bounded = {"anyOf": [{"type": "number", "exclusiveMinimum": 0}, {"type": "string"}]}
    text = field(bounded)

    assert text.type == FieldType(TypeKind.STRING)
    assert [c.kind for c in text.constraints] == ["range", "pattern"]
    assert text.constraints[0] == Range(exclusive_minimum=0, numeric_text=True)
    assert text.constraints[0].numeric_text
    declared = field({**bounded, "x-jsl-type": "decimal(12,2)"})
    assert str(declared.type) == "decimal(12,2)"
    assert declared.constraints == (Range(exclusive_minimum=0),)
    assert not declared.constraints[0].numeric_text


def test_a_property_with_no_type_is_a_variant_unless_it_asks_for_json_text():
    variant = FieldType(TypeKind.VARIANT)
    assert field({"title": "Anything"}).type == variant
    assert field({"type": "array"}).type == FieldType(TypeKind.ARRAY, element=variant)
    assert field({"type": "object"}).type == FieldType(TypeKind.MAP, element=variant)
    assert field({"x-jsl-type": "json"}).type == FieldType(TypeKind.JSON)


def test_a_top_level_one_of_with_a_const_discriminator_is_one_event_type_each():
    placed = thing({"n": {"type": "integer"}})
    shipped = thing({"at": {"type": "string", "format": "date-time"}})
    shipped["properties"]["eventType"] = {"type": "string", "const": "Shipped"}
    root = {
        "$defs": {"Placed": placed, "Shipped": shipped},
        "oneOf": [{"$ref": "#/$defs/Placed"}, {"$ref": "#/$defs/Shipped"}],
        "discriminator": {"propertyName": "eventType"},
    }
    contract = read(root)

    assert [e.name for e in contract.event_types] == ["Thing", "Shipped"]
    assert contract.event_type("Shipped").field("at").type.kind is TypeKind.TIMESTAMP
    with pytest.raises(ContractError, match="#/\\$defs/Placed: each schema of a top-level oneOf"):
        contract_from_json_schemas({"t": root})


def test_an_unknown_format_is_an_annotation_logged_once_never_a_failure(caplog):
    schema = thing({"x": {"type": "string", "format": "phone"}, "n": {"type": "integer",
                   "format": "uint8"}})  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="pipelines.contract.json_schema_fields"):
        found = read(schema, source="t.json").event_type("Thing")

    assert found.field("x").constraints == () and found.field("n").type.kind is TypeKind.LONG
    assert found.schema_check is None
    assert [r.getMessage() for r in caplog.records] == [
        f"t.json[thing]: format {fmt!r} of a {kind} is not checked (an annotation: neither a "
        "column rule nor the validator knows it), in 1 place"
        for fmt, kind in (("phone", "string"), ("uint8", "integer"))
    ]


def test_a_format_only_the_validator_knows_is_left_to_it_and_logged_once_per_document(caplog):
    templates = {f"u{i}": {"type": "string", "format": "uri-template"} for i in range(3)}
    phones = {f"p{i}": {"type": "string", "format": "phone"} for i in range(3)}
    with caplog.at_level(logging.WARNING, logger="pipelines.contract.json_schema_fields"):
        found = read(thing({**templates, **phones})).event_type("Thing")

    assert found.schema_check.delegated == tuple(f"/properties/u{i}/format" for i in range(3))
    # phone: one line with its count, not one per property
    assert [r.getMessage()[-40:] for r in caplog.records] == [
        "nor the validator knows it), in 3 places"
    ]


@pytest.mark.parametrize(
    ("fmt", "kind", "constraint"),
    [
        ("date-time", TypeKind.TIMESTAMP, None),
        ("date", TypeKind.DATE, None),
        *(
            (f.value, TypeKind.STRING, f)
            for f in StringFormat
            if f.value not in ("date-time", "date")
        ),
    ],
)
def test_each_checked_format_is_a_type_or_a_format_rule(fmt, kind, constraint):
    found = field({"type": "string", "format": fmt})

    assert found.type.kind is kind
    assert found.constraints == (() if constraint is None else (Format(format=constraint),))


@pytest.mark.parametrize(
    ("prop", "where"),
    [
        ({"type": "string", "not": {"pattern": "a"}}, "x/not"),
        ({"if": {}, "then": {}}, "x/if"),
        ({"type": "object", "patternProperties": {}}, "x/patternProperties"),
        ({"type": "array", "prefixItems": []}, "x/prefixItems"),
        ({"type": "object", "propertyNames": {"pattern": "^a"}}, "x/propertyNames"),
        ({"type": "object", "dependentSchemas": {}}, "x/dependentSchemas"),
        ({"$ref": "#/properties/x"}, "x/$ref"),
        ({"type": "array", "items": {"type": "array", "items": {"minimum": 1}}}, "x/items/items"),
        ({"type": "object", "properties": {"a": {}}, "minProperties": 1}, "x/minProperties"),
    ],
)
def test_what_cannot_be_a_row_rule_is_left_to_the_validator_at_its_pointer(prop, where):
    found = read(thing({"x": prop})).event_type("Thing")

    assert f"/properties/{where}" in found.schema_check.delegated


def test_a_misspelt_extension_in_a_file_names_the_file_and_its_line(tmp_path):
    path = tmp_path / "Thing.json"
    schema = thing({"x": {"type": "string", "x-jsl-tpye": "json"}})
    path.write_text(json.dumps(schema, indent=2))

    with pytest.raises(ContractError) as raised:
        read_json_schemas([path], envelope=ENVELOPE)

    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "x-jsl-tpye" in t)
    assert str(raised.value).startswith(f"{path}:{line}: #/properties/x/x-jsl-tpye: unknown")


def test_the_yaml_contract_takes_the_same_constraint_kinds():
    contract = contract_from_dict(
        {
            "events": {
                "Thing": {
                    "subjects": ["things"],
                    "fields": {
                        "name": {"min_length": 1, "format": "hostname", "nullable": True,
                                 "required": True},
                        "qty": {"type": "long", "exclusive_minimum": 0, "multiple_of": 5},
                        "tags": {"type": "array<string>", "min_items": 1, "max_items": 3,
                                 "unique_items": True},
                        "attrs": {"type": "map<string>", "max_properties": 8},
                    },
                }
            }
        }
    )  # fmt: skip
    found = {f.path: f for f in contract.event_type("Thing").fields}

    assert found["name"].nullable and found["name"].constraints == (
        MinLength(length=1),
        Format(format=StringFormat.HOSTNAME),
    )
    assert found["qty"].constraints == (Range(exclusive_minimum=0), MultipleOf(factor=5))
    assert [c.kind for c in found["tags"].constraints] == ["min_items", "max_items", "unique_items"]
    assert found["attrs"].constraints == (MaxProperties(count=8),)


def test_declarations_that_use_nothing_new_keep_their_fingerprint():
    contract = contract_from_dict(
        {
            "events": {
                "Thing": {
                    "subjects": ["things"],
                    "fields": {"n": {"type": "long", "minimum": 1, "required": True}},
                }
            }
        }
    )

    assert repr(contract.event_type("Thing").fields[0]) == (
        "Field(path='n', type=FieldType('long'), column='n', required=True, description=None, "
        "constraints=(Range(rule=None, severity=<Severity.QUARANTINE: 'quarantine'>, minimum=1, "
        "maximum=None),))"
    )
    # The fingerprint this declaration had before the vocabulary was read.
    assert event_type_version(contract, contract.event_type("Thing")) == "48200f4f53a8"


class Color(StrEnum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    zip: Annotated[str, Field(min_length=3, max_length=10, pattern=r"^[0-9]+$")]
    city: str | None = None


class Base(BaseModel):
    eventId: uuid.UUID
    at: dt.datetime


class OrderPlaced(Base):
    eventType: Literal["OrderPlaced"]
    amount: decimal.Decimal
    qty: Annotated[int, Field(gt=0, le=100, multiple_of=2)]
    note: str | None
    tags: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1, max_length=5)]
    color: Color
    address: Address
    extra: Any = None
    meta: dict[str, int] = {}
    ratio: Annotated[float, Field(ge=0, lt=1)]
    email: str | None = Field(default=None, json_schema_extra={"format": "email"})


class OrderShipped(Base):
    eventType: Literal["OrderShipped"]
    carrier: str


def test_a_pydantic_discriminated_union_reads_with_no_edit():
    union = Annotated[OrderPlaced | OrderShipped, Field(discriminator="eventType")]
    schema = TypeAdapter(union).json_schema()
    contract = read(schema)
    placed = contract.event_type("OrderPlaced")
    by_path = {f.path: f for f in placed.fields}

    assert [e.name for e in contract.event_types] == ["OrderPlaced", "OrderShipped"]
    assert {p: str(f.type) for p, f in by_path.items()} == {
        "eventId": "string",
        "at": "timestamp(iso8601)",
        "eventType": "string",
        "amount": "string",
        "qty": "long",
        "note": "string",
        "tags": "array<string>",
        "color": "string",
        "address": "struct",  # nested data stays nested
        "extra": "variant",
        "meta": "map<long>",
        "ratio": "double",
        "email": "string",
    }
    assert (by_path["note"].required, by_path["note"].nullable) == (True, True)
    address = {f.path: (f.column, str(f.type), f.required) for f in by_path["address"].type.fields}
    assert address == {"zip": ("zip", "string", True), "city": ("city", "string", False)}
    assert (by_path["address"].required, by_path["extra"].required) == (True, False)
    names = [r.name for r in contract.rules if not r.builtin]
    assert names == [
        "event_id_is_uuid",
        "amount_matches_pattern",  # a decimal number's text
        "qty_in_range",
        "qty_multiple_of",
        "tags_min_items",
        "tags_max_items",
        "tags_each_min_length",
        "color_in_allowed_values",
        "address_zip_matches_pattern",
        "address_zip_min_length",
        "address_zip_max_length",
        "ratio_in_range",
        "email_is_email",
    ]


# What zod 4.1's z.toJSONSchema() writes for a discriminated union (trimmed to its shapes).
ZOD = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "oneOf": [
        {
            "type": "object",
            "properties": {
                "eventId": {"type": "string", "format": "uuid", "pattern": "^[0-9a-fA-F-]{36}$"},
                "at": {"type": "string", "format": "date-time", "pattern": "^\\d{4}-.*Z$"},
                "eventType": {"type": "string", "const": "Placed"},
                "note": {"type": ["string", "null"]},
                "meta": {
                    "type": "object",
                    "propertyNames": {"type": "string"},
                    "additionalProperties": {"type": "number"},
                },
                "big": {},
            },
            "required": ["eventId", "at", "eventType", "note", "meta"],
            "additionalProperties": False,
        }
    ],
}


def test_a_zod_schema_reads_with_no_edit_and_says_which_keywords_are_not_checked(caplog):
    with caplog.at_level(logging.WARNING, logger="pipelines.contract.json_schema_fields"):
        found = read(ZOD).event_type("Placed")

    assert [(f.path, str(f.type), f.nullable) for f in found.fields] == [
        # Required and not nullable: null is missing, nullable left unset as in YAML.
        ("eventId", "string", None),
        ("at", "timestamp(iso8601)", None),
        ("eventType", "string", None),
        ("note", "string", True),
        ("meta", "map<double>", None),
        ("big", "variant", None),  # no type: null is a value JSON Schema allows
    ]
    assert found.unknown_fields == "reject"
    # The column holds the parsed timestamp; zod's pattern on its text is the validator's.
    assert found.schema_check.delegated == ("/oneOf/0/properties/at/pattern",)
    assert caplog.records == []


def test_a_member_constraint_inside_an_array_is_a_rule_on_every_element():
    item = {
        "type": "object",
        "properties": {
            "sku": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "size": {
                "type": "object",
                "properties": {"cm": {"type": "number", "exclusiveMinimum": 0}},
                "x-jsl-type": "struct",
            },
        },
    }
    contract = read(thing({"lines": {"type": "array", "items": item}}))
    found = contract.event_type("Thing").field("lines")

    assert found.type.element.fields[0].constraints == (Pattern(regex="^[A-Z]{3}$"),)
    rules = {r.name: r for r in contract.rules if r.constraint is not None}
    assert [(r.column, r.path, r.member, r.description) for r in rules.values()] == [
        ("lines", "lines[].sku", "sku", "each lines[].sku matches ^[A-Z]{3}$."),
        ("lines", "lines[].size.cm", "size.cm", "each lines[].size.cm is greater than 0."),
    ]
    assert list(rules) == ["lines_each_sku_matches_pattern", "lines_each_size_cm_in_range"]


def test_a_member_constraint_inside_a_map_or_nested_array_is_left_to_the_validator():
    item = {"type": "object", "properties": {"qty": {"type": "integer", "minimum": 1}}}
    in_map = read(thing({"x": {"type": "object", "additionalProperties": item}}))
    nested = read(thing({"x": {"type": "array", "items": {"type": "array", "items": item}}}))

    assert in_map.event_type("Thing").field("x").type.element.fields[0].constraints == ()
    assert nested.event_type("Thing").field("x").type.element.element.fields[0].constraints == ()
    assert in_map.event_type("Thing").schema_check.delegated == (
        "/properties/x/additionalProperties",
    )
    assert nested.event_type("Thing").schema_check.delegated == ("/properties/x/items",)


def test_json_null_is_refused_where_the_type_leaves_it_out():
    contract = read(
        thing(
            {
                "plain": {"type": "number"},
                "maybe": {"anyOf": [{"type": "number"}, {"type": "null"}]},
                "needed": {"type": "number"},
                "anything": {},
                "tags": {"type": "array", "items": {"type": "string"}},
                "notes": {"type": "array", "items": {"type": ["string", "null"]}},
                "lines": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"sku": {"type": "string"}},
                        "additionalProperties": False,
                    },
                },
            },
            ["needed"],
        )
    )
    fields = {f.path: f for f in contract.event_type("Thing").fields}

    assert [
        (p, fields[p].nullable, fields[p].items_nullable, fields[p].closed_items)
        for p in ("plain", "maybe", "needed", "anything", "tags", "notes", "lines")
    ] == [
        ("plain", False, None, False),
        ("maybe", True, None, False),
        ("needed", None, None, False),  # required: null is missing either way
        ("anything", None, None, False),
        ("tags", False, False, False),
        ("notes", False, True, False),
        ("lines", False, False, True),
    ]


def test_a_yaml_field_leaves_null_handling_unset_and_its_repr_unchanged():
    f = ContractField("a", FieldType(TypeKind.DOUBLE))

    assert (f.nullable, f.items_nullable, f.closed_items) == (None, None, False)
    assert repr(f) == (
        "Field(path='a', type=FieldType('double'), column='a', required=False, "
        "description=None, constraints=())"
    )


class Node(BaseModel):
    name: str
    children: list[Node] = []


class Left(BaseModel):
    right: Right


class Right(BaseModel):
    left: Left | None = None


class Tree(BaseModel):
    root: Node


class Loop(BaseModel):
    left: Left


@pytest.mark.parametrize(
    ("model", "where"),
    [(Tree, "#/$defs/Node/properties/children: the schema nests"), (Loop, "#/$defs/")],
)
def test_a_recursive_model_fails_with_where_and_what_to_do(model, where):
    with pytest.raises(ContractError) as raised:
        contract_from_json_schemas({"e": model.model_json_schema()}, subjects={"e": ["e"]})

    assert where in str(raised.value)
    assert "recursive $ref" in str(raised.value)
    assert "x-jsl-type: json to keep its JSON text" in str(raised.value)


def test_a_recursive_model_loads_as_json_text_with_x_jsl_type_json():
    schema = Tree.model_json_schema()
    schema["properties"]["root"]["x-jsl-type"] = "json"  # beside the $ref

    found = contract_from_json_schemas({"e": schema}, subjects={"e": ["e"]}).event_type("e")

    assert [(f.path, str(f.type)) for f in found.fields] == [("root", "json")]
