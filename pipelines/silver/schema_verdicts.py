"""Rule `schema_valid`: each message of an event type with a `SchemaCheck` judged by
jsonschema-rs, in Arrow batches on the executors (`pipelines.contract.schema_check`).

`schema_errors(contract, event_type, text)` is an array<string> Column: the validator's errors
for rows of such an event type (`/head_commit/timestamp: "x" is not a "date-time"`), empty
for the others and for text that is not JSON (rule `parseable_json` judges that). Each Python
worker compiles a schema once and keeps it for the next batches.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F

from pipelines.contract import Contract
from pipelines.contract.schema_check import SchemaCheck

MAX_ERRORS = 10  # per row; more are counted in one last entry
_COMPILED: dict[SchemaCheck, SchemaCheck] = {}  # per Python worker: the compiled checks


def _compiled(check: SchemaCheck) -> SchemaCheck:
    return _COMPILED.setdefault(check, check)


def _errors(check: SchemaCheck, text: str) -> list[str]:
    try:
        instance: Any = json.loads(text)
    except ValueError:
        return []  # not JSON: parseable_json's verdict
    errors = _compiled(check).errors(instance)
    if len(errors) > MAX_ERRORS:
        errors = [*errors[:MAX_ERRORS], f"and {len(errors) - MAX_ERRORS} more errors"]
    return errors


def _judge(checks: dict[str, SchemaCheck]):
    def judge(event_types: pa.Array, texts: pa.Array) -> pa.Array:
        found = [
            _errors(checks[kind], text) if kind in checks and text is not None else []
            for kind, text in zip(event_types.to_pylist(), texts.to_pylist(), strict=True)
        ]
        return pa.array(found, type=pa.list_(pa.string()))

    return judge


def schema_errors(contract: Contract, event_type: Column, text: Column) -> Column:
    """array<string>: the validator's errors of each row whose event type has a check.

    Args:
        contract: the stream's event contract.
        event_type: the row's event type.
        text: the JSON text the event type's schema describes (the payload, or a
            CloudEvent's data).
    """
    checks = {e.name: e.schema_check for e in contract.event_types if e.schema_check}
    if not checks:
        return F.array().cast("array<string>")
    judge = F.arrow_udf(_judge(checks), "array<string>")
    return judge(event_type, F.when(event_type.isin(*checks), text))
