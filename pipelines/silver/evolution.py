"""A silver table against its contract: every difference classified, the allowed ones applied.

Streams live for years and their contracts change; a silver table written under last
month's contract must follow this month's without losing, narrowing or rounding a value.
`compare_table` lists how a live table differs from what the contract wants, column by
column (nested struct members, array elements and map values included), as `ColumnChange`s:

- additive: a new column (a new field, `unknown_fields: keep` turned on, a new derived
  column). Applied with `ALTER TABLE ... ADD COLUMNS`, placed where the contract puts it;
  the rows written before hold null.
- widening: int -> long, int -> double, int -> decimal(p,s) with p-s >= 10, long ->
  decimal(p,s) with p-s >= 20, decimal(p,s) -> decimal(p+k1,s+k2) with k1 >= k2 >= 0.
  Applied with `ALTER COLUMN ... TYPE` under Delta's type widening
  (`delta.enableTypeWidening`): no file rewritten, no value changed.
- rename: a field's `column:` changed (the table records each JSON path's column).
  Applied with `RENAME COLUMN` under Delta's column mapping (`delta.columnMapping.mode`).
- breaking: a type narrowed or changed, a column removed, a field made required while rows
  of the table lack it. Never applied: `SchemaChangeError` names each and the commands that
  resolve it.

A new event type is a new table (created by the stage); a table that does not exist yet has
no differences.

The policy (`OnSchemaChange`, a stream's or an event type's `on_schema_change`) says what a
run does with them before its first write: `evolve` (the default) applies additive, widening
and rename changes through Delta's own mechanisms and refuses breaking ones; `freeze` refuses
any difference. The columns the stage itself adds (`contract_version`) are added under
either policy: they are the pipeline's, not the contract's.

What the contract wanted when the table was last written is kept in the table's properties
(`jsl.contract.*`): its fingerprint, each field's JSON path -> column (how a rename is told
from a removed column and an added one) and the required columns (how "made required" is
found). A table written before these were recorded shows renames as a removal plus an
addition (breaking); the first run records them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql.types import (
    ArrayType,
    DataType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StructField,
    StructType,
)

from pipelines.contract import EventType
from pipelines.lakehouse.delta_tables import (
    CHANGE_DATA_FEED,
    delta_path,
    live_table,
    table_version,
)
from resources.backports import StrEnum

FINGERPRINT_PROPERTY = "jsl.contract.fingerprint"
COLUMNS_PROPERTY = "jsl.contract.columns"  # JSON {json path: column} of the event's fields
REQUIRED_PROPERTY = "jsl.contract.required"  # JSON [column] of its required fields
TYPE_WIDENING = {"delta.enableTypeWidening": "true"}
COLUMN_MAPPING = {"delta.columnMapping.mode": "name"}
# Columns the stage adds to every table it writes: added under any policy.
SYSTEM_COLUMNS = frozenset({"contract_version"})


class OnSchemaChange(StrEnum):
    """What a run does when the contract and a live table differ (as dlt's schema contracts)."""

    EVOLVE = "evolve"  # apply additive, widening and rename changes; refuse breaking ones
    FREEZE = "freeze"  # refuse any difference, before the first write


class ChangeKind(StrEnum):
    """How a difference between the contract and a live table can be resolved."""

    ADDITIVE = "additive"
    WIDENING = "widening"
    RENAME = "rename"
    BREAKING = "breaking"


_HOW = {
    ChangeKind.ADDITIVE: "ADD COLUMNS (rows written before hold null)",
    ChangeKind.WIDENING: "ALTER COLUMN TYPE (Delta type widening: no value changes)",
    ChangeKind.RENAME: "RENAME COLUMN (Delta column mapping: values stay)",
}


@dataclass(frozen=True)
class ColumnChange:
    """One difference between a live table and the contract.

    Attributes:
        table: the table's name (`silver/orders_placed`).
        column: the column's dotted path (`amount`, `shipping.city`, `tags.element`).
        kind: additive, widening, rename or breaking.
        old: the live type (for a rename: the old column's name); None for a new column.
        new: the contract's type (for a rename: the new name); None for a removed column.
        why: what changed, in a few words.
        after: additive only: the column it goes after (None: first).
        event: the event type whose table it is (None: the quarantine).
    """

    table: str
    column: str
    kind: ChangeKind
    old: str | None
    new: str | None
    why: str
    after: str | None = None
    event: str | None = None

    @property
    def system(self) -> bool:
        """Whether the stage's own column changes (added whatever the policy)."""
        return self.column in SYSTEM_COLUMNS

    def describe(self, policy: OnSchemaChange = OnSchemaChange.EVOLVE, stream: str = "") -> str:
        """One line: table, column, old and new, the kind and what the run does about it
        (the commands it names use `stream` when given)."""
        if self.kind is ChangeKind.BREAKING:
            action = "refused: " + _resolve_breaking(self, stream or "<stream>")
        elif policy is OnSchemaChange.FREEZE and not self.system:
            action = "refused (on_schema_change: freeze): set on_schema_change: evolve to apply it"
        else:
            action = "applied by the next run: " + _HOW[self.kind]
        return (
            f"{self.table}: column {self.column!r} {self.old or '(none)'} -> "
            f"{self.new or '(none)'} ({self.kind}: {self.why}); {action}"
        )


def _resolve_breaking(change: ColumnChange, stream: str) -> str:
    rebuild = f"jsl silver rebuild --stream {stream} --event-type {change.event or '<type>'}"
    if change.new == "required":
        return (
            f"`{rebuild}` judges the table's rows by the new contract (those without a value "
            "go to quarantine), then runs go on; or declare the field optional again"
        )
    return (
        "restore the old declaration, or give the event type a new `table:` and fill it from "
        f"bronze under the new contract with `{rebuild}` (rows that break it go to "
        "quarantine; the old table stays as it is, for you to drop)"
    )


class SchemaChangeError(Exception):
    """The contract differs from a live table in a way the policy does not apply.

    Attributes:
        changes: every difference that stops the run.
    """

    def __init__(
        self, changes: Sequence[ColumnChange], policy: OnSchemaChange, stream: str = ""
    ) -> None:
        self.changes = tuple(changes)
        self.policy = policy
        self.stream = stream
        lines = "\n".join(f"  - {c.describe(policy, stream)}" for c in self.changes)
        whose = f"stream {stream}'s contract" if stream else "the contract"
        super().__init__(
            f"{whose} no longer fits {len(self.changes)} column(s) of its silver tables; "
            f"nothing was written:\n{lines}\n"
            "`jsl contract diff` lists every difference; docs/contract-changes.md says what "
            "each kind of change needs"
        )


def _name(data_type: DataType) -> str:
    return data_type.simpleString()


def widens(old: DataType, new: DataType) -> bool:
    """Whether Delta's type widening turns `old` into `new` holding every value exactly."""
    if isinstance(old, IntegerType):
        if isinstance(new, LongType | DoubleType):
            return True
        return isinstance(new, DecimalType) and new.precision - new.scale >= 10
    if isinstance(old, LongType):
        return isinstance(new, DecimalType) and new.precision - new.scale >= 20
    if isinstance(old, DecimalType) and isinstance(new, DecimalType):
        return new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale
    return False


def _by_name(struct: StructType) -> dict[str, StructField]:
    return {f.name.lower(): f for f in struct.fields}


def _compare_types(table: str, path: str, old: DataType, new: DataType) -> list[ColumnChange]:
    if isinstance(old, StructType) and isinstance(new, StructType):
        return _compare_structs(table, f"{path}.", old, new, {})
    if isinstance(old, ArrayType) and isinstance(new, ArrayType):
        return _compare_types(table, f"{path}.element", old.elementType, new.elementType)
    if isinstance(old, MapType) and isinstance(new, MapType):
        if _name(old.keyType) != _name(new.keyType):
            return [_breaking(table, path, old, new, "map keys of another type")]
        return _compare_types(table, f"{path}.value", old.valueType, new.valueType)
    if _name(old) == _name(new):
        return []
    if widens(old, new):
        why = f"{_name(old)} widened to {_name(new)}"
        return [ColumnChange(table, path, ChangeKind.WIDENING, _name(old), _name(new), why)]
    return [_breaking(table, path, old, new, "type narrowed or changed: old values may not fit")]


def _breaking(table: str, path: str, old: DataType, new: DataType, why: str) -> ColumnChange:
    return ColumnChange(table, path, ChangeKind.BREAKING, _name(old), _name(new), why)


def _compare_structs(
    table: str,
    prefix: str,
    live: StructType,
    wanted: StructType,
    renamed_from: Mapping[str, str],
) -> list[ColumnChange]:
    """Differences of the members of two structs (or two tables' columns, `prefix` empty).

    `renamed_from`: wanted column (lower case) -> the live column it was called before.
    """
    have = _by_name(live)
    changes: list[ColumnChange] = []
    kept: set[str] = set()
    previous: str | None = None
    for f in wanted.fields:
        column = f"{prefix}{f.name}"
        key = f.name.lower()
        if key in have:
            kept.add(key)
            changes += _compare_types(table, column, have[key].dataType, f.dataType)
        elif key in renamed_from and renamed_from[key].lower() in have:
            old = have[renamed_from[key].lower()]
            kept.add(old.name.lower())
            why = f"the field's column was {old.name!r}"
            changes.append(ColumnChange(table, column, ChangeKind.RENAME, old.name, f.name, why))
            changes += _compare_types(table, column, old.dataType, f.dataType)
        else:
            why = "a new column" if prefix == "" else "a new struct member"
            changes.append(
                ColumnChange(
                    table, column, ChangeKind.ADDITIVE, None, _name(f.dataType), why, previous
                )
            )
        previous = column
    for f in live.fields:
        if f.name.lower() not in kept:
            changes.append(
                ColumnChange(
                    table,
                    f"{prefix}{f.name}",
                    ChangeKind.BREAKING,
                    _name(f.dataType),
                    None,
                    "no longer in the contract: new rows could not fill it",
                )
            )
    return changes


def field_columns(event: EventType) -> dict[str, str]:
    """Each top-level field's JSON path -> its column (what a table records)."""
    return {f.path: f.column for f in event.fields}


def required_columns(event: EventType) -> list[str]:
    """The columns of the event type's required top-level fields."""
    return [f.column for f in event.fields if f.required]


def contract_properties(event: EventType, fingerprint: str) -> dict[str, str]:
    """The table properties that record what the contract wanted (`jsl.contract.*`)."""
    return {
        FINGERPRINT_PROPERTY: fingerprint,
        COLUMNS_PROPERTY: json.dumps(field_columns(event), sort_keys=True),
        REQUIRED_PROPERTY: json.dumps(sorted(required_columns(event))),
    }


def recorded_property(properties: Mapping[str, str], key: str, default):
    """The JSON value a table property (`jsl.contract.*`) records, else `default`."""
    try:
        return json.loads(properties[key])
    except (KeyError, TypeError, ValueError):
        return default


def compare_table(
    table: str,
    live: StructType,
    wanted: StructType,
    *,
    event: EventType | None = None,
    properties: Mapping[str, str] | None = None,
    rows_lacking: Mapping[str, int] | None = None,
) -> list[ColumnChange]:
    """Every difference between a live table's schema and the one the contract wants.

    Args:
        table: the table's name, for the report.
        live: the table's schema now.
        wanted: the schema the contract gives it (`silver_schema`, `QUARANTINE_SCHEMA`).
        event: the event type (None for the quarantine): its fields' columns tell renames.
        properties: the table's properties (`jsl.contract.*` recorded by the last run).
        rows_lacking: newly required column -> rows of the table without a value (from
            `newly_required` and a count); a column with rows lacking it is breaking.

    Returns:
        The differences, in the contract's column order, removed columns last.
    """
    properties = properties or {}
    renamed_from: dict[str, str] = {}
    if event is not None:
        recorded = recorded_property(properties, COLUMNS_PROPERTY, {})
        for f in event.fields:
            old = recorded.get(f.path) if isinstance(recorded, dict) else None
            if isinstance(old, str) and old.lower() != f.column.lower():
                renamed_from[f.column.lower()] = old
    changes = _compare_structs(table, "", live, wanted, renamed_from)
    if event is not None:
        changes = [dataclasses.replace(c, event=event.name) for c in changes]
    for column, lacking in (rows_lacking or {}).items():
        if lacking:
            changes.append(
                ColumnChange(
                    table,
                    column,
                    ChangeKind.BREAKING,
                    "optional",
                    "required",
                    f"made required, but {lacking} row(s) of the table have no value",
                    event=None if event is None else event.name,
                )
            )
    return changes


def newly_required(event: EventType, properties: Mapping[str, str], live: StructType) -> list[str]:
    """The columns the event type now requires that the table did not (and that it has):
    the rows already in the table may lack them. None when the table recorded nothing."""
    recorded = recorded_property(properties, REQUIRED_PROPERTY, None)
    if not isinstance(recorded, list):
        return []
    had = {c.lower() for c in recorded}
    present = {f.name.lower() for f in live.fields}
    return [c for c in required_columns(event) if c.lower() not in had and c.lower() in present]


def refused(changes: Iterable[ColumnChange], policy: OnSchemaChange) -> list[ColumnChange]:
    """The changes `policy` does not apply."""
    return [
        c
        for c in changes
        if c.kind is ChangeKind.BREAKING or (policy is OnSchemaChange.FREEZE and not c.system)
    ]


def _quoted(path: str) -> str:
    return ".".join(f"`{part.replace('`', '``')}`" for part in path.split("."))


def _sql_text(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _comment(wanted: StructType, column: str) -> str:
    top = column.split(".")[0].lower()
    for f in wanted.fields:
        if f.name.lower() == top and "." not in column and f.metadata.get("comment"):
            return f" COMMENT {_sql_text(f.metadata['comment'])}"
    return ""


def _ddl_type(data_type: DataType) -> str:
    if isinstance(data_type, StructType):
        return "struct<" + ", ".join(_ddl_field(f, ": ") for f in data_type.fields) + ">"
    if isinstance(data_type, ArrayType):
        return f"array<{_ddl_type(data_type.elementType)}>"
    if isinstance(data_type, MapType):
        return f"map<{_ddl_type(data_type.keyType)}, {_ddl_type(data_type.valueType)}>"
    return data_type.simpleString()


def _ddl_field(f: StructField, colon: str = " ") -> str:
    comment = f.metadata.get("comment")
    text = f" COMMENT {_sql_text(comment)}" if comment else ""
    return f"`{f.name.replace('`', '``')}`{colon}{_ddl_type(f.dataType)}{text}"


def create_statement(path: str, schema: StructType, properties: Mapping[str, str]) -> str:
    """`CREATE TABLE IF NOT EXISTS` of an empty Delta table of `schema` (column comments
    kept, nested ones too) with `properties`, in one commit."""
    columns = ", ".join(_ddl_field(f) for f in schema.fields)
    pairs = ", ".join(f"{_sql_text(k)} = {_sql_text(v)}" for k, v in properties.items())
    return (
        f"CREATE TABLE IF NOT EXISTS {delta_path(path)} ({columns}) USING DELTA "
        f"TBLPROPERTIES ({pairs})"
    )


def alter_statements(path: str, changes: Sequence[ColumnChange], wanted: StructType) -> list[str]:
    """The SQL that applies additive, widening and rename `changes` to the table at `path`,
    in order: the table features first, then renames, widenings and additions."""
    table = delta_path(path)
    kinds = {c.kind for c in changes}
    features = {}
    if ChangeKind.WIDENING in kinds:
        features.update(TYPE_WIDENING)
    if ChangeKind.RENAME in kinds:
        features.update(COLUMN_MAPPING)
    statements = []
    if features:
        pairs = ", ".join(f"{_sql_text(k)} = {_sql_text(v)}" for k, v in features.items())
        statements.append(f"ALTER TABLE {table} SET TBLPROPERTIES ({pairs})")
    for c in changes:
        if c.kind is ChangeKind.RENAME:
            parent = c.column.rsplit(".", 1)[0] + "." if "." in c.column else ""
            statements.append(
                f"ALTER TABLE {table} RENAME COLUMN {_quoted(parent + c.old)} TO `{c.new}`"
            )
    for c in changes:
        if c.kind is ChangeKind.WIDENING:
            statements.append(f"ALTER TABLE {table} ALTER COLUMN {_quoted(c.column)} TYPE {c.new}")
    for c in changes:
        if c.kind is ChangeKind.ADDITIVE:
            where = f" AFTER {_quoted(c.after.split('.')[-1])}" if c.after else " FIRST"
            statements.append(
                f"ALTER TABLE {table} ADD COLUMNS ({_quoted(c.column)} {c.new}"
                f"{_comment(wanted, c.column)}{where})"
            )
    return statements


@dataclass(frozen=True)
class TablePlan:
    """One table the stage writes: where it is and what the contract wants of it."""

    name: str  # `silver/orders_placed`, `quarantine/orders`
    path: str
    schema: StructType
    event: EventType | None  # None: the quarantine
    fingerprint: str
    policy: OnSchemaChange = OnSchemaChange.EVOLVE


def _rows_lacking(spark: SparkSession, path: str, columns: Sequence[str]) -> dict[str, int]:
    if not columns:
        return {}
    counts = ", ".join(f"count_if({_quoted(c)} IS NULL) AS `{n}`" for n, c in enumerate(columns))
    row = spark.sql(f"SELECT {counts} FROM {delta_path(path)}").first()
    return {c: int(row[str(n)] or 0) for n, c in enumerate(columns)}


def plan_changes(
    spark: SparkSession, plan: TablePlan, live: StructType, properties: Mapping[str, str]
) -> list[ColumnChange]:
    """Every difference between the live table and `plan`, made-required ones counted."""
    lacking = {}
    if plan.event is not None:
        lacking = _rows_lacking(spark, plan.path, newly_required(plan.event, properties, live))
    return compare_table(
        plan.name,
        live,
        plan.schema,
        event=plan.event,
        properties=properties,
        rows_lacking=lacking,
    )


def _recorded_properties(plan: TablePlan) -> dict[str, str]:
    if plan.event is None:
        return {FINGERPRINT_PROPERTY: plan.fingerprint}
    return contract_properties(plan.event, plan.fingerprint)


@dataclass(frozen=True)
class _Found:
    plan: TablePlan
    version: int | None  # None: no table yet
    properties: Mapping[str, str]
    changes: list[ColumnChange]


def _inspect(spark: SparkSession, plan: TablePlan) -> _Found:
    live = live_table(spark, plan.path)
    if live is None:
        return _Found(plan, None, {}, [])
    changes = plan_changes(spark, plan, live.schema, live.properties)
    return _Found(plan, live.version, live.properties, changes)


def prepare_tables(
    spark: SparkSession, plans: Sequence[TablePlan], *, stream: str = ""
) -> dict[str, tuple[int, list[ColumnChange]]]:
    """Makes every table of `plans` fit its contract before a run writes rows into it.

    Each table is inspected first; if any has a change its policy refuses, nothing at all
    is written. Then missing tables are created (change data feed on) and the others
    evolved (`alter_statements`), and each records what the contract wanted
    (`jsl.contract.*`). A crash half-way leaves some changes applied; the next run finds
    the rest and applies them.

    Args:
        spark: the session.
        plans: the tables and what the contract wants of each.
        stream: the stream, named in the error.

    Returns:
        Table name -> (its version now, the changes applied).

    Raises:
        SchemaChangeError: listing every refused change of every table.
    """
    found = [_inspect(spark, plan) for plan in plans]
    stopping = [c for f in found for c in refused(f.changes, f.plan.policy)]
    if stopping:
        raise SchemaChangeError(stopping, found[0].plan.policy, stream)
    ready = {}
    for f in found:
        plan, version = f.plan, f.version
        recorded = _recorded_properties(plan)
        if version is None:
            properties = {**CHANGE_DATA_FEED, **recorded}
            spark.sql(create_statement(plan.path, plan.schema, properties)).collect()
            ready[plan.name] = (table_version(spark, plan.path), [])
            continue
        statements = alter_statements(plan.path, f.changes, plan.schema)
        if any(f.properties.get(k) != v for k, v in recorded.items()):
            pairs = ", ".join(f"{_sql_text(k)} = {_sql_text(v)}" for k, v in recorded.items())
            statements.append(f"ALTER TABLE {delta_path(plan.path)} SET TBLPROPERTIES ({pairs})")
        for statement in statements:
            spark.sql(statement).collect()
        if statements:
            version = table_version(spark, plan.path)
        ready[plan.name] = (version, f.changes)
    return ready
