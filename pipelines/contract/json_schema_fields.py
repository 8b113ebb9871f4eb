"""JSON Schema properties as contract fields: their types, nesting and requirement (their
constraints: `pipelines.contract.json_schema_constraints`).

See `pipelines.contract.json_schema_reader` for the whole mapping.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from pipelines.contract.datatypes import TYPE_HELP, FieldType, TypeKind, parse_type
from pipelines.contract.fields import default_column
from pipelines.contract.json_schema_constraints import CHECKED_FORMATS, SchemaConstraints
from pipelines.contract.json_schema_document import DECIMAL_TEXT, ORIGINS, At
from pipelines.contract.model import Field
from pipelines.contract.schema_check import VALIDATOR_FORMATS

_SCALARS = {"string": TypeKind.STRING, "number": TypeKind.DOUBLE, "boolean": TypeKind.BOOLEAN}
_TYPED_FORMATS = {"date-time": TypeKind.TIMESTAMP, "date": TypeKind.DATE}
_INTEGER_FORMATS = {"int64": TypeKind.LONG, "int32": TypeKind.INTEGER}
_NUMBER_FORMATS = ("float", "double")
ANY_VALUE = (TypeKind.JSON, TypeKind.VARIANT)  # any JSON value: no keyword is a column's rule
MAX_DEPTH = 32  # nested types deeper than this are taken for a recursive $ref
# The JSON Schema types read, for errors that name an unknown one (as the YAML form's list).
JSON_TYPE_HELP = (
    'string, integer, number, boolean, object or array (or one of them and "null", e.g. '
    '[string, "null"]), or x-jsl-type with a contract type: ' + TYPE_HELP
)


def _value_kind(values: list) -> str:
    """The JSON type of `enum`/`const` values given without `type`."""
    if all(isinstance(v, bool) for v in values):
        return "boolean"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "integer"
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return "number"
    return "string"


def _nullable(schema: Mapping) -> bool | None:
    """Whether JSON null is a value of the (normalized) schema: true when it says so, false
    when its `type`, `enum` or `const` leaves null out, None (unset) when nothing restricts
    the value's type."""
    if schema.get("nullable") is True:
        return True
    return False if {"type", "enum", "const"} & set(schema) else None


class SchemaFields(SchemaConstraints):
    """Maps one property's schema to a `Field` (nested objects here become structs)."""

    def properties(self, schema: Mapping, at: At) -> Iterator[tuple[str, Any, At, bool]]:
        properties, required = schema.get("properties", {}), schema.get("required", [])
        if not isinstance(properties, Mapping):
            raise self.fail("properties must be an object", (*at, "properties"))
        if not isinstance(required, list):
            raise self.fail(f"required is a list of names, got {required!r}", (*at, "required"))
        if not set(required) <= set(properties):  # names with no column: the validator's
            self.delegate((*at, "required"))
        if isinstance(schema.get("additionalProperties"), Mapping) and properties:
            # The undeclared fields have no columns; the validator judges their values.
            self.delegate((*at, "additionalProperties"))
        origins = schema.get(ORIGINS, {})
        for key, prop in properties.items():
            yield key, prop, origins.get(key, (*at, "properties", key)), key in required

    def field(
        self, schema: Mapping, at: At, path: str, required: bool, *, discriminator: bool = False
    ) -> Field:
        schema, at = self.schema(schema, at)
        field_type = self.field_type(schema, at)
        constraints = () if discriminator else self.constraints(schema, at, field_type)
        if field_type.kind in ANY_VALUE and constraints:  # keywords on any JSON value
            self.delegate(at)
            constraints = ()
        if not discriminator and "x-jsl-type" not in schema:
            constraints += self.element_constraints(schema, at, field_type)
        items = None
        if field_type.kind in (TypeKind.ARRAY, TypeKind.MAP):
            key = "items" if field_type.kind is TypeKind.ARRAY else "additionalProperties"
            given = schema.get(key, {})
            given = given if isinstance(given, Mapping) else {}
            items, _ = self.schema(given, (*at, key))
        element = field_type.element
        with self.at(at):
            return Field(
                path=path,
                type=field_type,
                column=schema.get("x-jsl-column", ""),
                required=required,
                description=schema.get("description"),
                constraints=constraints,
                nullable=_nullable(schema),
                items_nullable=None if items is None else _nullable(items),
                number_text=field_type.kind is TypeKind.STRING and bool(schema.get(DECIMAL_TEXT)),
                closed_items=(
                    field_type.kind is TypeKind.ARRAY
                    and element.kind is TypeKind.STRUCT
                    and items.get("additionalProperties") is False
                ),
            )

    def is_container(self, schema: Any, at: At) -> bool:
        """Whether `schema` is an object with properties or an array (where a recursive
        `$ref` nests)."""
        resolved, _ = self.schema(schema, at)
        return "properties" in resolved or "items" in resolved

    def is_object(self, schema: Mapping) -> bool:
        kind = schema.get("type")
        return kind == "object" or (kind is None and "properties" in schema)

    def struct_fields(self, schema: Mapping, at: At) -> tuple[Field, ...]:
        """A struct's members; keys whose columns would be one (`ID` and `id`) each get
        their key's checksum after the column (`id_5d6e1b`), so no two collide."""
        found = [
            self.field(prop, prop_at, key, is_required)
            for key, prop, prop_at, is_required in self.properties(schema, at)
        ]
        shared = Counter(f.column.lower() for f in found)

        def apart(f: Field) -> Field:
            if shared[f.column.lower()] < 2 or f.column != default_column(f.path):
                return f  # its own column, or one someone named (x-jsl-column)
            checksum = f"{zlib.crc32(f.path.encode()):08x}"[:6]
            return replace(f, column=f"{f.column}_{checksum}")

        return tuple(apart(f) for f in found)

    def annotation(self, fmt: object, at: At, kind: str) -> None:
        """A `format` silver has no rule for: the validator asserts it if it knows it, else
        it is an annotation, as JSON Schema says (logged, one line per format)."""
        if fmt in VALIDATOR_FORMATS:
            self.delegate(at)
        else:
            self.unknown_format(fmt, kind)

    def field_type(self, schema: Mapping, at: At) -> FieldType:
        depth = self.__dict__.get("depth", 0)
        if depth > MAX_DEPTH and self.is_container(schema, at):
            raise self.fail(
                f"the schema nests more than {MAX_DEPTH} levels here: a recursive $ref (a "
                "model that contains itself, such as a tree)? The contract needs a finite "
                "schema: cut the recursion, or give the property x-jsl-type: json to keep "
                "its JSON text",
                at,
            )
        self.depth = depth + 1
        try:
            return self.nested_type(schema, at)
        finally:
            self.depth = depth

    def nested_type(self, schema: Mapping, at: At) -> FieldType:
        schema, at = self.schema(schema, at)
        self.check_keywords(schema, at)
        if "x-jsl-type" in schema:
            return self.declared_type(schema, at)
        kind = schema.get("type")
        if isinstance(kind, list):
            kinds = set(kind) - {"null"}
            if kinds == {"integer", "number"}:
                kind = "number"
            elif len(kinds) != 1:  # several types: a VARIANT, judged whole
                self.delegate((*at, "type"))
                return FieldType(TypeKind.VARIANT)
            else:
                kind = kinds.pop()
        if kind is None:
            if "properties" in schema or "additionalProperties" in schema:
                kind = "object"
            elif "enum" in schema or "const" in schema:
                kind = _value_kind(schema.get("enum", [schema.get("const")]))
            elif "items" in schema:
                kind = "array"
            else:
                return FieldType(TypeKind.VARIANT)  # any JSON value
        fmt = schema.get("format")
        if kind == "string":
            if fmt in _TYPED_FORMATS:
                return FieldType(_TYPED_FORMATS[fmt])
            if fmt is not None and fmt not in CHECKED_FORMATS:
                self.annotation(fmt, (*at, "format"), kind)
            return FieldType(TypeKind.STRING)
        if kind == "integer":
            if fmt is not None and fmt not in _INTEGER_FORMATS:
                self.annotation(fmt, (*at, "format"), kind)
            return FieldType(_INTEGER_FORMATS.get(fmt, TypeKind.LONG))
        if kind in _SCALARS:
            if fmt is not None and fmt not in _NUMBER_FORMATS:
                self.annotation(fmt, (*at, "format"), kind)
            return FieldType(_SCALARS[kind])
        if kind == "array":
            items = schema.get("items", {})
            if items is True:
                items = {}
            if not isinstance(items, Mapping):  # a tuple (draft-07 items: [...])
                self.delegate((*at, "items"))
                items = {}
            element = self.field_type(items, (*at, "items"))
            element = self.unchecked(element, (*at, "items"), members=True)
            return FieldType(TypeKind.ARRAY, element=element)
        if kind == "object":
            values = schema.get("additionalProperties", True)
            if schema.get("properties"):
                return FieldType(TypeKind.STRUCT, fields=self.struct_fields(schema, at))
            if values is True:
                values = {}
            if isinstance(values, Mapping):
                values_at = (*at, "additionalProperties")
                element = self.unchecked(self.field_type(values, values_at), values_at)
                return FieldType(TypeKind.MAP, element=element)
            self.delegate((*at, "additionalProperties"))  # only {}: judged by the validator
            return FieldType(TypeKind.MAP, element=FieldType(TypeKind.VARIANT))
        raise self.fail(f"unsupported type {kind!r}; use {JSON_TYPE_HELP}", (*at, "type"))

    def unchecked(
        self, element: FieldType, at: At, prefix: str = "", *, members: bool = False
    ) -> FieldType:
        """An array's or map's element type with the constraints no rule judges left out,
        each logged once as not checked. With `members` (the objects of an array), the
        constraints of their members (and of struct members inside those) are kept, as rules
        on every element (`lines_each_qty_in_range`); those on each element of an array or
        map inside them, and any below a map or a second collection, are left out."""
        if element.element is not None:
            inner = self.unchecked(element.element, at, prefix)
            return FieldType(element.kind, element=inner)
        if element.kind is not TypeKind.STRUCT:
            return element
        kept = []
        for f in element.fields:
            keep = tuple(c_ for c_ in f.constraints if members and not c_.each)
            for constraint in f.constraints:
                if constraint in keep:
                    continue
                self.delegate(at)  # no column rule judges it; the validator does
            inner_members = members and f.type.kind is TypeKind.STRUCT
            inner = self.unchecked(f.type, at, f"{prefix}{f.path}.", members=inner_members)
            kept.append(replace(f, type=inner, constraints=keep))
        return FieldType(TypeKind.STRUCT, fields=tuple(kept))

    def declared_type(self, schema: Mapping, at: At) -> FieldType:
        """The type `x-jsl-type` declares (struct members from the schema's properties)."""
        text = schema["x-jsl-type"]
        if isinstance(text, str) and text.strip().lower() in ANY_VALUE:
            # Whatever the schema says below: its JSON text, or a VARIANT.
            return FieldType(TypeKind(text.strip().lower()))
        items, items_at = schema, at
        while items.get("type") == "array" and isinstance(items.get("items"), Mapping):
            items, items_at = self.schema(items["items"], (*items_at, "items"))
        if items.get("type") == "object" and isinstance(items.get("additionalProperties"), Mapping):
            items, items_at = self.schema(
                items["additionalProperties"], (*items_at, "additionalProperties")
            )
        nested = self.struct_fields(items, items_at) if "properties" in items else ()
        with self.at((*at, "x-jsl-type")):
            declared = parse_type(text, fields=nested)
        if declared.element is not None:
            element = self.unchecked(declared.element, items_at)
            return FieldType(declared.kind, element=element)
        return declared
