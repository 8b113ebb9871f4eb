"""The Delta schemas of a contract's silver tables and quarantine.

A silver table has, in order: the event type's fields (the envelope's first), the
`unknown_fields` map if it keeps them, its derived columns, then where the row came from
(`stream`, `seq`, `subject`, `published`), which run wrote it (`run_id`, `processed_at`)
and the contract that judged it (`contract_version`, `pipelines.contract.fingerprint`).
Field and derived descriptions become column comments (`StructField.metadata["comment"]`,
which Delta writes as the column's comment) and descriptions in Dagster's
`dagster/column_schema` (`assets/table_schema.py`).
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
    VariantType,
)

from pipelines.contract import (
    UNKNOWN_FIELDS_COLUMN,
    EventType,
    Field,
    FieldType,
    TypeKind,
    UnknownFields,
)

_S, _L, _T = StringType(), LongType(), TimestampType()
SOURCE_FIELDS = (
    StructField("stream", _S, True, {"comment": "The JetStream stream of the message."}),
    StructField("seq", _L, True, {"comment": "Its stream sequence; (stream, seq) is the key."}),
    StructField("subject", _S, True, {"comment": "The subject it was published on."}),
    StructField("published", _T, True, {"comment": "When the stream stored it (UTC)."}),
)
_VERSION_COMMENT = "The contract that judged the row: [your version+]fingerprint."
RUN_FIELDS = (
    StructField("run_id", _S, True, {"comment": "The run that wrote the row."}),
    StructField("processed_at", _T, True, {"comment": "When that run processed it."}),
    StructField("contract_version", _S, True, {"comment": _VERSION_COMMENT}),
)
QUARANTINE_SCHEMA = StructType(
    [
        *SOURCE_FIELDS,
        StructField("payload", BinaryType(), True, {"comment": "The bytes exactly as published."}),
        StructField("event_id", _S, True, {"comment": "The event id, if it could be read."}),
        StructField("event_type", _S, True, {"comment": "The event type, if it could be read."}),
        StructField("failed_rules", ArrayType(_S), True, {"comment": "Every rule it broke."}),
        StructField("error", _S, True, {"comment": "What is wrong, rule by rule."}),
        StructField("source_table", _S, True, {"comment": "The bronze table it came from."}),
        StructField("run_id", _S, True, {"comment": "The run that quarantined it."}),
        StructField("quarantined_at", _T, True, {"comment": "When."}),
        StructField("contract_version", _S, True, {"comment": _VERSION_COMMENT}),
    ]
)
_UNKNOWN_COMMENT = "Fields the contract does not declare: JSON path -> value as JSON text."


_SIMPLE = {
    TypeKind.STRING: StringType(),
    TypeKind.INTEGER: IntegerType(),
    TypeKind.LONG: LongType(),
    TypeKind.DOUBLE: DoubleType(),
    TypeKind.BOOLEAN: BooleanType(),
    TypeKind.TIMESTAMP: TimestampType(),
    TypeKind.DATE: DateType(),
    TypeKind.JSON: StringType(),  # the value's JSON text
    TypeKind.VARIANT: VariantType(),
}
_TEXT_MAP = MapType(StringType(), StringType())


def spark_type(field_type: FieldType) -> DataType:
    """The Spark type of a contract type, struct members carrying their descriptions."""
    kind = field_type.kind
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    if kind is TypeKind.DECIMAL:
        return DecimalType(field_type.precision, field_type.scale)
    if kind is TypeKind.STRUCT:
        return StructType([_struct_field(f) for f in field_type.fields])
    if kind is TypeKind.ARRAY:
        return ArrayType(spark_type(field_type.element))
    return MapType(StringType(), spark_type(field_type.element))


def _comment(description: str | None) -> dict:
    return {"comment": description} if description else {}


def _struct_field(f: Field) -> StructField:
    return StructField(f.column, spark_type(f.type), True, _comment(f.description))


def derived_types(event: EventType, spark: SparkSession) -> dict[str, DataType]:
    """The Spark type of each derived column, as declared or as its expression gives it.

    Resolving an undeclared type analyses the expression on an empty frame of the table's
    columns: no job runs.
    """
    columns = [_struct_field(f) for f in event.fields]
    if event.unknown_fields is UnknownFields.KEEP:
        columns.append(StructField(UNKNOWN_FIELDS_COLUMN, _TEXT_MAP))
    frame = spark.createDataFrame([], StructType([*columns, *SOURCE_FIELDS]))
    found = {}
    for d in event.derived:
        if d.type is not None:
            found[d.name] = spark_type(d.type)
        else:
            found[d.name] = frame.select(F.expr(d.expression).alias(d.name)).schema[0].dataType
        frame = frame.withColumn(d.name, F.lit(None).cast(found[d.name]))
    return found


def silver_schema(event: EventType, spark: SparkSession | None = None) -> StructType:
    """The Delta schema of the event type's silver table, with column comments.

    Args:
        event: the event type.
        spark: resolves derived columns declared without a type; the active session if None.

    Returns:
        Every column nullable (a column is as good as its rules say, not as Delta enforces).

    Raises:
        ValueError: a derived column has no declared type and there is no session.
    """
    columns = [_struct_field(f) for f in event.fields]
    if event.unknown_fields is UnknownFields.KEEP:
        comment = _comment(_UNKNOWN_COMMENT)
        columns.append(StructField(UNKNOWN_FIELDS_COLUMN, _TEXT_MAP, True, comment))
    if event.derived:
        spark = spark or SparkSession.getActiveSession()
        if spark is None and any(d.type is None for d in event.derived):
            raise ValueError(
                f"event type {event.name!r} has derived columns without a declared type; pass "
                "a SparkSession to resolve them, or declare their `type` in the contract"
            )
        types = derived_types(event, spark) if spark is not None else {}
        for d in event.derived:
            data_type = types[d.name] if d.name in types else spark_type(d.type)
            columns.append(StructField(d.name, data_type, True, _comment(d.description)))
    return StructType([*columns, *SOURCE_FIELDS, *RUN_FIELDS])
