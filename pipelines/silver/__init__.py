"""Silver, generated from a stream's event contract: no Python per stream.

    checked = parse_events(bronze, contract)                 # VARIANT parse, typed per contract
    batch = route(checked, contract, existing, run_id=..., now=...)
    batch.tables["OrderPlaced"], batch.quarantine, batch.candidates

- `parse_events`: bronze payloads -> the checked frame (typed fields, missing and mistyped
  paths, payload problems, undeclared fields); `pipelines.silver.layout` lists its columns.
- `violations`, `failed_rules`, `failure_error`: the contract's rules as Spark Columns.
- `event_keys`, `colliding_keys`, `mark_duplicates`: `event_id_unique` across runs.
- `route`: one silver frame per event type, the quarantine, the candidates for checks.
- `silver_schema`, `QUARANTINE_SCHEMA`: Delta schemas with column comments (Dagster's
  `dagster/column_schema` of them is `assets/table_schema.py`'s).

See docs/silver.md.
"""

from pipelines.silver.duplicates import colliding_keys, event_keys, mark_duplicates
from pipelines.silver.parse import parse_events, subject_regex
from pipelines.silver.route import QUARANTINED, SilverBatch, route, rule_failures
from pipelines.silver.rule_columns import (
    failed_rules,
    failure_error,
    silver_rules,
    spark_pattern,
    violations,
)
from pipelines.silver.schema import QUARANTINE_SCHEMA, silver_schema, spark_type

__all__ = [
    "QUARANTINED",
    "QUARANTINE_SCHEMA",
    "SilverBatch",
    "colliding_keys",
    "event_keys",
    "failed_rules",
    "failure_error",
    "mark_duplicates",
    "parse_events",
    "route",
    "rule_failures",
    "silver_rules",
    "silver_schema",
    "spark_pattern",
    "spark_type",
    "subject_regex",
    "violations",
]
