"""A JSON Schema document being read: `$ref` resolution, keyword checks, located errors.

`SchemaDocument` holds the whole document (a JSON Schema, or an AsyncAPI document whose
schemas refer to each other) so that `$ref: "#/..."` resolves inside it; a `$ref` to another
document, a recursive one, or a keyword the contract does not map fails with the schema path
as a JSON pointer (`#/components/schemas/OrderPlaced/properties/data/oneOf`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pipelines.contract.errors import ContractError, PathPart, located

At = tuple[PathPart, ...]
ANNOTATIONS = frozenset(
    {"title", "description", "examples", "example", "default", "$comment", "deprecated",
     "readOnly", "writeOnly", "$schema", "$id", "$defs", "definitions", "$anchor",
     "$dynamicAnchor", "$vocabulary", "contentEncoding", "contentMediaType", "contentSchema",
     "discriminator", "xml", "externalDocs", "$recursiveAnchor"}
)  # fmt: skip
KEYWORDS = frozenset(
    {"type", "format", "properties", "required", "additionalProperties", "items", "minimum",
     "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "pattern", "enum",
     "const", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems",
     "minProperties", "maxProperties", "nullable", "$ref", "allOf", "anyOf", "oneOf"}
)  # fmt: skip
EXTENSIONS = frozenset(
    {"x-jsl-type", "x-jsl-column", "x-jsl-rule", "x-jsl-severity", "x-jsl-not-in-future",
     "x-jsl-unknown-fields", "x-jsl-severities"}
)  # fmt: skip
# Keywords that cannot become a column or a row rule: why, and what to do instead.
REFUSED = {
    "not": "a negated schema is no column type nor one rule",
    "if": "a conditional schema (if/then/else) depends on other fields' values",
    "then": "a conditional schema (if/then/else) depends on other fields' values",
    "else": "a conditional schema (if/then/else) depends on other fields' values",
    "patternProperties": "properties named by a pattern have no fixed columns",
    "dependentSchemas": "a schema that applies when another field is present is no column",
    "dependentRequired": "fields required only when another is present are not mapped",
    "dependencies": "fields or schemas that apply only when another field is present are "
    "not mapped",
    "propertyNames": "a rule on the keys of an object is not mapped",
    "prefixItems": "a tuple (one schema per position) is not one array element type",
    "additionalItems": "a tuple (one schema per position) is not one array element type",
    "contains": "a rule on some of an array's elements is not mapped",
    "minContains": "a rule on some of an array's elements is not mapped",
    "maxContains": "a rule on some of an array's elements is not mapped",
    "unevaluatedProperties": "it depends on what the other keywords evaluated",
    "unevaluatedItems": "it depends on what the other keywords evaluated",
    "$dynamicRef": "a dynamic reference has no fixed target",
    "$recursiveRef": "a recursive reference has no finite schema",
}
# Where a merged schema's keywords came from (allOf branches, a $ref's target), for errors.
ORIGINS = "\x00origins"
# Marks pydantic's Decimal read as a string column: its number keywords judge the text.
DECIMAL_TEXT = "\x00decimal text"
_INTERNAL = (ORIGINS, DECIMAL_TEXT)
_UNIONS = ("anyOf", "oneOf")
_NULL = {"type": "null"}

# The model's relative error paths -> this document's keywords.
_KEYWORD_OF = {
    "range": "minimum",
    "minimum": "minimum",
    "maximum": "maximum",
    "exclusive_minimum": "exclusiveMinimum",
    "exclusive_maximum": "exclusiveMaximum",
    "multiple_of": "multipleOf",
    "min_length": "minLength",
    "max_length": "maxLength",
    "min_items": "minItems",
    "max_items": "maxItems",
    "min_properties": "minProperties",
    "max_properties": "maxProperties",
    "not_in_future": "x-jsl-not-in-future",
    "severity": "x-jsl-severity",
    "column": "x-jsl-column",
    "severities": "x-jsl-severities",
    "unknown_fields": "x-jsl-unknown-fields",
}


class SchemaDocument:
    """One document whose payload schemas are read (it holds every `$ref` target).

    Args:
        document: the whole document (a JSON Schema, or an AsyncAPI document).
        source: its file or name in errors.
        line_of: the line of a path in the document, if known.
    """

    def __init__(
        self,
        document: Mapping[str, Any],
        *,
        source: str | None = None,
        line_of: Callable[[At], int | None] | None = None,
    ) -> None:
        self.document, self.source, self.line_of = document, source, line_of

    def fail(self, problem: str, at: At) -> ContractError:
        line = self.line_of(at) if self.line_of else None
        return ContractError(
            problem, source=self.source, path=at, line=line, pointer=True, absolute=True
        )

    @contextmanager
    def at(self, at: At) -> Iterator[None]:
        try:
            with located(self.source, at, pointer=True, line_of=self.line_of):
                yield
        except ContractError as error:
            relative = error.path[len(at) :]
            if relative and relative[0] in _KEYWORD_OF and error.path[: len(at)] == at:
                path = (*at, _KEYWORD_OF[relative[0]], *relative[1:])
                raise self.fail(error.problem, path) from None
            raise

    def resolve(self, schema: Any, at: At, seen: tuple[str, ...] = ()) -> tuple[Mapping, At]:
        """The schema at `at`, with a `$ref` followed (to where the target is).

        Annotations beside a `$ref` are kept (a `description` overrides the target's); other
        keywords beside it are read by `schema`, as an `allOf` of the target and them.
        """
        if not isinstance(schema, Mapping):
            raise self.fail(f"a schema is an object, got {schema!r}", at)
        ref = schema.get("$ref")
        if ref is None:
            return schema, at
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise self.fail(
                f"$ref {ref!r} points outside this document; inline the schema or "
                "move it under #/$defs (AsyncAPI: #/components/schemas)",
                (*at, "$ref"),
            )
        if ref in seen:
            raise self.fail(
                f"$ref {ref!r} is recursive (a schema that contains itself, such as a tree); "
                "the contract needs a finite schema: cut the recursion, or give the "
                "property x-jsl-type: json to keep its JSON text",
                (*at, "$ref"),
            )
        target: Any = self.document
        path: At = ()
        for token in filter(None, ref[1:].split("/")):
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(target, list) and token.isdigit() and int(token) < len(target):
                target, path = target[int(token)], (*path, int(token))
            elif isinstance(target, Mapping) and token in target:
                target, path = target[token], (*path, token)
            else:
                raise self.fail(f"$ref {ref!r} points to nothing in this document", (*at, "$ref"))
        resolved, where = self.resolve(target, path, (*seen, ref))
        extra = {k: v for k, v in schema.items() if k not in ANNOTATIONS and k != "$ref"}
        notes = {k: schema[k] for k in ("description",) if k in schema}
        if extra:
            merged = self.merge([(resolved, where), (extra, at)], at)
            return {**merged, **notes}, at
        return {**resolved, **notes}, where

    def schema(self, schema: Any, at: At, seen: tuple[str, ...] = ()) -> tuple[Mapping, At]:
        """`resolve`, then composition read into one plain schema.

        - `allOf`: its schemas merged (properties and `required` joined; the same keyword in
          two of them must agree).
        - `anyOf`/`oneOf` of schemas and `{type: "null"}`: the schema, nullable. pydantic's
          Decimal (`[number, string]`) is a string, or the x-jsl-type given beside it.
        - `type: [T, "null"]`, `nullable: true` (OpenAPI), `null` in `enum`: nullable.

        The result says `nullable: true` when null is allowed, with `type` a single type.
        """
        schema, at = self.resolve(schema, at, seen)
        if schema.get("propertyNames") in ({}, {"type": "string"}):  # zod's records: no rule
            schema = {k: v for k, v in schema.items() if k != "propertyNames"}
        nullable = schema.get("nullable") is True
        if "allOf" in schema:
            branches = self.branches(schema, at, "allOf", seen)
            own = {k: v for k, v in schema.items() if k != "allOf"}
            schema = self.merge([*branches, (own, at)], at)
            if len(branches) == 1 and not set(own) - ANNOTATIONS:
                at = branches[0][1]
        for keyword in _UNIONS:
            if keyword not in schema:
                continue
            branches = self.branches(schema, at, keyword, seen)
            kept = [(b, b_at) for b, b_at in branches if b.get("type") != "null"]
            nullable = nullable or len(kept) < len(branches)
            nullable = nullable or any(b.get("nullable") is True for b, _ in kept)
            own = {k: v for k, v in schema.items() if k != keyword}
            if len(kept) == 1:
                schema = self.merge([kept[0], (own, at)], at)
                at = kept[0][1] if not set(own) - ANNOTATIONS else at
            elif self.is_decimal(kept):
                (number, _), (text, _) = sorted(kept, key=lambda b: b[0].get("type") != "number")
                schema = self.decimal(own, number, text, at)
            elif "x-jsl-type" in own:
                schema = own
            else:
                raise self.fail(
                    f"{keyword} of {len(kept)} schemas: a column has one type; the contract "
                    f"reads {keyword} only as [<schema>, {{type: null}}] (nullable), pydantic's "
                    "Decimal [number, string], or at the top of a document as object "
                    "schemas told apart by a const discriminator (one event type each); "
                    "give the property x-jsl-type (json keeps its JSON text)",
                    (*at, keyword),
                )
        kind = schema.get("type")
        if isinstance(kind, list) and "null" in kind:
            rest = [k for k in kind if k != "null"]
            nullable = True
            schema = {**schema, "type": rest[0] if len(rest) == 1 else rest}
        values = schema.get("enum")
        if isinstance(values, list) and None in values:
            nullable = True
            schema = {**schema, "enum": [v for v in values if v is not None]}
            if not schema["enum"]:
                raise self.fail("enum lists only null; a field that is always null is no column",
                                (*at, "enum"))  # fmt: skip
        if schema.get("type") == "null":
            raise self.fail(
                'type: "null" alone: a field that is always null is no column; remove it',
                (*at, "type"),
            )
        if nullable:
            schema = {**schema, "nullable": True}
        return schema, at

    def branches(self, schema: Mapping, at: At, keyword: str, seen) -> list[tuple[Mapping, At]]:
        items = schema[keyword]
        if not isinstance(items, list) or not items:
            raise self.fail(f"{keyword} is a non-empty list of schemas", (*at, keyword))
        found = []
        for i, item in enumerate(items):
            item, item_at = self.resolve(item, (*at, keyword, i), seen)
            is_null = item.get("type") == "null" and keyword != "allOf"
            found.append((item, item_at) if is_null else self.schema(item, item_at, seen))
        return found

    def merge(self, parts: list[tuple[Mapping, At]], at: At) -> dict:
        """One schema of several that all apply (allOf): properties and required joined."""
        merged: dict[str, Any] = {}
        origins: dict[str, At] = {}
        for part, part_at in parts:
            for key, value in part.items():
                if key == ORIGINS:
                    continue
                if key == "properties" and isinstance(value, Mapping):
                    properties = merged.setdefault("properties", {})
                    for name, prop in value.items():
                        if name in properties and properties[name] != prop:
                            raise self.fail(
                                f"property {name!r} is declared twice in allOf, differently "
                                f"(also at {_pointer(origins[name])}); declare it once",
                                (*part_at, "properties", name),
                            )
                        properties[name] = prop
                        origins[name] = part.get(ORIGINS, {}).get(
                            name, (*part_at, "properties", name)
                        )
                elif key == "required" and isinstance(value, list):
                    merged["required"] = list(dict.fromkeys([*merged.get("required", []), *value]))
                elif key in ANNOTATIONS:
                    merged.setdefault(key, value)
                elif key in merged and merged[key] != value:
                    raise self.fail(
                        f"{key} is {merged[key]!r} in one schema of allOf and {value!r} in "
                        "another; the contract merges allOf only where they agree: keep one",
                        (*part_at, key),
                    )
                else:
                    merged[key] = value
        merged[ORIGINS] = origins
        return merged

    def is_decimal(self, branches: list[tuple[Mapping, At]]) -> bool:
        """Whether a union is pydantic's Decimal: a number, or a string (with a pattern)."""
        kinds = sorted(str(b.get("type")) for b, _ in branches)
        return kinds == ["number", "string"]

    def decimal(self, own: Mapping, number: Mapping, text: Mapping, at: At) -> dict:
        """pydantic's Decimal: a string column (its exact text) whose number constraints
        judge the text as a decimal number; or x-jsl-type's type with the number's
        constraints when given."""
        if "x-jsl-type" in own:
            return {**number, **own}
        checks = {k: v for k, v in number.items() if k not in ANNOTATIONS and k != "type"}
        return {**text, **own, **checks, "type": "string", DECIMAL_TEXT: True}

    def check_keywords(self, schema: Mapping, at: At) -> None:
        for key in schema:
            if key in KEYWORDS or key in ANNOTATIONS or key in EXTENSIONS or key in _INTERNAL:
                continue
            if isinstance(key, str) and key.startswith("x-") and not key.startswith("x-jsl-"):
                continue
            why = f" ({REFUSED[key]})" if key in REFUSED else ""
            allowed = ", ".join(sorted(KEYWORDS | EXTENSIONS))
            raise self.fail(
                f"unsupported JSON Schema keyword {key!r}{why}; remove it (or check it "
                f"downstream), the contract maps only {allowed}",
                (*at, key),
            )


def _pointer(at: At) -> str:
    return "#/" + "/".join(str(part) for part in at)
