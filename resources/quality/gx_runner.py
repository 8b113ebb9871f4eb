"""The Great Expectations runner: validate a Spark DataFrame against a `QualitySuite`.

`validate_dataframe` is the plain function (`DataQualityResource` in
`resources.quality.resource` hands it to assets with its settings). Each call builds a fresh
*ephemeral* GX context (in-memory stores, no Data Docs site, progress bars off), so nothing is
written to disk or printed, and restores the process's previous current GX context afterwards.
GX 1.24 sends no usage statistics; the context config says `analytics_enabled: false` all the
same.

Two engines, one verdict. GX's Spark engine runs a Spark job or two per checked column, which
on a small frame is most of the time. So a frame of at most `pandas_max_rows` rows is
collected once (as Arrow, only the checked columns) and GX runs on a pandas copy of it every
check whose verdict is provably Spark's (`resources.quality.in_memory` says which, and why);
the other checks, and any check GX could not evaluate in memory, run on Spark as before: the
frame cached for them and unpersisted afterwards, and samples of unexpected values fetched only
for the checks that found some (see `_validate_in_two_passes`). The report's `meta["engines"]`
names the checks each engine judged.

GX is imported on first use, inside `_run_gx`, not at import (it takes seconds).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from resources.quality import in_memory
from resources.quality.in_memory import PANDAS_MAX_ROWS
from resources.quality.model import (
    CheckOutcome,
    DataQualityError,
    QualityCheck,
    QualitySuite,
    ValidationReport,
)

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

RESULT_FORMATS = ("BASIC", "SUMMARY", "COMPLETE")
_PANDAS_ONLY = ("partial_unexpected_index_list", "unexpected_index_list", "unexpected_index_query")


def validate_dataframe(
    df: DataFrame,
    suite: QualitySuite,
    *,
    evaluated_at: dt.datetime,
    sample_size: int = 5,
    result_format: str = "SUMMARY",
    cache: bool = True,
    meta: dict[str, Any] | None = None,
    pandas_max_rows: int = PANDAS_MAX_ROWS,
) -> ValidationReport:
    """Validates `df` against `suite` in an ephemeral GX context.

    Args:
        df: the frame to check (a classic or Spark Connect DataFrame).
        suite: the checks.
        evaluated_at: the clock, recorded in the report and in GX's result meta.
        sample_size: how many distinct unexpected values each outcome keeps.
        result_format: GX's detail: BASIC or SUMMARY fetch `sample_size` unexpected values per
            check; COMPLETE fetches all of them (up to GX's 200,000) to the driver.
        cache: persist `df` for the validation (unpersisted afterwards) unless already cached.
        meta: extra JSON-serialisable values for the report and GX's result (e.g. a run id).
        pandas_max_rows: a frame of at most this many rows is checked in memory, on pandas,
            where the verdict is provably the same (see the module docstring); 0: always Spark.

    Returns:
        The report, with one outcome per check in the suite's order.

    Raises:
        ValueError: `sample_size` or `result_format` is out of range.
        DataQualityError: a check names a column the frame does not have.
    """
    result_format = result_format.upper()
    if result_format not in RESULT_FORMATS:
        raise ValueError(f"result_format {result_format!r} is not one of {RESULT_FORMATS}")
    if sample_size < 1:
        raise ValueError(f"sample_size must be at least 1, got {sample_size!r}")
    columns = set(df.columns)
    for check in suite.checks:
        for needed in check.columns:
            if needed not in columns:
                raise DataQualityError(
                    f"suite {suite.name!r}: check {check.name!r} needs column {needed!r}, which "
                    f"the frame does not have (it has {sorted(columns)}); fix the suite or the "
                    "transform that builds the frame"
                )
    meta = {**(meta or {}), "suite": suite.name, "evaluated_at": evaluated_at.isoformat()}
    ready, rest = (
        in_memory.split(suite.checks, df.schema) if pandas_max_rows > 0 else ([], suite.checks)
    )
    # Spark reads the frame once for the checks it keeps and the copy, so both see its rows.
    persisted = cache and bool(rest) and not df.is_cached
    if persisted:
        df.persist()
    try:
        table, pandas_checks, spark_checks = _collect_small(df, suite, ready, pandas_max_rows)
        parts, found = [], set()
        if pandas_checks:
            result, again, found = _validate_in_memory(
                table, df.schema, suite.name, pandas_checks, result_format, sample_size
            )
            if result is not None:
                parts.append(result)
            spark_checks = [c for c in suite.checks if c in spark_checks or c.name in again]
        row_count = None if table is None else table.num_rows
        if spark_checks:
            if cache and not df.is_cached:
                df.persist()
                persisted = True
            if row_count is None:
                row_count = df.count()
            parts.append(
                _validate_in_two_passes(
                    df, suite.name, spark_checks, result_format, sample_size, found=found
                )
            )
    finally:
        if persisted:
            df.unpersist()
    result = _merged(parts, suite.checks)
    meta["engines"] = {
        "pandas": [c.name for c in suite.checks if c not in spark_checks and table is not None],
        "spark": [c.name for c in spark_checks],
    }
    result["meta"] = {**result.get("meta", {}), **meta}
    outcomes = _outcomes(suite, result["results"], sample_size=sample_size)
    return ValidationReport(
        suite_name=suite.name,
        success=all(o.success for o in outcomes),
        outcomes=outcomes,
        evaluated_at=evaluated_at,
        result_json=json.dumps(result, default=str).encode(),
        row_count=row_count or 0,
        meta=meta,
    )


def _validate_in_two_passes(
    df: DataFrame,
    suite_name: str,
    checks: list[QualityCheck],
    result_format: str,
    sample_size: int,
    *,
    found: set[str] | frozenset[str] = frozenset(),
) -> dict:
    """GX's result as a JSON dict; samples are fetched only for checks that found some.

    GX collects the sample of unexpected values with one Spark job per expectation, and on
    a clean frame each of those scans it all for nothing: they were two thirds of the time.
    The first pass asks for no samples (a LIMIT 0 query, which runs no job); the second
    re-runs only the checks with unexpected values, with samples. The checks in `found` are
    known to have some (in memory) and go straight to the second. COMPLETE is one pass.
    """
    if result_format == "COMPLETE":
        return _run_gx(df, suite_name, checks, result_format, sample_size)
    parts, found = [], set(found)
    unknown = [c for c in checks if c.name not in found]
    if unknown:
        first = _run_gx(df, suite_name, unknown, result_format, 0)
        found |= _found_rows(first)
        first["results"] = [r for r in first["results"] if _check_of(r) not in found]
        parts.append(first)
    again = [c for c in checks if c.name in found]
    if again:
        parts.append(_run_gx(df, suite_name, again, result_format, sample_size))
    return _merged(parts, checks)


def _validate_in_memory(
    table: pa.Table,
    schema: StructType,
    suite_name: str,
    checks: list[QualityCheck],
    result_format: str,
    sample_size: int,
) -> tuple[dict | None, set[str], set[str]]:
    """GX's result on a pandas copy of `table`, without the checks to run again on Spark;
    the names of those, and of those among them known to have found rows. No result, and
    every check to Spark, if pandas cannot hold the copy.

    Back to Spark go a check GX could not evaluate in memory, and one that found rows whose
    samples Spark writes otherwise (`in_memory.samples_from_spark`).
    """
    import pyarrow as pa

    try:
        frame = in_memory.to_pandas(table)
    except (ValueError, OverflowError, pa.ArrowException):  # e.g. a date beyond year 9999
        return None, {c.name for c in checks}, set()
    result = _run_gx(frame, suite_name, checks, result_format, sample_size)
    raised = {_check_of(r) for r in result["results"] if _raised(r.get("exception_info"))}
    with_rows = _found_rows(result) - raised
    found = {
        c.name for c in checks if c.name in with_rows and in_memory.samples_from_spark(c, schema)
    }
    result["results"] = [r for r in result["results"] if _check_of(r) not in raised | found]
    if table.num_rows == 0:
        for r in result["results"]:
            in_memory.empty_as_on_spark(r)
    return result, raised | found, found


def _collect_small(
    df: DataFrame, suite: QualitySuite, ready: list[QualityCheck], max_rows: int
) -> tuple[pa.Table | None, list[QualityCheck], list[QualityCheck]]:
    """The columns the `ready` checks read, as Arrow, if `df` has at most `max_rows` rows;
    with the checks for pandas and those for Spark (all of them if there is no copy)."""
    if not ready:
        return None, [], list(suite.checks)
    columns = ["`" + name.replace("`", "``") + "`" for name in in_memory.columns_of(ready)]
    try:
        table = df.select(*columns).limit(max_rows + 1).toArrow()
    except Exception:  # a type Arrow cannot carry: Spark judges it, as it always could
        return None, [], list(suite.checks)
    if table.num_rows > max_rows:
        return None, [], list(suite.checks)
    refused = in_memory.refused_by_values(table, ready)
    return (
        table,
        [c for c in ready if c.name not in refused],
        [c for c in suite.checks if c not in ready or c.name in refused],
    )


def _merged(parts: list[dict], checks: tuple[QualityCheck, ...] | list[QualityCheck]) -> dict:
    """One GX result of the parts' results, in the checks' order, with its statistics."""
    merged = dict(parts[0])
    by_check = {_check_of(r): r for part in parts for r in part["results"]}
    results = [by_check[c.name] for c in checks if c.name in by_check]
    passed = sum(1 for r in results if r["success"])
    merged["results"] = results
    merged["success"] = passed == len(results)
    merged["statistics"] = {
        **merged.get("statistics", {}),
        "evaluated_expectations": len(results),
        "successful_expectations": passed,
        "unsuccessful_expectations": len(results) - passed,
        "success_percent": 100.0 * passed / len(results) if results else None,
    }
    return merged


def _found_rows(result: dict) -> set[str]:
    """The checks (by name) that found unexpected values in `result`."""
    return {
        _check_of(r) for r in result["results"] if (r.get("result") or {}).get("unexpected_count")
    }


def _check_of(result: dict) -> str | None:
    return (result["expectation_config"].get("meta") or {}).get("check")


def _run_gx(
    frame: DataFrame | pd.DataFrame,
    suite_name: str,
    checks: tuple[QualityCheck, ...] | list[QualityCheck],
    result_format: str,
    sample_size: int,
) -> dict:
    import great_expectations as gx
    from great_expectations.data_context.data_context.context_factory import project_manager
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )
    from great_expectations.exceptions import DataContextRequiredError
    from great_expectations.expectations.metadata_types import FailureSeverity

    try:
        previous = project_manager.get_current_project()
    except DataContextRequiredError:
        previous = None
    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
        progress_bars=ProgressBarsConfig(globally=False, metric_calculations=False),
        analytics_enabled=False,
    )
    import pandas as pd

    on_pandas = isinstance(frame, pd.DataFrame)
    java_regex = {}
    if on_pandas:  # GX's pandas engine searches with Python's `re`
        java_regex = {c.name: c.kwargs["regex"] for c in checks if "regex" in c.kwargs}
        checks = [
            replace(c, kwargs={**c.kwargs, "regex": in_memory.python_regex(c.kwargs["regex"])})
            if c.name in java_regex
            else c
            for c in checks
        ]
    expectations = [
        check.build().copy(
            update={
                "meta": {"check": check.name, "rule": check.rule},
                "severity": FailureSeverity.CRITICAL if check.critical else FailureSeverity.WARNING,
            },
        )
        for check in checks
    ]
    try:
        context = gx.get_context(mode="ephemeral", project_config=config)
        source = (
            context.data_sources.add_pandas(name="quality")
            if on_pandas
            else context.data_sources.add_spark(name="quality", persist=False)
        )
        batch = (
            source.add_dataframe_asset(name="frame")
            .add_batch_definition_whole_dataframe(name="whole")
            .get_batch(batch_parameters={"dataframe": frame})
        )
        gx_suite = gx.ExpectationSuite(name=suite_name, expectations=expectations)
        result = batch.validate(
            gx_suite,
            result_format={"result_format": result_format, "partial_unexpected_count": sample_size},
        )
        result = result.to_json_dict()
    finally:
        project_manager.set_project(previous)
    for r in result["results"]:
        details = r.get("result") or {}
        if on_pandas:
            for key in _PANDAS_ONLY:  # row numbers of the pandas copy: not the frame's
                details.pop(key, None)
            first_pass = result_format != "COMPLETE"
            if first_pass and not details.get("partial_unexpected_counts", True):
                del details["partial_unexpected_counts"]  # as Spark's pass without samples
        if _check_of(r) in java_regex:  # the check's own (Java) pattern, as on Spark
            r["expectation_config"]["kwargs"]["regex"] = java_regex[_check_of(r)]
    return result


def _outcomes(suite: QualitySuite, results: list[dict], *, sample_size: int):
    by_check = {_check_of(r): r for r in results}
    outcomes = []
    for check in suite.checks:
        if check.name not in by_check:
            raise DataQualityError(
                f"suite {suite.name!r}: GX returned no result for check {check.name!r} (only "
                f"for {sorted(map(str, by_check))}); check that GX accepts its expectation"
            )
        r = by_check[check.name]
        details, kwargs = r.get("result") or {}, r["expectation_config"]["kwargs"]
        samples: list[str] = []
        for value in details.get("partial_unexpected_list") or details.get("unexpected_list") or []:
            text = "null" if value is None else str(value)
            if text not in samples and len(samples) < sample_size:
                samples.append(text)
        outcomes.append(
            CheckOutcome(
                name=check.name,
                rule=check.rule,
                critical=check.critical,
                success=bool(r["success"]),
                expectation_type=r["expectation_config"]["type"],
                column=kwargs.get("column"),
                element_count=details.get("element_count"),
                unexpected_count=details.get("unexpected_count"),
                unexpected_percent=details.get("unexpected_percent"),
                mostly=kwargs.get("mostly"),
                sample_values=tuple(samples),
                observed_value=details.get("observed_value"),
                error=_error(r.get("exception_info")),
                description=check.description,
            )
        )
    return tuple(outcomes)


def _raised(info: dict | None) -> bool:
    """Whether GX raised evaluating an expectation (one `exception_info`, or one per metric)."""
    if not info:
        return False
    infos = [info] if "raised_exception" in info else list(info.values())
    return any(isinstance(i, dict) and i.get("raised_exception") for i in infos)


def _error(info: dict | None) -> str | None:
    """GX's exception message(s): one `exception_info`, or one per failed metric."""
    if not info:
        return None
    infos = [info] if "exception_message" in info else list(info.values())
    messages = [i.get("exception_message") for i in infos if isinstance(i, dict)]
    return "; ".join(m for m in messages if m) or None
