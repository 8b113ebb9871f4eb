"""JSON Schema keywords as a field's constraints: which keyword gives which constraint, each
element's constraints, rule names and severities (`x-jsl-rule`, `x-jsl-severity`).

See `pipelines.contract.json_schema_reader` for the whole mapping.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pipelines.contract import constraints as c
from pipelines.contract import sizes
from pipelines.contract.datatypes import FieldType, TypeKind
from pipelines.contract.formats import StringFormat
from pipelines.contract.json_schema_document import DECIMAL_TEXT, At, SchemaDocument

LOG = logging.getLogger("pipelines.contract.json_schema_fields")  # one logger for the reader
_TYPED_FORMATS = {"date-time": TypeKind.TIMESTAMP, "date": TypeKind.DATE}
CHECKED_FORMATS = frozenset(f.value for f in StringFormat)
# The text of a decimal number as pydantic reads one (spaces around it allowed; no NaN).
DECIMAL_PATTERN = r"^\s*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\s*$"
# The keywords that make a constraint, for errors that ask for one.
CONSTRAINT_KEYWORDS = (
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "pattern",
    "enum", "const", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems",
    "minProperties", "maxProperties", "format", "x-jsl-not-in-future",
)  # fmt: skip


class SchemaConstraints(SchemaDocument):
    """Maps a property's keywords to constraints; what no column rule judges is delegated."""

    def unknown_format(self, fmt: object, kind: str) -> None:
        """Counts a format nobody checks (an annotation); `log_unknown_formats` says so."""
        self.__dict__.setdefault("unknown_formats", Counter())[(str(fmt), kind)] += 1

    def log_unknown_formats(self) -> None:
        """One warning per format nobody checks and kind of value, with the places it is in
        the document (then forgets them: a document is read once)."""
        where = f"{self.source}: " if self.source else ""
        for (fmt, kind), places in sorted(self.__dict__.pop("unknown_formats", {}).items()):
            LOG.warning(
                "%sformat %r of a %s is not checked (an annotation: neither a column rule nor "
                "the validator knows it), in %d place%s", where, fmt, kind, places,
                "" if places == 1 else "s",
            )  # fmt: skip

    def constraints(self, schema: Mapping, at: At, field_type: FieldType) -> tuple:
        found = self.found_constraints(schema, at, field_type)
        kinds = [kind.kind for kind, _ in found]
        names = {key: self.per_kind(schema, at, key, kinds) for key in ("rule", "severity")}
        result = []
        for kind, arguments in found:
            options = {k: v[kind.kind] for k, v in names.items() if kind.kind in v}
            with self.at(at):
                result.append(kind(**arguments, **options))
        return tuple(result)

    def element_constraints(self, schema: Mapping, at: At, field_type: FieldType) -> tuple:
        """The constraints under an array's `items` (a map's `additionalProperties`), each
        checking every element (value)."""
        kind = field_type.kind
        if kind not in (TypeKind.ARRAY, TypeKind.MAP):
            return ()
        key = "items" if kind is TypeKind.ARRAY else "additionalProperties"
        given = schema.get(key, {})
        inner, inner_at = self.schema(given if isinstance(given, Mapping) else {}, (*at, key))
        element = field_type.element
        if element.kind is TypeKind.STRUCT:
            return ()  # a struct's members carry their own constraints
        found = self.constraints(inner, inner_at, element)
        if self.element_constraints(inner, inner_at, element):  # a collection's elements'
            key = "items" if element.kind is TypeKind.ARRAY else "additionalProperties"
            self.delegate((*inner_at, key))
        with self.at(inner_at):
            return tuple(replace(c_, each=True) for c_ in found)

    def found_constraints(self, schema: Mapping, at: At, field_type: FieldType) -> list:
        found: list[tuple[type[c.Constraint], dict[str, Any]]] = []
        if field_type.kind in (TypeKind.TIMESTAMP, TypeKind.DATE) and schema.get("type") in (
            "string",
            ["string"],
        ):
            # zod writes a pattern beside format: date-time; the column holds the parsed value.
            schema = dict(schema)
            for key in ("pattern", "minLength", "maxLength"):
                if key in schema:  # the column holds the parsed value; the text is judged
                    del schema[key]
                    self.delegate((*at, key))
        bounds = {
            "minimum": schema.get("minimum"),
            "maximum": schema.get("maximum"),
            "exclusive_minimum": schema.get("exclusiveMinimum"),
            "exclusive_maximum": schema.get("exclusiveMaximum"),
        }
        for key, bound in (("exclusive_minimum", "minimum"), ("exclusive_maximum", "maximum")):
            if isinstance(bounds[key], bool):  # draft-04: a flag on minimum / maximum
                bounds[key] = bounds[bound] if bounds[key] else None
                bounds[bound] = None if bounds[key] is not None else bounds[bound]
        if any(v is not None for v in bounds.values()):
            found.append((c.Range, {k: v for k, v in bounds.items() if v is not None}))
        if "multipleOf" in schema:
            found.append((sizes.MultipleOf, {"factor": schema["multipleOf"]}))
        if "pattern" in schema:
            found.append((c.Pattern, {"regex": schema["pattern"]}))
        if "enum" in schema or "const" in schema:
            found.append((c.AllowedValues, {"values": schema.get("enum", [schema.get("const")])}))
        counts = {
            "minLength": (sizes.MinLength, "length"),
            "maxLength": (c.MaxLength, "length"),
            "minItems": (sizes.MinItems, "count"),
            "maxItems": (sizes.MaxItems, "count"),
            "minProperties": (sizes.MinProperties, "count"),
            "maxProperties": (sizes.MaxProperties, "count"),
        }
        an_object = field_type.kind is TypeKind.STRUCT and "x-jsl-type" not in schema
        for key, (kind, argument) in counts.items():
            if key in schema and an_object and key.endswith("Properties"):
                self.delegate((*at, key))  # JSON Schema counts null and undeclared members too
            elif key in schema:
                found.append((kind, {argument: schema[key]}))
        if schema.get("uniqueItems") is True:
            found.append((sizes.UniqueItems, {}))
        fmt = schema.get("format")
        typed = fmt in _TYPED_FORMATS and field_type.kind is not TypeKind.STRING
        if fmt in CHECKED_FORMATS and not typed and field_type.kind is TypeKind.STRING:
            found.append((c.Format, {"format": fmt}))
        if schema.get(DECIMAL_TEXT):
            if "pattern" not in schema:
                found.append((c.Pattern, {"regex": DECIMAL_PATTERN}))
            numeric = (c.Range, sizes.MultipleOf)
            found = [(k, {**a, "numeric_text": True} if k in numeric else a) for k, a in found]
        if "x-jsl-not-in-future" in schema:
            with self.at((*at, "x-jsl-not-in-future")):
                skew = c.parse_duration(schema["x-jsl-not-in-future"])
            found.append((c.NotInFuture, {"skew": skew}))
        return found

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
