"""What an event type's columns and rules leave to a real JSON Schema validator.

A JSON Schema holds more than columns and one-column rules can say: unions of unlike types
(`integer | string`), `not`, `if`/`then`/`else`, `dependentRequired`, `contains`,
`patternProperties`, `unevaluated*`, `allOf` branches that narrow one another, keywords on the
members of objects inside maps, formats silver has no rule for. The reader no longer refuses
them: it records where they are (`delegated`, JSON pointers into the document), gives the
value a column it can hold (a union: its JSON text), and the event type carries this
`SchemaCheck`. Silver then judges every message of the event type with `jsonschema-rs`
(`validator`), the schema's dialect taken from its `$schema`, formats asserted: rule
`schema_valid`, one entry per error, `<instance path>: <message>`. The validator judges the
whole schema, so a row that breaks a keyword a column rule also judges (a `maxLength`) breaks
both rules; its verdict decides whether the row reaches silver.

Pure Python: nothing here starts Spark. `pipelines.silver.schema_verdicts` runs it per row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import jsonschema_rs

DOCUMENT_URI = "urn:jetstream-lakehouse:contract"
# The formats jsonschema-rs asserts; any other is an annotation (JSON Schema's default).
VALIDATOR_FORMATS = frozenset(
    {"date", "date-time", "duration", "email", "hostname", "idn-email", "idn-hostname", "ipv4",
     "ipv6", "iri", "iri-reference", "json-pointer", "regex", "relative-json-pointer", "time",
     "uri", "uri-reference", "uri-template", "uuid"}
)  # fmt: skip


def pointer(at: tuple) -> str:
    """A schema path as a JSON pointer (`("$defs", "a/b", 0)` -> `/$defs/a~1b/0`)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in at)


def reachable(document: Any, at: tuple) -> Any:
    """`document` with only the schema at `at` and the `$ref` targets it reaches, each at its
    own place (so every `#/...` pointer resolves as written), and the root's `$schema`: a
    webhook event's schema keeps its dozens of definitions, not the document's thousands.
    A reference that is not a JSON pointer (`#anchor`, another document) keeps it whole."""
    wanted, todo = set(), [tuple(at)]
    while todo:
        path = todo.pop()
        cut = next((i for i, part in enumerate(path) if isinstance(part, int)), len(path))
        path = path[:cut]  # a place inside a list: the whole list (its owner)
        if path in wanted:
            continue
        if path == () and isinstance(document, dict):  # the root: all but its definitions
            todo += [(key,) for key in document if key not in ("$defs", "definitions")]
            continue
        wanted.add(path)
        for ref in _refs(_at(document, path)):
            if not ref.startswith("#/") and ref != "#":
                return document
            todo.append(tuple(_token(t) for t in ref[2:].split("/") if t))
    if () in wanted or not isinstance(document, dict):
        return document
    kept: dict = {k: document[k] for k in ("$schema",) if k in document}
    for path in sorted(wanted, key=len):
        if any(path[:n] in wanted for n in range(len(path))):
            continue  # inside a place kept whole
        target = kept
        for part in path[:-1]:
            target = target.setdefault(part, {})
        target[path[-1]] = _at(document, path)
    return kept


def _token(text: str) -> str | int:
    text = text.replace("~1", "/").replace("~0", "~")
    return int(text) if text.isdigit() else text


def _at(document: Any, path: tuple) -> Any:
    for part in path:
        if isinstance(document, list) and isinstance(part, int) and part < len(document):
            document = document[part]
        elif isinstance(document, dict) and str(part) in document:
            document = document[str(part)]
        elif isinstance(document, dict) and part in document:
            document = document[part]
        else:
            return {}
    return document


def _refs(node: Any):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("$ref", "$dynamicRef", "$recursiveRef") and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


@dataclass(frozen=True)
class SchemaCheck:
    """The JSON Schema of an event type's payload, judged where its columns cannot judge it.

    Attributes:
        document: the whole document the payload schema is in, as JSON text (its `$ref`s
            resolve inside it).
        at: the JSON pointer of the payload schema in `document` (`""` for its root).
        delegated: JSON pointers into `document` of the keywords only the validator judges
            (why the event type has a check; listed by `jsl contract` and in logs).
    """

    document: str
    at: str
    delegated: tuple[str, ...]

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "validator"}  # not picklable

    @classmethod
    def of(cls, document: Any, at: tuple, delegated: list[tuple]) -> SchemaCheck:
        """The check of the payload schema at `at` in `document`, judging `delegated`; the
        document is kept with only what the payload schema reaches (`reachable`)."""
        text = json.dumps(reachable(document, at), separators=(",", ":"), default=str)
        places = tuple(dict.fromkeys(pointer(p) for p in delegated))
        return cls(text, pointer(at), places)

    @cached_property
    def validator(self) -> Any:
        """The compiled jsonschema-rs validator (compiled once per process)."""
        document = json.loads(self.document)
        registry = jsonschema_rs.Registry([(DOCUMENT_URI, document)])
        root = {"$ref": f"{DOCUMENT_URI}#{self.at}"}
        if isinstance(document, dict) and isinstance(document.get("$schema"), str):
            root["$schema"] = document["$schema"]
        return jsonschema_rs.validator_for(root, registry=registry, validate_formats=True)

    def errors(self, instance: Any) -> list[tuple[str, str]]:
        """The validator's errors, each (the schema's keyword that failed, as a JSON pointer
        into the document: `/definitions/user/properties/id/type`; `<instance path>:
        <message>`: `/sender/id: "x" is not of type "integer"`)."""
        return [
            (
                pointer(tuple(error.schema_path)) or "/",
                f"{pointer(tuple(error.instance_path)) or '/'}: {error.message}",
            )
            for error in self.validator.iter_errors(instance)
        ]
