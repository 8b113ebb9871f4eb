"""Rule `schema_valid`: each message of an event type with a `SchemaCheck` judged by
jsonschema-rs, in Arrow batches on the executors (`pipelines.contract.schema_check`).

`schema_errors(contract, event_type, text)` is an array<struct<at, message>> Column: the
validator's errors for rows of such an event type, each the failing keyword's place in the
schema (`at`: `/definitions/commit/properties/timestamp/format`) and the message
(`/head_commit/timestamp: "x" is not a "date-time"`), empty for the others and for text that
is not JSON (rule `parseable_json` judges that). `schema_failures` counts a batch's rows per
failing keyword, for `schema_valid`'s asset check, and `rule_examples` finds the first row
breaking each rule, for every rule's check. Each Python worker compiles a schema once and
keeps it for the next batches.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.contract import Contract
from pipelines.contract.schema_check import SchemaCheck
from pipelines.silver.layout import EVENT_TYPE, SCHEMA_ERRORS
from pipelines.silver.rule_columns import failure_error

MAX_ERRORS = 10  # per row; more are counted in one last entry (its `at` null)
SCHEMA_ERROR = "array<struct<at:string,message:string>>"
# What `schema_failures` keeps, most rows first: it is recorded with the watermark (a KV value,
# at most NATS's max_payload, 1 MiB by default), so it stays under 100 KB whatever fails.
MOST_FAILED = 50  # keywords per event type
MOST_FAILED_IN_ALL = 200  # keywords of every event type together
EXAMPLE = 160  # characters of a keyword's place and of its example message
_COMPILED: dict[SchemaCheck, SchemaCheck] = {}  # per Python worker: the compiled checks


def _compiled(check: SchemaCheck) -> SchemaCheck:
    return _COMPILED.setdefault(check, check)


def _errors(check: SchemaCheck, text: str) -> list[dict[str, str | None]]:
    try:
        instance: Any = json.loads(text)
    except ValueError:
        return []  # not JSON: parseable_json's verdict
    errors = [{"at": at, "message": message} for at, message in _compiled(check).errors(instance)]
    if len(errors) > MAX_ERRORS:
        more = {"at": None, "message": f"and {len(errors) - MAX_ERRORS} more errors"}
        errors = [*errors[:MAX_ERRORS], more]
    return errors


def _judge(checks: dict[str, SchemaCheck]):
    def judge(event_types: pa.Array, texts: pa.Array) -> pa.Array:
        found = [
            _errors(checks[kind], text) if kind in checks and text is not None else []
            for kind, text in zip(event_types.to_pylist(), texts.to_pylist(), strict=True)
        ]
        error = pa.struct([("at", pa.string()), ("message", pa.string())])
        return pa.array(found, type=pa.list_(error))

    return judge


def schema_errors(contract: Contract, event_type: Column, text: Column) -> Column:
    """`SCHEMA_ERROR`: the validator's errors of each row whose event type has a check.

    Args:
        contract: the stream's event contract.
        event_type: the row's event type.
        text: the JSON text the event type's schema describes (the payload, or a
            CloudEvent's data).
    """
    checks = {e.name: e.schema_check for e in contract.event_types if e.schema_check}
    if not checks:
        return F.array().cast(SCHEMA_ERROR)
    judge = F.arrow_udf(_judge(checks), SCHEMA_ERROR)
    return judge(event_type, F.when(event_type.isin(*checks), text))


def schema_failures(judged: DataFrame, contract: Contract) -> dict[str, dict[str, dict]]:
    """Per event type with a check, its batch's rows failing each keyword (a row counted once
    per keyword, among its first `MAX_ERRORS` errors), each with one of its messages: `{event
    type: {at: {"rows": n, "example": message}}}`, most rows first, at most `MOST_FAILED`
    per event type and `MOST_FAILED_IN_ALL` in all, the place (its end kept) and the message
    (its start kept) cut to `EXAMPLE` characters; {} without checks (no Spark job then).

    Args:
        judged: a frame of `parse_events`' columns (`SilverBatch.judged`).
        contract: the stream's event contract.
    """
    if not any(e.schema_check for e in contract.event_types):
        return {}
    failed = F.explode(F.filter(F.col(SCHEMA_ERRORS), lambda e: e["at"].isNotNull()))
    counted = (
        judged.where(F.size(SCHEMA_ERRORS) > 0)
        .select(F.col(EVENT_TYPE).alias("event_type"), "seq", failed.alias("error"))
        .groupBy("event_type", F.col("error.at").alias("at"))
        .agg(F.count_distinct("seq").alias("rows"), F.min("error.message").alias("example"))
        .collect()
    )
    found: dict[str, dict[str, dict]] = {}
    for row in sorted(counted, key=lambda r: (-r["rows"], r["at"]))[:MOST_FAILED_IN_ALL]:
        kept = found.setdefault(row["event_type"], {})
        if len(kept) < MOST_FAILED:
            # A place keeps its end (the keyword); two places alike there: the first, most
            # rows. A message keeps its start (a oneOf's holds the whole value).
            place = row["at"] if len(row["at"]) <= EXAMPLE else "..." + row["at"][3 - EXAMPLE :]
            kept.setdefault(place, {"rows": int(row["rows"]), "example": _cut(row["example"])})
    return found


def rule_examples(judged: DataFrame, contract: Contract) -> dict[str, dict[str, dict]]:
    """Per event type (its name as the row says it, "" for none) and rule that a row of the
    batch broke, the first such row (lowest seq): `{event type: {rule: {"seq": n, "example":
    error}}}`, the row's `error` (every rule it broke, with details, as the quarantine says
    it) cut to `EXAMPLE` characters; at most `MOST_FAILED_IN_ALL` in all, those whose first
    row comes first. One Spark job over the rows that broke a rule.

    Args:
        judged: a frame of `judge`'s columns (`SilverBatch.judged`).
        contract: the stream's event contract.
    """
    broken = judged.where(F.size("failed_rules") > 0).select(
        F.coalesce(F.col(EVENT_TYPE), F.lit("")).alias("event_type"),
        "seq",
        F.explode("failed_rules").alias("rule"),
        failure_error(contract).alias("error"),
    )
    first = broken.groupBy("event_type", "rule").agg(
        F.min_by(F.struct("seq", "error"), "seq").alias("row")
    )
    found: dict[str, dict[str, dict]] = {}
    for r in sorted(first.collect(), key=lambda r: (r["row"]["seq"], r["rule"]))[
        :MOST_FAILED_IN_ALL
    ]:
        example = {"seq": int(r["row"]["seq"]), "example": _cut(r["row"]["error"] or "")}
        found.setdefault(r["event_type"], {})[r["rule"]] = example
    return found


def _cut(text: str) -> str:
    return text if len(text) <= EXAMPLE else text[: EXAMPLE - 3] + "..."
