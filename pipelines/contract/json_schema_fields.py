"""JSON Schema properties as contract fields: types, constraints, rule names.

See `pipelines.contract.json_schema_reader` for the whole mapping.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pipelines.contract import constraints as c
from pipelines.contract.datatypes import TYPE_HELP, FieldType, TypeKind, parse_type
from pipelines.contract.json_schema_document import At, SchemaDocument
from pipelines.contract.model import Field

_SCALARS = {"string": TypeKind.STRING, "number": TypeKind.DOUBLE, "boolean": TypeKind.BOOLEAN}
_FORMATS = {"date-time": TypeKind.TIMESTAMP, "date": TypeKind.DATE}
_INTEGER_FORMATS = {None: TypeKind.LONG, "int64": TypeKind.LONG, "int32": TypeKind.INTEGER}
# The keywords that make a constraint, for errors that ask for one.
CONSTRAINT_KEYWORDS = (
    "minimum", "maximum", "pattern", "enum", "const", "maxLength", "format",
    "x-jsl-not-in-future",
)  # fmt: skip
# The JSON Schema types read, for errors that name an unknown one (as the YAML form's list).
JSON_TYPE_HELP = (
    'string, integer, number, boolean, object or array (or one of them and "null", e.g. '
    '[string, "null"]), or x-jsl-type with a contract type: ' + TYPE_HELP
)


class SchemaFields(SchemaDocument):
    """Maps one property's schema to a `Field` (nested objects here become structs)."""

    def properties(self, schema: Mapping, at: At) -> Iterator[tuple[str, Any, At, bool]]:
        properties, required = schema.get("properties", {}), schema.get("required", [])
        if not isinstance(properties, Mapping):
            raise self.fail("properties must be an object", (*at, "properties"))
        if not isinstance(required, list) or not set(required) <= set(properties):
            missing = sorted(set(required) - set(properties)) if isinstance(required, list) else []
            raise self.fail(
                f"required must list declared properties; not declared: {missing}",
                (*at, "required"),
            )
        if isinstance(schema.get("additionalProperties"), Mapping) and properties:
            raise self.fail(
                "additionalProperties as a schema beside properties is not supported; "
                "use false (reject unknown fields) or leave it out",
                (*at, "additionalProperties"),
            )
        for key, prop in properties.items():
            yield key, prop, (*at, "properties", key), key in required

    def field(
        self, schema: Mapping, at: At, path: str, required: bool, *, discriminator: bool = False
    ) -> Field:
        field_type = self.field_type(schema, at)
        constraints = () if discriminator else self.constraints(schema, at, field_type)
        with self.at(at):
            return Field(
                path=path,
                type=field_type,
                column=schema.get("x-jsl-column", ""),
                required=required,
                description=schema.get("description"),
                constraints=constraints,
            )

    def is_object(self, schema: Mapping) -> bool:
        kind = schema.get("type")
        return kind == "object" or (kind is None and "properties" in schema)

    def struct_fields(self, schema: Mapping, at: At) -> tuple[Field, ...]:
        return tuple(
            self.field(*self.resolve(prop, prop_at), key, is_required)
            for key, prop, prop_at, is_required in self.properties(schema, at)
        )

    def field_type(self, schema: Mapping, at: At) -> FieldType:
        self.check_keywords(schema, at)
        if "x-jsl-type" in schema:
            text = schema["x-jsl-type"]
            items, items_at = schema, at
            while items.get("type") == "array" and isinstance(items.get("items"), Mapping):
                items, items_at = self.resolve(items["items"], (*items_at, "items"))
            if items.get("type") == "object" and isinstance(
                items.get("additionalProperties"), Mapping
            ):
                items, items_at = self.resolve(
                    items["additionalProperties"], (*items_at, "additionalProperties")
                )
            nested = self.struct_fields(items, items_at) if "properties" in items else ()
            with self.at((*at, "x-jsl-type")):
                return parse_type(text, fields=nested)
        kind = schema.get("type")
        if isinstance(kind, list):
            kinds = [k for k in kind if k != "null"]
            if len(kinds) != 1:
                raise self.fail(
                    f"type {kind!r}: only one type (or one and null) is supported; use "
                    f"{JSON_TYPE_HELP}",
                    (*at, "type"),
                )
            kind = kinds[0]
        if kind is None:
            if "properties" in schema:
                kind = "object"
            elif "enum" in schema or "const" in schema:
                kind = "string"
            else:
                raise self.fail(f"the schema has no type; add one: {JSON_TYPE_HELP}", at)
        fmt = schema.get("format")
        if kind == "string":
            if fmt in _FORMATS:
                return FieldType(_FORMATS[fmt])
            if fmt not in (None, "uuid", "email"):
                raise self.fail(
                    f"unsupported format {fmt!r} for a string; supported: "
                    "date-time, date, uuid, email (or set x-jsl-type)",
                    (*at, "format"),
                )
            return FieldType(TypeKind.STRING)
        if kind == "integer":
            if fmt not in _INTEGER_FORMATS:
                raise self.fail(
                    f"unsupported integer format {fmt!r}; use int32 or int64", (*at, "format")
                )
            return FieldType(_INTEGER_FORMATS[fmt])
        if kind in _SCALARS:
            if fmt not in (None, "float", "double"):
                raise self.fail(
                    f"unsupported format {fmt!r} for {kind}; supported: float, double (or no "
                    "format), or set x-jsl-type",
                    (*at, "format"),
                )
            return FieldType(_SCALARS[kind])
        if kind == "array":
            if not isinstance(schema.get("items"), Mapping):
                raise self.fail("an array needs `items` with one schema", (*at, "items"))
            items, items_at = self.resolve(schema["items"], (*at, "items"))
            return FieldType(TypeKind.ARRAY, element=self.field_type(items, items_at))
        if kind == "object":
            values = schema.get("additionalProperties")
            if "properties" in schema:
                return FieldType(TypeKind.STRUCT, fields=self.struct_fields(schema, at))
            if isinstance(values, Mapping):
                values, values_at = self.resolve(values, (*at, "additionalProperties"))
                return FieldType(TypeKind.MAP, element=self.field_type(values, values_at))
            raise self.fail(
                "an object without properties needs additionalProperties: <schema> "
                "(a map), or x-jsl-type",
                at,
            )
        raise self.fail(f"unsupported type {kind!r}; use {JSON_TYPE_HELP}", (*at, "type"))

    def constraints(self, schema: Mapping, at: At, field_type: FieldType) -> tuple:
        found: list[tuple[type[c.Constraint], dict[str, Any]]] = []
        if "minimum" in schema or "maximum" in schema:
            found.append(
                (c.Range, {"minimum": schema.get("minimum"), "maximum": schema.get("maximum")})
            )
        if "pattern" in schema:
            found.append((c.Pattern, {"regex": schema["pattern"]}))
        if "enum" in schema or "const" in schema:
            found.append((c.AllowedValues, {"values": schema.get("enum", [schema.get("const")])}))
        if "maxLength" in schema:
            found.append((c.MaxLength, {"length": schema["maxLength"]}))
        fmt = schema.get("format")
        if fmt in ("uuid", "email") or (fmt == "date-time" and field_type.kind == "string"):
            found.append((c.Format, {"format": fmt}))
        if "x-jsl-not-in-future" in schema:
            with self.at((*at, "x-jsl-not-in-future")):
                skew = c.parse_duration(schema["x-jsl-not-in-future"])
            found.append((c.NotInFuture, {"skew": skew}))
        kinds = [kind.kind for kind, _ in found]
        names = {key: self.per_kind(schema, at, key, kinds) for key in ("rule", "severity")}
        result = []
        for kind, arguments in found:
            options = {k: v[kind.kind] for k, v in names.items() if kind.kind in v}
            with self.at(at):
                result.append(kind(**arguments, **options))
        return tuple(result)

    def per_kind(self, schema: Mapping, at: At, key: str, kinds: list[str]) -> dict[str, Any]:
        value = schema.get(f"x-jsl-{key}")
        if value is None:
            return {}
        add = (
            f"add one ({', '.join(CONSTRAINT_KEYWORDS)}) or remove x-jsl-{key}"
            if not kinds
            else f"write {{<kind>: ...}} with kind in {kinds}"
        )
        if isinstance(value, Mapping):
            unknown = set(value) - set(kinds)
            if unknown:
                raise self.fail(
                    f"x-jsl-{key} names {sorted(unknown)}, but this property's "
                    f"constraints are {kinds or 'none'}; {add}",
                    (*at, f"x-jsl-{key}"),
                )
            return dict(value)
        if len(kinds) != 1:
            raise self.fail(
                f"x-jsl-{key} as text needs exactly one constraint, this property "
                f"has {kinds or 'none'}; {add}",
                (*at, f"x-jsl-{key}"),
            )
        return {kinds[0]: value}
