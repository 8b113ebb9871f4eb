"""Bronze payloads parsed into a checked frame, typed as a contract says (no Python per stream).

A payload is parsed once into a VARIANT and every path the contract names is looked up with
its JSON type (`schema_of_variant`), which tells a missing or null field
(`required_fields_present`) from one of the wrong type (`field_types_valid`); see
`pipelines.silver.variant_types` for what each contract type accepts. `parse_json` ignores
what follows the first JSON value, so the text is parsed wrapped in `[...]` (exactly one
value inside) and must end with `}`.

Missing and mistyped, precisely: a required field absent or JSON null is missing (absent
only, when it is `nullable`: JSON null is then its value); a present
field of the wrong type is mistyped, and so is JSON null on an optional field declared not
nullable (`nullable: false`, a JSON Schema type without null: `x (expected a number, got
null)`). An object on the way to a field (`data` of
`data.orderId`) that is present but not an object is mistyped itself, and its fields are not
reported; a struct field's members are judged only when the struct is an object. The columns
added are listed in `pipelines.silver.layout`. The payload's per-path values, the typed
values and the missing and mistyped paths are written as Spark SQL text (`variant_types`),
one call into the JVM per column: as Column calls, 700 paths took 100,000 of them.

Fields read from outside the payload (`header:<Name>`, `subject:<index>`, docs/envelopes.md)
take their text from `pipelines.silver.field_sources`, typed by `variant_types.from_text`:
absent is missing, unparsable is mistyped. Under the `cloudevents` preset a row is in binary
mode when it has a `ce-specversion` header (attributes in `ce-*` headers, the payload is the
data), else in structured mode (attributes are the payload's top-level keys, the data its
`data`: present but not an object, it is mistyped `data (expected an object)`); JSON paths
are looked up in the data.
"""

from __future__ import annotations

import functools
import re

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, StringType

from pipelines.contract import Contract, EventType, Field, TypeKind, UnknownFields
from pipelines.contract.event_types import EnvelopePreset
from pipelines.contract.fields import SourceKind, field_source
from pipelines.silver import layout
from pipelines.silver.field_sources import BINARY, header_text, source_text
from pipelines.silver.layout import (
    EVENT_ID,
    EVENT_TIME,
    EVENT_TYPE,
    MISSING_FIELDS,
    MISTYPED_FIELDS,
    PAYLOAD_PROBLEM,
    SCHEMA_ERRORS,
    Spot,
)
from pipelines.silver.schema_verdicts import schema_errors
from pipelines.silver.variant_types import (
    conforms,
    expected,
    field_typed,
    from_text,
    is_object,
    json_path,
    literal,
    name,
    present,
)


def _no_paths() -> Column:
    return F.array().cast(ArrayType(StringType()))


def _no_fields() -> Column:
    return F.create_map().cast("map<string,string>")


def payload_problem(text: Column, doc: Column, extra: Column) -> Column:
    """Why a payload is not one JSON object (empty, not UTF-8, not JSON, another JSON type,
    content after it); null when it is one.

    Args:
        text: the payload as a string.
        doc: the payload's JSON value as a variant; null when it is not valid JSON.
        extra: a second JSON value after the first; non-null when the text goes on.
    """
    kind = F.schema_of_variant(doc)
    other = (
        F.when(kind.startswith("ARRAY"), "a JSON array")
        .when(kind == "STRING", "a JSON string")
        .when(kind == "VOID", "JSON null")
        .when(kind == "BOOLEAN", "a JSON boolean")
        .otherwise("a JSON number")
    )
    return (
        F.when(F.length(text) == 0, F.lit("payload is empty"))
        .when(~F.is_valid_utf8(text), F.lit("payload is not valid UTF-8"))
        .when(doc.isNull() | extra.isNotNull(), F.lit("payload is not valid JSON"))
        .when(
            ~kind.startswith("OBJECT"),
            F.concat(F.lit("payload is "), other, F.lit(", not an object")),
        )
        .when(~text.rlike(r"\}\s*$"), F.lit("payload has content after the JSON object"))
    )


class _Columns:
    """Names of the temporary per-path columns: `_v` value, `_s` text (of a header or subject
    token), `_k` JSON type (`STRING` for text), `_t` typed value."""

    def __init__(self, contract: Contract) -> None:
        self.paths = {path: n for n, path in enumerate(layout.all_paths(contract))}
        self.sources = {path: field_source(path) for path in self.paths}
        self.types: dict[tuple[str, str, bool], str] = {}
        self.memo: dict[tuple, Column] = {}
        for event in contract.event_types:
            for spot in layout.spots(event.fields):
                self.types.setdefault(self.key(spot), f"_t{len(self.types)}")

    @staticmethod
    def key(spot: Spot) -> tuple[str, str, bool]:
        # The type's repr, not its name: two event types' `array<struct>` at one path may
        # hold different members (each its own typed column).
        return spot.path, repr(spot.field.type), spot.field.number_text

    # Each typed value's Column is built once and reused: building one is a call into the
    # JVM, and every check and struct of the contract refers to it.
    def _once(self, key: tuple, make) -> Column:
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = make()
        return found

    def typed(self, spot: Spot) -> Column:
        column = self.types[self.key(spot)]
        return self._once(("t", column), lambda: F.col(column))

    def sql(self, letter: str, path: str) -> str:
        """A temporary column's name as SQL text (`letter`: `v`, `s` or `k`)."""
        return name(f"_{letter}{self.paths[path]}")

    def typed_sql(self, spot: Spot) -> str:
        return name(self.types[self.key(spot)])

    def not_an_object(self, path: str) -> str:
        """SQL text: present, and not an object."""
        kind = self.sql("k", path)
        return f"({present(kind)} AND NOT {is_object(kind)})"

    def temporary(self) -> list[str]:
        names = [f"_{kv}{n}" for n in self.paths.values() for kv in "vsk"]
        return [*names, *self.types.values()]


def _problems(
    cols: _Columns, fields: tuple[Field, ...], bad_data: str | None
) -> tuple[Column, Column]:
    """(missing paths, mistyped paths) of `fields`, as array<string> Columns, each from one
    SQL text; `bad_data`: SQL text, true on a CloudEvents structured row whose `data` is not
    an object (its JSON paths unreachable)."""
    missing, mistyped = [], []
    if bad_data is not None:
        mistyped.append(_if(bad_data, "data (expected an object)"))
    spots = layout.spots(fields)
    struct_paths = {s.path for s in spots if s.field.type.kind is TypeKind.STRUCT}
    parents = {p: None for s in spots for p in layout.prefixes(s.path) if p not in struct_paths}
    for parent in parents:
        mistyped.append(_if(cols.not_an_object(parent), f"{parent} (expected an object)"))

    @functools.cache
    def reachable_below(path: str) -> str:
        """Whether the fields under `path` are reachable: every struct around them (and
        `path`, if a struct) is an object, no other parent is a non-object."""
        outer = layout.prefixes(path)
        here = reachable_below(outer[-1]) if outer else "true"
        if not outer and bad_data is not None:
            here = f"NOT {bad_data}"
        if path in struct_paths:
            return f"{here} AND {is_object(cols.sql('k', path))}"
        return f"{here} AND NOT {cols.not_an_object(path)}"

    for spot in spots:
        kind = cols.sql("k", spot.path)
        outer = layout.prefixes(spot.path)
        reachable = reachable_below(outer[-1]) if outer else "true"
        if not outer and bad_data is not None and layout.from_payload(spot.path):
            reachable = f"NOT {bad_data}"
        if spot.field.required:
            # A nullable required field must be there, and may be JSON null.
            absent = f"{kind} IS NULL" if spot.field.nullable else f"NOT {present(kind)}"
            missing.append(_if(f"{reachable} AND {absent}", spot.path))
        kind_of = spot.field.type.kind
        if kind_of in (TypeKind.STRUCT, TypeKind.ARRAY, TypeKind.MAP):
            null_elements = spot.field.items_nullable is not False
            value = cols.sql("v", spot.path)
            ok = conforms(value, kind, spot.field.type, null_elements=null_elements)
        else:
            ok = f"({cols.typed_sql(spot)} IS NOT NULL)"
        wanted = "a number or its text" if spot.field.number_text else expected(spot.field.type)
        text = f"{spot.path} (expected {wanted})"
        mistyped.append(_if(f"{present(kind)} AND NOT {ok}", text))
        if spot.field.nullable is False and not spot.field.required:
            mistyped.append(_if(f"{reachable} AND {kind} = 'VOID'", f"{text[:-1]}, got null)"))
    return _paths(missing), _paths(mistyped)


def _if(condition: str, text: str) -> str:
    return f"CASE WHEN {condition} THEN {literal(text)} END"


def _paths(items: list[str]) -> Column:
    return F.expr(f"array_compact(array({', '.join(items)}))") if items else _no_paths()


def _undeclared(keys: list[str]):
    return lambda key, _: ~key.isin(*keys)


def _prefixed(prefix: str):
    return lambda key, _: F.concat(F.lit(prefix), key)


def _unknown_fields(doc: Column, event: EventType) -> Column:
    """map<string,string>: each undeclared field's JSON path -> its value as JSON text."""
    found = []
    for container, declared in layout.containers(event).items():
        where = json_path(container) if container else "$"
        entries = F.try_variant_get(doc, where, "map<string,variant>")
        extra = F.map_filter(entries, _undeclared(sorted(declared)))
        extra = F.transform_keys(extra, _prefixed(f"{container}." if container else ""))
        as_text = F.transform_values(extra, lambda _, value: F.to_json(value))
        found.append(F.coalesce(as_text, _no_fields()))
    for spot in layout.spots(event.fields):
        if spot.field.closed_items and layout.from_payload(spot.path):
            found.append(_unknown_in_items(doc, spot))
    return F.map_concat(*found)


def _unknown_in_items(doc: Column, spot: Spot) -> Column:
    """map<string,string>: the undeclared fields of the objects of an array field whose
    items are closed (`Field.closed_items`), as `lines[0].extra` -> its value as JSON text."""
    declared = sorted({f.path.split(".")[0] for f in spot.field.type.element.fields})
    items = F.try_variant_get(doc, json_path(spot.path), "array<variant>")

    def extra(element: Column, index: Column) -> Column:
        entries = F.try_variant_get(element, "$", "map<string,variant>")
        undeclared = F.map_filter(entries, _undeclared(declared))
        prefix = F.concat(F.lit(f"{spot.path}["), index.cast("string"), F.lit("]."))
        named = F.transform_keys(undeclared, lambda key, _: F.concat(prefix, key))
        as_text = F.transform_values(named, lambda _, value: F.to_json(value))
        return F.coalesce(as_text, _no_fields())

    per_element = F.transform(items, extra)
    merged = F.aggregate(per_element, _no_fields(), lambda acc, one: F.map_concat(acc, one))
    return F.coalesce(merged, _no_fields())


def subject_regex(subject: str) -> str:
    """A NATS subject filter as a Java regular expression (`orders.*` -> `^orders\\.[^.]+\\z`)."""
    tokens = [
        "[^.]+" if token == "*" else ".+" if token == ">" else re.escape(token)
        for token in subject.split(".")
    ]
    return "^" + r"\.".join(tokens) + r"\z"


def _typed(cols: _Columns, spot: Spot) -> Column:
    """The field's typed value, wherever it is read from."""
    source, path = cols.sources[spot.path], spot.path
    if source.kind in (SourceKind.HEADER, SourceKind.SUBJECT):
        return F.expr(from_text(cols.sql("s", path), spot.field.type))
    structured = field_typed(cols.sql("v", path), cols.sql("k", path), spot.field)
    if source.kind is SourceKind.PAYLOAD:
        return F.expr(structured)
    as_text = from_text(cols.sql("s", path), spot.field.type)  # CloudEvents: binary mode
    return F.expr(f"CASE WHEN {name(BINARY)} THEN {as_text} ELSE {structured} END")


def _event_type(contract: Contract, cols: _Columns) -> Column:
    path = contract.envelope.event_type
    if path is not None:
        field = contract.event_types[0].field(path)
        return cols.typed(Spot(field, path, field.column))
    return event_type_by_subject(contract)


def event_type_by_subject(contract: Contract) -> Column:
    """The name of the first event type whose subject filters match the row's `subject`."""
    chosen = F.lit(None).cast("string")
    for event in reversed(contract.event_types):
        matches = [F.col("subject").rlike(subject_regex(s)) for s in event.subjects]
        hit = matches[0]
        for match in matches[1:]:
            hit = hit | match
        chosen = F.when(hit, F.lit(event.name)).otherwise(chosen)
    return chosen


def _by_type(contract: Contract, per_event: dict[str, Column], default: Column) -> Column:
    """`per_event[name]` on rows of event type `name`, `default` on the others."""
    first, *others = contract.event_types
    chosen = F.when(F.col(EVENT_TYPE) == first.name, per_event[first.name])
    for event in others:
        chosen = chosen.when(F.col(EVENT_TYPE) == event.name, per_event[event.name])
    return chosen.otherwise(default)


def _envelope_value(contract: Contract, cols: _Columns, path: str | None, sql_type: str) -> Column:
    """The typed value at the envelope's `path` (per the row's event type), as `sql_type`."""
    if path is None:
        return F.lit(None).cast(sql_type)
    per_event = {}
    for event in contract.event_types:
        spot = Spot(event.field(path), path, event.field(path).column)
        per_event[event.name] = cols.typed(spot).cast(sql_type)
    common = {f.path: f for f in layout.common_fields(contract)}.get(path)
    default = (
        cols.typed(Spot(common, path, common.column)).cast(sql_type)
        if common is not None
        else F.lit(None).cast(sql_type)
    )
    return _by_type(contract, per_event, default)


def parse_events(bronze: DataFrame, contract: Contract) -> DataFrame:
    """Parses bronze payloads into the checked frame of `contract`, without duplicates judged.

    Args:
        bronze: rows with at least stream, seq, subject, published and payload, and headers
            when the contract reads one (`pipelines.ingest.bronze.BRONZE_SCHEMA`).
        contract: the stream's event contract.

    Returns:
        The bronze columns plus the columns listed in `pipelines.silver.layout`: per event
        type a struct of its typed columns (null where missing or mistyped), the event
        type, id and time, the missing and mistyped paths, the payload problem and, for event
        types that keep or reject them, the undeclared fields.
    """
    cols = _Columns(contract)
    cloudevents = contract.envelope.preset is EnvelopePreset.CLOUDEVENTS
    text = F.col("payload").cast("string")
    wrapped = F.try_parse_json(F.concat(F.lit("["), text, F.lit("]")))
    frame = bronze.withColumns({"_wrapped": wrapped, "_text": text})
    doc, extra = (F.variant_get("_wrapped", f"$[{i}]", "variant") for i in (0, 1))
    frame = frame.withColumns({"_doc": doc, "_extra": extra})
    root, bad_data = "_doc", None
    if cloudevents:
        binary = header_text("ce-specversion").isNotNull()
        frame = frame.withColumns(
            {BINARY: binary, "_data": F.variant_get("_doc", "$['data']", "variant")}
        )
        frame = frame.withColumns(
            {
                "_data": F.when(F.col(BINARY), F.col("_doc")).otherwise(F.col("_data")),
                "_data_kind": F.schema_of_variant("_data"),
            }
        )
        data_kind = name("_data_kind")
        bad_data = f"(NOT {name(BINARY)} AND {present(data_kind)} AND NOT {is_object(data_kind)})"
        root = "_data"
    values, kinds = {}, {}
    for p, n in cols.paths.items():
        source, value = cols.sources[p], f"_v{n}"
        kind = F.expr(f"schema_of_variant({name(value)})")
        if source.kind is SourceKind.PAYLOAD:
            values[value] = F.expr(f"variant_get({name(root)}, {literal(json_path(p))}, 'variant')")
        else:
            values[f"_s{n}"] = source_text(source)
            text_kind = F.when(F.col(f"_s{n}").isNotNull(), F.lit("STRING"))
            if source.kind is SourceKind.CLOUDEVENTS:
                structured = F.variant_get("_doc", json_path(source.name), "variant")
                values[value] = F.when(~F.col(BINARY), structured)
                kind = F.when(F.col(BINARY), text_kind).otherwise(kind)
            else:
                kind = text_kind
        kinds[f"_k{n}"] = kind
    frame = frame.withColumns(
        {
            PAYLOAD_PROBLEM: payload_problem(F.col("_text"), F.col("_doc"), F.col("_extra")),
            **values,
        }
    )
    frame = frame.withColumns(kinds)
    typed_values = {}
    for event in contract.event_types:
        for spot in layout.spots(event.fields):
            typed_values[cols.types[cols.key(spot)]] = _typed(cols, spot)
    frame = frame.withColumns(typed_values)
    frame = frame.withColumn(EVENT_TYPE, _event_type(contract, cols))
    problems = {e.name: _problems(cols, e.fields, bad_data) for e in contract.event_types}
    common = _problems(cols, layout.common_fields(contract), bad_data)
    judged_text = F.col("_text")
    if cloudevents:  # the schema is the data's: the payload in binary mode
        judged_text = F.when(F.col(BINARY), judged_text).otherwise(F.to_json(F.col("_data")))
    added = {
        SCHEMA_ERRORS: schema_errors(contract, F.col(EVENT_TYPE), judged_text),
        EVENT_ID: _envelope_value(contract, cols, contract.envelope.event_id, "string"),
        EVENT_TIME: _envelope_value(contract, cols, contract.envelope.event_time, "timestamp"),
        MISSING_FIELDS: _by_type(contract, {k: v[0] for k, v in problems.items()}, common[0]),
        MISTYPED_FIELDS: _by_type(contract, {k: v[1] for k, v in problems.items()}, common[1]),
    }
    for event in contract.event_types:
        members = [cols.typed(Spot(f, f.path, f.column)).alias(f.column) for f in event.fields]
        added[layout.event_struct(contract, event.name)] = F.struct(*members)
        if event.unknown_fields in (UnknownFields.KEEP, UnknownFields.REJECT):
            added[layout.unknown_map(contract, event.name)] = _unknown_fields(F.col(root), event)
    frame = frame.withColumns(added)
    internal = ("_wrapped", "_text", "_doc", "_extra", BINARY, "_data", "_data_kind")
    return frame.drop(*internal, *cols.temporary())
