"""DataQualityResource and validate_dataframe on small frames, in the session's SparkSession."""

import dataclasses
import datetime as dt
import json
import os
import socket
import subprocess
import sys

import pytest
from dagster import AssetExecutionContext, asset, materialize
from pyspark.sql.types import LongType, StringType, StructField, StructType

from resources.quality import (
    DataQualityError,
    DataQualityResource,
    QualityCheck,
    QualitySuite,
    validate_dataframe,
)

NOW = dt.datetime(2026, 11, 21, 10, 0, tzinfo=dt.timezone.utc)
SCHEMA = StructType(
    [
        StructField("id", StringType()),
        StructField("size", LongType()),
        StructField("kind", StringType()),
    ]
)


def _suite(*, mostly: float = 1.0, size_critical: bool = True) -> QualitySuite:
    return QualitySuite(
        name="test/items",
        checks=(
            QualityCheck(
                name="id_not_null",
                rule="required",
                description="id is present",
                critical=True,
                expectation="ExpectColumnValuesToNotBeNull",
                kwargs={"column": "id", "mostly": mostly},
            ),
            QualityCheck(
                name="size_non_negative",
                rule="size_in_range",
                description="size >= 0",
                critical=size_critical,
                expectation="ExpectColumnValuesToBeBetween",
                kwargs={"column": "size", "min_value": 0, "mostly": mostly},
            ),
            QualityCheck(
                name="kind_lower_case",
                rule="kind_format",
                description="kind is lower case",
                critical=False,
                expectation="ExpectColumnValuesToMatchRegex",
                kwargs={"column": "kind", "regex": "^[a-z]+$", "mostly": mostly},
            ),
        ),
    )


def _frame(spark, *, bad_sizes: int = 0, bad_kinds: tuple[str, ...] = (), rows: int = 100):
    data = [
        (f"id-{i}", -(i + 1) if i < bad_sizes else i, bad_kinds[i] if i < len(bad_kinds) else "doc")
        for i in range(rows)
    ]
    return spark.createDataFrame(data, SCHEMA)


def test_clean_frame_passes_every_check(spark):
    report = validate_dataframe(_frame(spark), _suite(), evaluated_at=NOW)

    assert report.success
    assert report.critical_failures == ()
    assert report.row_count == 100
    assert [o.name for o in report.outcomes] == [
        "id_not_null",
        "size_non_negative",
        "kind_lower_case",
    ]
    size = report.outcome("size_non_negative")
    assert (size.success, size.unexpected_count, size.element_count) == (True, 0, 100)
    assert (size.rule, size.column, size.expectation_type) == (
        "size_in_range",
        "size",
        "expect_column_values_to_be_between",
    )


def test_failed_critical_check_is_a_critical_failure_and_a_failed_warning_is_not(spark):
    frame = _frame(spark, bad_sizes=2, bad_kinds=("PDF",))

    report = validate_dataframe(frame, _suite(), evaluated_at=NOW)

    assert not report.success
    assert [o.name for o in report.critical_failures] == ["size_non_negative"]
    assert [o.name for o in report.warnings] == ["kind_lower_case"]
    assert report.outcome("size_non_negative").sample_values == ("-1", "-2")
    assert report.outcome("kind_lower_case").sample_values == ("PDF",)


def test_mostly_passes_a_few_bad_rows_but_still_counts_them(spark):
    frame = _frame(spark, bad_sizes=3)

    lenient = validate_dataframe(frame, _suite(mostly=0.95), evaluated_at=NOW)
    strict = validate_dataframe(frame, _suite(mostly=0.98), evaluated_at=NOW)

    size = lenient.outcome("size_non_negative")
    assert (size.success, size.unexpected_count, size.unexpected_percent, size.mostly) == (
        True,
        3,
        3.0,
        0.95,
    )
    assert not strict.outcome("size_non_negative").success


def test_samples_are_distinct_and_at_most_sample_size(spark):
    frame = _frame(spark, bad_kinds=("A", "A", "B", "C", "D"))

    report = validate_dataframe(frame, _suite(), evaluated_at=NOW, sample_size=2)

    kinds = report.outcome("kind_lower_case")
    assert kinds.unexpected_count == 5
    assert len(kinds.sample_values) <= 2
    assert set(kinds.sample_values) <= {"A", "B", "C", "D"}
    assert len(set(kinds.sample_values)) == len(kinds.sample_values)


def test_html_report_escapes_values(spark):
    frame = _frame(spark, bad_kinds=("<script>alert(1)</script>",))

    page = validate_dataframe(frame, _suite(), evaluated_at=NOW).to_html()

    assert page.startswith("<!DOCTYPE html>")
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "test/items" in page
    assert "kind_lower_case" in page


def test_report_json_and_gx_result_json_parse(spark):
    report = validate_dataframe(
        _frame(spark, bad_sizes=1), _suite(), evaluated_at=NOW, meta={"run_id": "r-1"}
    )

    summary = json.loads(report.to_json())
    gx_result = json.loads(report.result_json)

    assert summary["critical_failures"] == ["size_non_negative"]
    assert summary["meta"]["run_id"] == "r-1"
    assert summary["evaluated_at"] == NOW.isoformat()
    assert gx_result["suite_name"] == "test/items"
    assert gx_result["meta"]["run_id"] == "r-1"
    assert {r["expectation_config"]["meta"]["check"] for r in gx_result["results"]} == {
        "id_not_null",
        "size_non_negative",
        "kind_lower_case",
    }
    assert {r["expectation_config"]["severity"] for r in gx_result["results"]} == {
        "critical",
        "warning",
    }


def test_validation_writes_nothing_to_the_working_directory_and_prints_no_progress(
    spark, tmp_path, monkeypatch, capfd
):
    monkeypatch.chdir(tmp_path)

    validate_dataframe(_frame(spark), _suite(), evaluated_at=NOW)

    assert os.listdir(tmp_path) == []
    out, err = capfd.readouterr()
    assert "Calculating Metrics" not in out + err
    assert out == ""


def test_validation_opens_no_connection_beyond_loopback(spark, monkeypatch):
    remote: list[object] = []
    connect = socket.socket.connect

    def recording_connect(sock, address):
        host = address[0] if isinstance(address, tuple) else address
        if sock.family != socket.AF_UNIX and not str(host).startswith(("127.", "::1", "localhost")):
            remote.append(address)
        return connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", recording_connect)

    validate_dataframe(_frame(spark), _suite(), evaluated_at=NOW)

    assert remote == []


def test_frame_is_unpersisted_after_validation(spark):
    frame = _frame(spark)

    validate_dataframe(frame, _suite(), evaluated_at=NOW)

    assert not frame.is_cached


def test_check_on_a_missing_column_is_refused_naming_suite_check_and_column(spark):
    frame = _frame(spark).drop("kind")

    with pytest.raises(DataQualityError, match=r"'test/items'.*'kind_lower_case'.*'kind'"):
        validate_dataframe(frame, _suite(), evaluated_at=NOW)


def test_expectation_that_raises_fails_its_check_with_the_error(spark):
    suite = QualitySuite(
        name="test/raises",
        checks=(
            QualityCheck(
                name="kind_between_numbers",
                rule="kind_format",
                description="a string column against numeric bounds",
                critical=True,
                expectation="ExpectColumnValuesToBeBetween",
                kwargs={"column": "kind", "min_value": 0, "max_value": 10},
            ),
        ),
    )

    report = validate_dataframe(_frame(spark), suite, evaluated_at=NOW)

    outcome = report.outcome("kind_between_numbers")
    assert not outcome.success
    assert outcome.error
    assert report.critical_failures == (outcome,)


def test_suite_refuses_check_names_that_are_not_identifiers_or_repeat():
    check = _suite().checks[0]

    with pytest.raises(ValueError, match="not a Python identifier"):
        QualitySuite(name="s", checks=(dataclasses.replace(check, name="id-present"),))
    with pytest.raises(ValueError, match="two checks named 'id_not_null'"):
        QualitySuite(name="s", checks=(check, check))


def test_an_unknown_expectation_or_bad_arguments_name_the_check():
    unknown = QualityCheck("c", "r", "d", True, "ExpectColumnToBeNice", {"column": "id"})
    with pytest.raises(DataQualityError, match="check 'c': 'ExpectColumnToBeNice' is not a Great"):
        unknown.build()
    bad = QualityCheck("c", "r", "d", True, "ExpectColumnValuesToBeBetween", {"colum": "id"})
    with pytest.raises(DataQualityError, match="check 'c': ExpectColumnValuesToBeBetween rejects"):
        bad.build()


def test_declaring_checks_does_not_import_great_expectations():
    code = (
        "import sys; from pipelines.contract import read_contract; "
        "from pipelines.settings import PROJECT_DIR; "
        "from pipelines.silver.expectations import contract_suite; "
        "c = read_contract(PROJECT_DIR / 'pipelines/file_trash/contract.yaml'); "
        "suites = [contract_suite(c, e) for e in c.event_types]; "
        "assert all(s is not None and s.checks for s in suites); "
        "sys.exit('great_expectations' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_same_suite_validates_twice(spark):
    suite, frame = _suite(), _frame(spark, bad_sizes=1)

    first = validate_dataframe(frame, suite, evaluated_at=NOW)
    second = validate_dataframe(frame, suite, evaluated_at=NOW)

    assert first.outcomes == second.outcomes


def test_resource_validates_with_its_settings_and_complete_results_keep_sample_size(spark):
    quality = DataQualityResource(sample_size=1, result_format="complete")
    frame = _frame(spark, bad_sizes=4)

    report = quality.validate_dataframe(frame, _suite(), evaluated_at=NOW)

    assert report.outcome("size_non_negative").unexpected_count == 4
    assert len(report.outcome("size_non_negative").sample_values) == 1


def test_resource_refuses_an_unknown_result_format(spark):
    quality = DataQualityResource(result_format="VERBOSE")

    with pytest.raises(ValueError, match="'VERBOSE' is not one of"):
        quality.validate_dataframe(_frame(spark), _suite(), evaluated_at=NOW)


def test_asset_validates_through_the_resource_without_printing_progress(spark, capfd):
    @asset
    def checked_items(context: AssetExecutionContext, quality: DataQualityResource) -> None:
        """Validates a small frame."""
        report = quality.validate_dataframe(
            _frame(spark, bad_sizes=1),
            _suite(),
            evaluated_at=NOW,
            meta={"run_id": context.run.run_id},
        )
        context.add_output_metadata({"critical_failures": len(report.critical_failures)})

    result = materialize([checked_items], resources={"quality": DataQualityResource()})

    assert result.success
    [materialization] = result.asset_materializations_for_node("checked_items")
    assert materialization.metadata["critical_failures"].value == 1
    out, err = capfd.readouterr()
    assert "Calculating Metrics" not in out + err


def test_empty_frame_passes_and_counts_no_rows(spark):
    report = validate_dataframe(spark.createDataFrame([], SCHEMA), _suite(), evaluated_at=NOW)

    assert report.success
    assert report.row_count == 0
    # GX evaluates nothing on no rows: it reports no unexpected count at all (None).
    assert {(o.success, o.element_count, o.unexpected_count) for o in report.outcomes} == {
        (True, 0, None)
    }
