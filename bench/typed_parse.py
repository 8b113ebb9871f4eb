"""A lever measured before it is built (issues 50, 52): typed event structs from one `from_json`
per event type, with the row's verdict from jsonschema-rs, against `parse_events`.

`parse_events` types every JSON path the contract names with Spark columns of its own (a
value, its JSON type, the typed value, then the missing and mistyped paths): thousands of
columns for a large contract, whose plan and generated code grow with them. The candidate
builds each event type's struct with one `from_json` (the JSON keys' tree of the contract's
fields, timestamps read with the contract's ISO format, epoch ones as decimals) and judges the
row with jsonschema-rs in the Python workers (`pipelines.silver.schema_verdicts`, as silver
already does for JSON Schema contracts). It does not yet give the missing and mistyped paths
or the undeclared fields, so it measures the lever, not a replacement.

Two cases, each in one local session, the variants alternating (a warm-up round first):

- `--case octokit`: the corpus's GitHub webhook contract (15 event types, 2,118 paths),
  `--rows` of its example payloads (default 500);
- `--case file-trash`: the file trash contract with each event type's JSON Schema
  (`payload_schema`) as its check, `generate_event_mix` events (default 100,000).

Each variant is timed as the stage times its parse: building the frame (plan), then its
`localCheckpoint` (run). `--agree` then compares, on the rows `parse_events` finds neither
missing nor mistyped fields in, each event type's struct from both as decoded JSON (the
candidate's cast by position to the contract's column names first), and prints the rows
that differ, and of them those equal once JSON nulls are dropped (`from_json` keeps a JSON
null inside a VARIANT member as a variant null, `parse_events` as SQL NULL).

    .venv/bin/python bench/typed_parse.py --case octokit --agree
    .venv/bin/python bench/typed_parse.py --case file-trash --rows 100000
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the corpus lives in tests/

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from schema_verdicts import PUBLISHED, _bronze, schema_files

from pipelines.contract import Contract, TimestampEncoding, TypeKind, read_json_schemas
from pipelines.contract.schema_check import SchemaCheck
from pipelines.file_trash.events import FileDeletedEvent, FilePlacedInTrashEvent, payload_schema
from pipelines.file_trash.generator import generate_event_mix
from pipelines.file_trash.topology import file_trash_contract
from pipelines.silver import layout, parse_events
from pipelines.silver.layout import MISSING_FIELDS, MISTYPED_FIELDS
from pipelines.silver.parse import event_type_by_subject
from pipelines.silver.schema_verdicts import schema_errors
from pipelines.silver.variant_types import DATE_FORMAT, ISO_TIMESTAMP_FORMAT, name
from resources.spark import SparkResource
from tests.pipelines.contract.corpus import corpus_events
from tests.pipelines.silver.test_corpus_verdicts import subject


def _tree(fields) -> dict:
    """The fields (payload ones) as a tree of their JSON keys."""
    tree: dict = {}
    for field in fields:
        if field.path.startswith(("header:", "subject:")):
            continue
        *outer, last = field.path.split(".")
        node = tree
        for key in outer:
            node = node.setdefault(key, {})
        node[last] = field
    return tree


def _ddl(node) -> str:
    if isinstance(node, dict):
        return "struct<" + ",".join(f"{name(k)}:{_ddl(v)}" for k, v in node.items()) + ">"
    return _type(node.type)


def _type(field_type) -> str:
    kind = field_type.kind
    if kind is TypeKind.STRUCT:
        return _ddl(_tree(field_type.fields))
    if kind is TypeKind.ARRAY:
        return f"array<{_type(field_type.element)}>"
    if kind is TypeKind.MAP:
        return f"map<string,{_type(field_type.element)}>"
    if kind is TypeKind.TIMESTAMP and field_type.encoding is not TimestampEncoding.ISO8601:
        return "decimal(38,6)"
    return field_type.spark_sql


def _event_struct(event, parsed: Column) -> Column:
    members = []
    for field in event.fields:
        value = parsed
        for key in field.path.split("."):
            value = value.getField(key)
        members.append(value.alias(field.column))
    return F.struct(*members)


def candidate(bronze: DataFrame, contract: Contract) -> DataFrame:
    """Each event type's struct by one `from_json`, and jsonschema-rs's errors."""
    options = {"timestampFormat": ISO_TIMESTAMP_FORMAT, "dateFormat": DATE_FORMAT}
    event_type = event_type_by_subject(contract)
    frame = bronze.withColumns({"_text": F.col("payload").cast("string"), "_type": event_type})
    parsed = {
        f"_p{n}": F.when(
            F.col("_type") == e.name,
            F.from_json(F.col("_text"), _ddl(_tree(e.fields)), options),
        )
        for n, e in enumerate(contract.event_types)
    }
    frame = frame.withColumns(
        {**parsed, "_errors": schema_errors(contract, F.col("_type"), F.col("_text"))}
    )
    structs = {
        f"_s{n}": _event_struct(e, F.col(f"_p{n}")) for n, e in enumerate(contract.event_types)
    }
    return frame.withColumns(structs).drop("_text", *parsed)


def _octokit(spark, rows: int) -> tuple[Contract, DataFrame]:
    events = [e for e in corpus_events() if e.source.startswith("npm @octokit/webhooks-schemas")]
    subjects = {e.name: [subject(e.name)] for e in events}
    contract = read_json_schemas(schema_files(events), subjects=subjects)
    examples = [(subject(e.name), x) for e in events for x in e.examples]
    return contract, _bronze(spark, [examples[n % len(examples)] for n in range(rows)])


def _file_trash(spark, rows: int) -> tuple[Contract, DataFrame]:
    contract = file_trash_contract()
    classes = {c.__name__: c for c in (FileDeletedEvent, FilePlacedInTrashEvent)}
    checked = tuple(
        dataclasses.replace(e, schema_check=SchemaCheck.of(payload_schema(classes[e.name]), (), []))
        for e in contract.event_types
    )
    events = generate_event_mix(rows, bad_share=0.05, now=PUBLISHED, seed=1)
    messages = [(e.subject, e.payload.decode("utf-8", "replace")) for e in events]
    return dataclasses.replace(contract, event_types=checked), _bronze(spark, messages)


def _timed(make) -> tuple[float, float]:
    start = time.perf_counter()
    frame = make()
    planned = time.perf_counter()
    frame.localCheckpoint()
    return planned - start, time.perf_counter() - planned


def _without_nulls(value):
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _agreement(bronze: DataFrame, contract: Contract) -> None:
    old = parse_events(bronze, contract).localCheckpoint()
    new = candidate(bronze, contract).localCheckpoint()
    good = (F.size(MISSING_FIELDS) == 0) & (F.size(MISTYPED_FIELDS) == 0)
    for n, event in enumerate(contract.event_types):
        column = layout.event_struct(contract, event.name)
        mine = old.where(good).select("seq", F.to_json(column))
        # Nested members keep their JSON keys in the candidate (`+1`, `_links`): cast by
        # position to the contract's column names.
        typed = F.col(f"_s{n}").cast(old.schema[column].dataType)
        theirs = new.select("seq", F.to_json(typed)).where(F.col("_type") == event.name)
        pairs = mine.join(theirs, "seq").collect()
        decoded = [(json.loads(r[1]), json.loads(r[2] or "null")) for r in pairs]
        differ = [(a, b) for a, b in decoded if a != b]
        only_nulls = sum(_without_nulls(a) == _without_nulls(b) for a, b in differ)
        print(
            f"  {event.name}: {len(pairs)} rows, {len(differ)} differ, "
            f"{only_nulls} of them only in JSON nulls"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=("octokit", "file-trash"), default="octokit")
    parser.add_argument("--rows", type=int)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--agree", action="store_true", help="compare the two variants' structs")
    args = parser.parse_args()
    spark = SparkResource(ui_enabled=False, shuffle_partitions=2).get_session()
    if args.case == "octokit":
        contract, bronze = _octokit(spark, args.rows or 500)
    else:
        contract, bronze = _file_trash(spark, args.rows or 100_000)
    rows = bronze.count()
    variants = {"parse_events": parse_events, "from_json + jsonschema-rs": candidate}
    totals: dict[str, list[float]] = {label: [] for label in variants}
    for run in range(args.runs + 1):  # run 0 warms up
        for label, make in variants.items():
            plan, ran = _timed(lambda make=make: make(bronze, contract))
            print(f"run {run}, {label}: plan {plan:.2f} s, run {ran:.2f} s", flush=True)
            if run:
                totals[label].append(plan + ran)
    old, new = (min(totals[label]) for label in variants)
    print(
        f"{args.case}, {rows:,} rows, the best run of each: parse_events {old:.2f} s, "
        f"candidate {new:.2f} s ({old / new:.1f}x)"
    )
    if args.agree:
        _agreement(bronze, contract)
    spark.stop()


if __name__ == "__main__":
    main()
