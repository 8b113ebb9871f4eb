"""`merge_into` and `merge_insert_only`: SQL MERGEs whose source is the statement's argument.

Real Spark and Delta. The statement is a Python format string (`spark.sql(..., source=...)`),
so a path or a condition holding braces must reach Spark as written.
"""

from __future__ import annotations

from pipelines.lakehouse.delta_tables import merge_insert_only, merge_into

SCHEMA = "seq long, v string"


def test_merges_take_their_source_as_an_argument_and_leave_no_view(spark, table_root):
    path = str(table_root / "odd {name}" / "t")
    spark.createDataFrame([(1, "a")], SCHEMA).write.format("delta").save(path)
    views_before = {t.name for t in spark.catalog.listTables()}

    inserted = merge_insert_only(
        spark,
        spark.createDataFrame([(1, "x"), (2, "{b}")], SCHEMA),
        path,
        "t.seq = s.seq AND s.v != '{}'",
    )
    metrics = merge_into(
        spark,
        spark.createDataFrame([(2, "B")], SCHEMA),
        path,
        "ON t.seq = s.seq WHEN MATCHED THEN UPDATE SET *",
    )

    assert inserted == 1
    assert (metrics["num_updated_rows"], metrics["num_inserted_rows"]) == (1, 0)
    rows = spark.read.format("delta").load(path).orderBy("seq").collect()
    assert [tuple(r) for r in rows] == [(1, "a"), (2, "B")]
    assert {t.name for t in spark.catalog.listTables()} == views_before
