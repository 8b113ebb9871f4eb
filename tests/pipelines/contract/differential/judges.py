"""Each judge's verdicts on a list of messages: True where the message is valid.

- the owning tools: pydantic's `model_validate_json` (strict, as the models declare) and
  zod's `safeParse` (one node run per schema, tests/interop/zod_schemas.mjs, which also
  prints the schema's JSON Schema);
- the `jsonschema` package: Draft 2020-12 with its format checker;
- the project's silver: the messages as bronze rows of one subject, parsed and routed by the
  contract read from the schema (`parse_events`, `route`), once for all messages: valid
  where the row lands in the event type's table, not in quarantine.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from jsonschema import Draft202012Validator
from pydantic import BaseModel, ValidationError
from pyspark.sql import SparkSession

from pipelines.contract import Contract
from pipelines.ingest.bronze import BRONZE_SCHEMA
from pipelines.silver import parse_events, route

INTEROP = Path(__file__).resolve().parents[3] / "interop"
ZOD_SCRIPT = INTEROP / "zod_schemas.mjs"
PUBLISHED = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.timezone.utc)
NOW = PUBLISHED + dt.timedelta(minutes=5)
SUBJECT = "orders.placed"


def zod_missing() -> str | None:
    """Why zod cannot run here (None: it can)."""
    if shutil.which("node") is None:
        return "the zod differential tests need node"
    if not (INTEROP / "node_modules" / "zod").is_dir():
        return "the zod differential tests need `npm ci --prefix tests/interop` (make test does it)"
    return None


def pydantic_verdicts(
    model: type[BaseModel], texts: Sequence[str], *, strict: bool | None = None
) -> list[bool]:
    """`model.model_validate_json` on each text (`strict`: None keeps the model's config)."""
    verdicts = []
    for text in texts:
        try:
            model.model_validate_json(text, strict=strict)
        except ValidationError:
            verdicts.append(False)
        else:
            verdicts.append(True)
    return verdicts


def jsonschema_verdicts(schema: dict, texts: Sequence[str]) -> list[bool]:
    """Draft 2020-12 with format checking; a text that is not JSON is invalid."""
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    verdicts = []
    for text in texts:
        try:
            value = json.loads(text)
        except ValueError:
            verdicts.append(False)
        else:
            verdicts.append(validator.is_valid(value))
    return verdicts


def zod_run(name: str, texts: Sequence[str]) -> tuple[dict, list[bool]]:
    """zod's JSON Schema of schema `name` and its `safeParse` verdicts, in one node run."""
    done = subprocess.run(
        ["node", str(ZOD_SCRIPT), name],
        input="".join(f"{text}\n" for text in texts),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"node {ZOD_SCRIPT.name} {name} failed: {done.stderr}")
    first, *lines = done.stdout.splitlines()
    if len(lines) != len(texts):
        raise RuntimeError(f"zod judged {len(lines)} of {len(texts)} messages: {done.stderr}")
    return json.loads(first), [json.loads(line)["valid"] for line in lines]


def silver_verdicts(
    spark: SparkSession, contract: Contract, texts: Sequence[str]
) -> tuple[list[bool], dict[int, list[str]]]:
    """Whether each text lands in the silver table of the contract's one event type, and
    the rules each quarantined one broke (by index), from one parse and route of all."""
    (event,) = contract.event_types
    rows = [
        (
            "ORDERS",
            seq,
            SUBJECT,
            PUBLISHED,
            PUBLISHED.date(),
            None,
            text.encode(),
            None,
            "differential",
            NOW,
        )
        for seq, text in enumerate(texts)
    ]
    bronze = spark.createDataFrame(rows, BRONZE_SCHEMA)
    checked = parse_events(bronze, contract).cache()
    try:
        batch = route(checked, contract, run_id="differential", now=NOW)
        kept = {row.seq for row in batch.tables[event.name].select("seq").collect()}
        broken = {
            row.seq: list(row.failed_rules)
            for row in batch.quarantine.select("seq", "failed_rules").collect()
        }
    finally:
        checked.unpersist()
    if kept & set(broken) or len(kept) + len(broken) != len(texts):
        raise AssertionError("every bronze row must land exactly once, in silver or quarantine")
    return [seq in kept for seq in range(len(texts))], broken
