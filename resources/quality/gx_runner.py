"""The Great Expectations runner: validate a Spark DataFrame against a `QualitySuite`.

`validate_dataframe` is the plain function (`DataQualityResource` in
`resources.quality.resource` hands it to assets with its settings). Each call builds a fresh
*ephemeral* GX context (in-memory stores, no Data Docs site, progress bars off), so nothing is
written to disk or printed, and restores the process's previous current GX context afterwards.
GX 1.24 sends no usage statistics; the context config says `analytics_enabled: false` all the
same. GX runs a Spark job or two per expectation, so the frame is cached for the validation and
unpersisted afterwards, and samples of unexpected values are fetched only for the checks that
found some (see `_validate_in_two_passes`).

GX is imported on first use, inside `_run_gx`, not at import (it takes seconds).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any

from resources.quality.model import (
    CheckOutcome,
    DataQualityError,
    QualityCheck,
    QualitySuite,
    ValidationReport,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

RESULT_FORMATS = ("BASIC", "SUMMARY", "COMPLETE")
_COLUMN_KWARGS = ("column", "column_A", "column_B")


def validate_dataframe(
    df: DataFrame,
    suite: QualitySuite,
    *,
    evaluated_at: dt.datetime,
    sample_size: int = 5,
    result_format: str = "SUMMARY",
    cache: bool = True,
    meta: dict[str, Any] | None = None,
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
        kwargs = check.kwargs
        for needed in [kwargs.get(k) for k in _COLUMN_KWARGS] + list(
            kwargs.get("column_list") or []
        ):
            if needed is not None and needed not in columns:
                raise DataQualityError(
                    f"suite {suite.name!r}: check {check.name!r} needs column {needed!r}, which "
                    f"the frame does not have (it has {sorted(columns)}); fix the suite or the "
                    "transform that builds the frame"
                )
    meta = {**(meta or {}), "suite": suite.name, "evaluated_at": evaluated_at.isoformat()}
    persisted = cache and not df.is_cached
    if persisted:
        df.persist()
    try:
        row_count = df.count()
        result = _validate_in_two_passes(df, suite, result_format, sample_size)
    finally:
        if persisted:
            df.unpersist()
    result["meta"] = {**result.get("meta", {}), **meta}
    outcomes = _outcomes(suite, result["results"], sample_size=sample_size)
    return ValidationReport(
        suite_name=suite.name,
        success=all(o.success for o in outcomes),
        outcomes=outcomes,
        evaluated_at=evaluated_at,
        result_json=json.dumps(result, default=str).encode(),
        row_count=row_count,
        meta=meta,
    )


def _validate_in_two_passes(
    df: DataFrame, suite: QualitySuite, result_format: str, sample_size: int
) -> dict:
    """GX's result as a JSON dict; samples are fetched only for checks that found some.

    GX collects the sample of unexpected values with one Spark job per expectation, and on
    a clean frame each of those scans it all for nothing: they were two thirds of the time.
    The first pass asks for no samples (a LIMIT 0 query, which runs no job); the second
    re-runs only the checks with unexpected values, with samples. COMPLETE is one pass.
    """
    if result_format == "COMPLETE":
        return _run_gx(df, suite.name, suite.checks, result_format, sample_size)
    result = _run_gx(df, suite.name, suite.checks, result_format, 0)
    found = {
        _check_of(r) for r in result["results"] if (r.get("result") or {}).get("unexpected_count")
    }
    if found:
        again = [check for check in suite.checks if check.name in found]
        detailed = _run_gx(df, suite.name, again, result_format, sample_size)["results"]
        by_check = {_check_of(r): r for r in detailed}
        result["results"] = [by_check.get(_check_of(r), r) for r in result["results"]]
    return result


def _check_of(result: dict) -> str | None:
    return (result["expectation_config"].get("meta") or {}).get("check")


def _run_gx(
    frame: DataFrame,
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
        batch = (
            context.data_sources.add_spark(name="quality", persist=False)
            .add_dataframe_asset(name="frame")
            .add_batch_definition_whole_dataframe(name="whole")
            .get_batch(batch_parameters={"dataframe": frame})
        )
        gx_suite = gx.ExpectationSuite(name=suite_name, expectations=expectations)
        result = batch.validate(
            gx_suite,
            result_format={"result_format": result_format, "partial_unexpected_count": sample_size},
        )
        return result.to_json_dict()
    finally:
        project_manager.set_project(previous)


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


def _error(info: dict | None) -> str | None:
    """GX's exception message(s): one `exception_info`, or one per failed metric."""
    if not info:
        return None
    infos = [info] if "exception_message" in info else list(info.values())
    messages = [i.get("exception_message") for i in infos if isinstance(i, dict)]
    return "; ".join(m for m in messages if m) or None
