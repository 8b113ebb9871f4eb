"""A JSON Schema document being read: `$ref` resolution, keyword checks, located errors.

`SchemaDocument` holds the whole document (a JSON Schema, or an AsyncAPI document whose
schemas refer to each other) so that `$ref: "#/..."` resolves inside it; a `$ref` to another
document fails with the schema path as a JSON pointer
(`#/components/schemas/OrderPlaced/properties/data/$ref`). What no column can express is
`delegate`d: its JSON pointer is kept for the validator (`pipelines.contract.schema_check`).
"""

from __future__ import annotations

import re
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
EXTENSIONS = frozenset(
    {"x-jsl-type", "x-jsl-column", "x-jsl-flatten", "x-jsl-rule", "x-jsl-severity",
     "x-jsl-not-in-future", "x-jsl-unknown-fields", "x-jsl-severities"}
)  # fmt: skip
# Keywords no column or one-column rule can express: the validator judges them
# (`pipelines.contract.schema_check`).
VALIDATOR_KEYWORDS = frozenset(
    {"not", "if", "then", "else", "patternProperties", "dependentSchemas", "dependentRequired",
     "dependencies", "propertyNames", "prefixItems", "additionalItems", "contains",
     "minContains", "maxContains", "unevaluatedProperties", "unevaluatedItems", "$dynamicRef",
     "$recursiveRef"}
)  # fmt: skip
# A sentinel branch of an optional field's union, such as githubkit's `{const: "<UNSET>"}`:
# a value the SDK never sends, not a type of the column.
_SENTINEL = re.compile(r"^<[A-Za-z_]+>$")
# Where a merged schema's keywords came from (allOf branches, a $ref's target), for errors.
ORIGINS = "\x00origins"
# Marks pydantic's Decimal read as a string column: its number keywords judge the text.
DECIMAL_TEXT = "\x00decimal text"
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
        if ref in seen:  # a schema that contains itself (a tree): a VARIANT
            self.delegate((*at, "$ref"))
            return {"x-jsl-type": "variant"}, at
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
            kept = [(b, b_at) for b, b_at in kept if not _is_sentinel(b)] or kept
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
                schema = self.union(kept, own, (*at, keyword))
        kind = schema.get("type")
        if isinstance(kind, list) and "null" in kind:
            rest = [k for k in kind if k != "null"]
            nullable = True
            schema = {**schema, "type": rest[0] if len(rest) == 1 else rest}
        values = schema.get("enum")
        if isinstance(values, list) and None in values:
            nullable = True
            schema = {**schema, "enum": [v for v in values if v is not None]}
            if not schema["enum"]:  # only null: as type "null"
                self.delegate((*at, "enum"))
                schema = {k: v for k, v in schema.items() if k != "enum"}
                schema |= {"x-jsl-type": "variant"}
        if schema.get("type") == "null":  # always null: a VARIANT, judged by the validator
            self.delegate((*at, "type"))
            schema = {k: v for k, v in schema.items() if k != "type"} | {"x-jsl-type": "variant"}
            nullable = True
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
                        where = part.get(ORIGINS, {}).get(name, (*part_at, "properties", name))
                        if name in properties and properties[name] != prop:
                            # Both apply (a narrowing, such as an event's own enum of an
                            # `action`): the first makes the column, the validator judges both.
                            self.delegate(where)
                            continue
                        properties[name] = prop
                        origins[name] = where
                elif key == "required" and isinstance(value, list):
                    merged["required"] = list(dict.fromkeys([*merged.get("required", []), *value]))
                elif key in ANNOTATIONS:
                    merged.setdefault(key, value)
                elif key in merged and merged[key] != value:
                    self.delegate((*part_at, key))  # both apply: the first maps, both judge
                else:
                    merged[key] = value
        merged[ORIGINS] = origins
        return merged

    def union(self, kept: list[tuple[Mapping, At]], own: Mapping, at: At) -> dict:
        """A union of unlike schemas (`integer | string`, `object | array`, `{}`): the type
        its branches share (two string formats: a string; integer and number: a number),
        else the value's JSON text; the validator judges the union itself.

        Keywords beside the union (`type: string` with an `anyOf` of formats) make the
        column as usual."""
        self.delegate(at)
        if set(own) - ANNOTATIONS - {ORIGINS}:
            return dict(own)
        kinds = {_json_kind(branch) for branch, _ in kept}
        if kinds == {"integer", "number"}:
            kinds = {"number"}
        notes = {k: v for k, v in own.items() if k in ANNOTATIONS}
        if len(kinds) == 1 and next(iter(kinds)) in _SCALAR_KINDS:
            return {**notes, "type": kinds.pop()}
        return {**notes, "x-jsl-type": "variant"}

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

    @property
    def delegated(self) -> list[At]:
        """Where the keywords that only the validator judges are (reset per event type)."""
        return self.__dict__.setdefault("_delegated", [])

    @property
    def problems(self) -> list[ContractError]:
        """The problems found so far in the event type being read (each property's first)."""
        return self.__dict__.setdefault("_problems", [])

    def delegate(self, at: At) -> None:
        """Leaves the keyword at `at` to the validator (`pipelines.contract.schema_check`)."""
        self.delegated.append(at)

    def check_keywords(self, schema: Mapping, at: At) -> None:
        """Delegates the keywords no column expresses; other unknown keywords are
        annotations, as JSON Schema says, except a misspelt extension of this project's."""
        for key in schema:
            if key in VALIDATOR_KEYWORDS:
                self.delegate((*at, key))
            elif isinstance(key, str) and key.startswith("x-jsl-") and key not in EXTENSIONS:
                raise self.fail(
                    f"unknown extension {key!r}; this project's are "
                    f"{', '.join(sorted(EXTENSIONS))}",
                    (*at, key),
                )


_SCALAR_KINDS = ("string", "integer", "number", "boolean")


def _is_sentinel(branch: Mapping) -> bool:
    """Whether a union's branch only admits a sentinel text (`{const: "<UNSET>"}`)."""
    values = [branch["const"]] if "const" in branch else branch.get("enum")
    return (
        isinstance(values, list)
        and len(values) == 1
        and isinstance(values[0], str)
        and _SENTINEL.match(values[0]) is not None
    )


def _json_kind(schema: Mapping) -> str | None:
    """The one JSON type a (read) schema admits, or None when it admits several or any."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind
    if kind is None and "properties" in schema:
        return "object"
    if kind is None and "items" in schema:
        return "array"
    values = [schema["const"]] if "const" in schema else schema.get("enum")
    if kind is None and isinstance(values, list) and values:
        kinds = {_value_type(v) for v in values}
        return kinds.pop() if len(kinds) == 1 else None
    return None


def _value_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string" if isinstance(value, str) else "json"
