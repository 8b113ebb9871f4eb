"""A contract against its live tables, before anything runs: at code location load and in
`jsl contract diff`, without Spark.

Each event type's silver table and the quarantine are read from their Delta log
(`pipelines.lakehouse.delta_log`: the schema and the `jsl.contract.*` properties the last run
recorded) and compared with what the contract wants (`pipelines.silver.evolution`). A table
that does not exist yet differs in nothing (the first run creates it); a table whose log
cannot be read without Spark (abfss://, gs://, ...) is compared when the run starts, by
Spark. Fields made required are listed as notes: whether rows lack them takes a query, which
the run makes before its first write.

Derived columns declared without a type take Spark to resolve; they are left out of the
comparison here (the run compares them).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipelines.contract import Contract, WrittenTable
from pipelines.contract.fingerprint import event_type_version
from pipelines.lakehouse.delta_log import TableLogError, read_table_state
from pipelines.silver.evolution import (
    COLUMNS_PROPERTY,
    FINGERPRINT_PROPERTY,
    ColumnChange,
    OnSchemaChange,
    compare_table,
    newly_required,
    recorded_property,
    refused,
)
from pipelines.silver.schema import QUARANTINE_SCHEMA, silver_schema

LOGGER = logging.getLogger("jetstream_lakehouse.contract")
# Stream -> its last report, filled as components load (`jsl contract diff` reads it).
REPORTS: dict[str, DriftReport] = {}


@dataclass(frozen=True)
class DriftReport:
    """How a stream's contract differs from its live tables."""

    stream: str
    policy: Mapping[str, OnSchemaChange]  # table name -> its policy
    changes: tuple[ColumnChange, ...] = ()
    notes: tuple[str, ...] = ()  # made-required fields, tables not compared
    refused: tuple[ColumnChange, ...] = ()

    def lines(self) -> list[str]:
        """One line per difference and note, each naming the table and column."""
        return [
            f"stream {self.stream}: {c.describe(self._policy_of(c), self.stream)}"
            for c in self.changes
        ] + [f"stream {self.stream}: {note}" for note in self.notes]

    def _policy_of(self, change: ColumnChange) -> OnSchemaChange:
        return self.policy.get(change.table, OnSchemaChange.EVOLVE)


def _comparable(event):
    """The event type without derived columns Spark must type, and their names."""
    untyped = {d.name.lower() for d in event.derived if d.type is None}
    typed = tuple(d for d in event.derived if d.type is not None)
    return dataclasses.replace(event, derived=typed), untyped


def _local(path: str, notes: list[str], table: str):
    try:
        return read_table_state(path)
    except TableLogError as error:
        notes.append(f"{table}: not compared now ({error.reason})")
        return None


def written_table(lakehouse, table: str) -> WrittenTable | None:
    """How `table` (a silver table's name) was last written, from its Delta log: each
    top-level field's JSON path -> its column, as its `jsl.contract.columns` property records
    it, and its columns whose type holds no VARIANT. None when the table does not exist, or
    its log cannot be read without Spark (`pipelines.lakehouse.delta_log`).
    `pipelines.contract.Layout` reads it to keep the table's layout."""
    try:
        state = read_table_state(lakehouse.table_path(table))
    except TableLogError:
        return None
    if state is None:
        return None
    recorded = recorded_property(state.properties, COLUMNS_PROPERTY, {})
    fields = state.schema.get("fields", [])
    without_variant = frozenset(f["name"] for f in fields if not _holds_variant(f["type"]))
    return WrittenTable(recorded if isinstance(recorded, dict) else {}, without_variant)


def _holds_variant(data_type: Any) -> bool:
    """Whether a Delta schema's type (its JSON form) is or holds a VARIANT."""
    if isinstance(data_type, str):
        return data_type == "variant"
    inner = [f["type"] for f in data_type.get("fields", [])]
    inner += [data_type[k] for k in ("elementType", "keyType", "valueType") if k in data_type]
    return any(_holds_variant(t) for t in inner)


def pending_changes(
    contract: Contract,
    *,
    stream: str,
    table_path,
    quarantine: str,
    policy: Mapping[str, OnSchemaChange],
) -> DriftReport:
    """What the next silver run of `stream` will change in (or refuse for) its tables.

    Args:
        contract: the stream's contract.
        stream: the stream's name, for the report.
        table_path: table name -> its path (`LakehouseResource.table_path`).
        quarantine: the quarantine table's name.
        policy: event type name -> its on_schema_change.

    Returns:
        Every difference, with the refused ones apart, and notes.
    """
    changes: list[ColumnChange] = []
    notes: list[str] = []
    by_table: dict[str, OnSchemaChange] = {}
    stopping: list[ColumnChange] = []
    for event in contract.event_types:
        state = _local(table_path(event.table), notes, event.table)
        if state is None:
            continue
        comparable, untyped = _comparable(event)
        live = state.struct_type()
        live = type(live)([f for f in live.fields if f.name.lower() not in untyped])
        found = compare_table(
            event.table,
            live,
            silver_schema(comparable),
            event=event,
            properties=state.properties,
        )
        mode = OnSchemaChange(policy.get(event.name, OnSchemaChange.EVOLVE))
        by_table[event.table] = mode
        changes += found
        stopping += refused(found, mode)
        for column in newly_required(event, state.properties, live):
            notes.append(
                f"{event.table}: column {column!r} is now required; the run counts the rows "
                "that lack it first and refuses to go on if there are any"
            )
        fingerprint = state.properties.get(FINGERPRINT_PROPERTY)
        now = event_type_version(contract, event)
        if fingerprint and fingerprint != now and not found:
            notes.append(
                f"{event.table}: the contract changed ({fingerprint} -> {now}) but not the "
                "table's columns; rows keep the version that judged them"
            )
    state = _local(table_path(quarantine), notes, quarantine)
    if state is not None:
        found = compare_table(quarantine, state.struct_type(), QUARANTINE_SCHEMA)
        changes += found
        stopping += refused(found, OnSchemaChange.EVOLVE)
    return DriftReport(stream, by_table, tuple(changes), tuple(notes), tuple(stopping))
