"""A Spark failure inside a stage is one line naming the stage and a log file with the rest."""

import pytest

from resources.spark_errors import SparkStageError, one_line_spark_errors


def test_a_spark_failure_is_one_line_naming_the_stage_and_a_log_with_every_frame(spark, tmp_path):
    failing = spark.range(3).selectExpr("assert_true(id < 1, 'id too large')")
    with pytest.raises(SparkStageError) as raised, one_line_spark_errors("silver.orders", tmp_path):
        failing.collect()

    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("silver.orders failed in Spark: ")
    assert "id too large" in message
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    log = raised.value.log_file.read_text()
    assert raised.value.log_file.parent == tmp_path
    assert "id too large" in log and len(log.splitlines()) > 10


def test_any_other_error_passes_unchanged(tmp_path):
    with pytest.raises(KeyError), one_line_spark_errors("silver.orders", log_dir=tmp_path):
        raise KeyError("not Spark's")
    assert list(tmp_path.iterdir()) == []
