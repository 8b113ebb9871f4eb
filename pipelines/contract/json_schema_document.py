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
     "readOnly", "writeOnly", "$schema", "$id", "$defs", "definitions"}
)  # fmt: skip
KEYWORDS = frozenset(
    {"type", "format", "properties", "required", "additionalProperties", "items", "minimum",
     "maximum", "pattern", "enum", "const", "maxLength", "$ref"}
)  # fmt: skip
EXTENSIONS = frozenset(
    {"x-jsl-type", "x-jsl-column", "x-jsl-rule", "x-jsl-severity", "x-jsl-not-in-future",
     "x-jsl-unknown-fields", "x-jsl-severities"}
)  # fmt: skip
# The model's relative error paths -> this document's keywords.
_KEYWORD_OF = {
    "range": "minimum",
    "max_length": "maxLength",
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
        """The schema at `at`, with a `$ref` followed (to where the target is)."""
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
                f"$ref {ref!r} is recursive; the contract needs a finite schema", (*at, "$ref")
            )
        extra = set(schema) - {"$ref", "description", "title"}
        if extra:
            raise self.fail(
                f"keywords beside $ref are not supported ({', '.join(sorted(extra))}); "
                "put them in the referenced schema",
                (*at, sorted(extra)[0]),
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
        notes = {k: schema[k] for k in ("description",) if k in schema}
        return {**resolved, **notes}, where

    def check_keywords(self, schema: Mapping, at: At) -> None:
        for key in schema:
            if key in KEYWORDS or key in ANNOTATIONS or key in EXTENSIONS:
                continue
            if isinstance(key, str) and key.startswith("x-") and not key.startswith("x-jsl-"):
                continue
            hint = (
                " (declare one schema per event type instead)"
                if key in ("oneOf", "anyOf", "allOf")
                else ""
            )
            allowed = ", ".join(sorted(KEYWORDS | EXTENSIONS))
            raise self.fail(
                f"unsupported JSON Schema keyword {key!r}{hint}; the contract maps only {allowed}",
                (*at, key),
            )
