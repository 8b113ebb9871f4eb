"""Data quality: validate a Spark DataFrame against a suite of Great Expectations checks.

`validate_dataframe` is the plain function; `DataQualityResource` hands it to assets with its
settings. Each call builds a fresh *ephemeral* GX context (in-memory stores, no Data Docs site,
progress bars off), so nothing is written to disk or printed, and restores the process's
previous current GX context afterwards. GX 1.24 sends no usage statistics; the context config
says `analytics_enabled: false` all the same. GX runs a Spark job or two per expectation, so
the frame is cached for the validation and unpersisted afterwards, and samples of unexpected
values are fetched only for the checks that found some (see `_validate_in_two_passes`).

GX is imported on first use, not at import (it takes seconds).
"""

from __future__ import annotations

import datetime as dt
import html
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from dagster import ConfigurableResource
from pydantic import Field

if TYPE_CHECKING:
    from great_expectations.expectations import Expectation
    from pyspark.sql import DataFrame

RESULT_FORMATS = ("BASIC", "SUMMARY", "COMPLETE")
_COLUMN_KWARGS = ("column", "column_A", "column_B")


class DataQualityError(Exception):
    """A suite cannot be run as asked (a column missing from the frame, a lost result)."""


@dataclass(frozen=True)
class QualityCheck:
    """One expectation, named and tagged with the quality rule it enforces.

    The expectation is declared by the name of its Great Expectations class and its keyword
    arguments, and built (`build()`) only when a suite runs: declaring checks, as the code
    location does for its asset check specs when it loads, does not import GX (seconds).

    Examples:
        >>> QualityCheck(
        ...     name="file_size_in_range",
        ...     rule="file_size_in_range",
        ...     description="0 <= file_size <= 1 TiB in 95% of the rows",
        ...     critical=True,
        ...     expectation="ExpectColumnValuesToBeBetween",
        ...     kwargs={"column": "file_size", "min_value": 0, "max_value": 2**40, "mostly": 0.95},
        ... )
    """

    name: str  # a Python identifier, unique in its suite: the Dagster asset check name
    rule: str  # e.g. "file_size_in_range"
    description: str
    critical: bool  # a failure blocks downstream assets
    expectation: (
        str  # a class of `great_expectations.expectations`, e.g. "ExpectColumnValuesToBeUnique"
    )
    kwargs: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def build(self) -> Expectation:
        """The GX expectation (imports GX on first use).

        Raises:
            DataQualityError: GX has no such expectation class, or rejects the arguments; the
                message names the check.
        """
        import great_expectations.expectations as gxe

        expectation_class = getattr(gxe, self.expectation, None)
        if not isinstance(expectation_class, type):
            raise DataQualityError(
                f"check {self.name!r}: {self.expectation!r} is not a Great Expectations "
                "expectation; use a class of great_expectations.expectations, e.g. "
                "'ExpectColumnValuesToNotBeNull'"
            )
        try:
            return expectation_class(**self.kwargs)
        except (TypeError, ValueError) as error:  # pydantic's ValidationError is a ValueError
            raise DataQualityError(
                f"check {self.name!r}: {self.expectation} rejects its arguments "
                f"{dict(self.kwargs)!r}: {error}"
            ) from error


@dataclass(frozen=True)
class QualitySuite:
    """A named, ordered set of checks; the names are checked on construction."""

    name: str
    checks: tuple[QualityCheck, ...]

    def __post_init__(self) -> None:
        if not self.name or not self.checks:
            raise ValueError(f"suite {self.name!r} needs a name and at least one QualityCheck")
        names = [check.name for check in self.checks]
        for name in names:
            if not name.isidentifier():
                raise ValueError(
                    f"suite {self.name!r}: check name {name!r} is not a Python identifier "
                    "(it becomes a Dagster asset check name); use e.g. 'file_size_in_range'"
                )
            if names.count(name) > 1:
                raise ValueError(f"suite {self.name!r} has two checks named {name!r}")

    def check(self, name: str) -> QualityCheck:
        """The check called `name`.

        Raises:
            KeyError: the suite has no such check (the message lists those it has).
        """
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(f"suite {self.name!r} has no check {name!r}; it has {self.names()}")

    def names(self) -> list[str]:
        """The check names, in order."""
        return [check.name for check in self.checks]


@dataclass(frozen=True)
class CheckOutcome:
    """How one check fared on one frame: GX's figures, and samples as strings."""

    name: str
    rule: str
    critical: bool
    success: bool
    expectation_type: str
    column: str | None
    element_count: int | None
    unexpected_count: int | None
    unexpected_percent: float | None  # as GX reports it: of the non-null values, 0-100
    mostly: float | None
    sample_values: tuple[str, ...]  # distinct unexpected values, at most `sample_size`
    observed_value: Any  # aggregate expectations only; JSON-serialisable
    error: str | None = None  # GX raised while evaluating it (the check then fails)
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The outcome as JSON-serialisable values."""
        return {**asdict(self), "sample_values": list(self.sample_values)}


@dataclass(frozen=True)
class ValidationReport:
    """The outcome of one suite on one frame."""

    suite_name: str
    success: bool  # every check passed (GX's verdict); `critical_failures` are the blockers
    outcomes: tuple[CheckOutcome, ...]  # in the suite's order
    evaluated_at: dt.datetime
    result_json: bytes  # GX's own ExpectationSuiteValidationResult, as JSON
    row_count: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def critical_failures(self) -> tuple[CheckOutcome, ...]:
        """The failed critical checks: if there are any, downstream assets must not run."""
        return tuple(o for o in self.outcomes if o.critical and not o.success)

    @property
    def warnings(self) -> tuple[CheckOutcome, ...]:
        """The failed non-critical checks."""
        return tuple(o for o in self.outcomes if not o.critical and not o.success)

    def outcome(self, name: str) -> CheckOutcome:
        """The outcome of the check called `name` (KeyError if there is none)."""
        for outcome in self.outcomes:
            if outcome.name == name:
                return outcome
        raise KeyError(f"suite {self.suite_name!r} has no check {name!r}")

    def to_json(self) -> str:
        """This summary as a JSON document (GX's full result is `result_json`)."""
        summary = {
            "suite_name": self.suite_name,
            "success": self.success,
            "evaluated_at": self.evaluated_at.isoformat(),
            "row_count": self.row_count,
            "critical_failures": [o.name for o in self.critical_failures],
            "meta": self.meta,
            "outcomes": [o.to_dict() for o in self.outcomes],
        }
        return json.dumps(summary, default=str, indent=2)

    def to_html(self) -> str:
        """A readable, self-contained HTML page of the checks; every value is escaped."""
        e = html.escape
        rows = []
        for o in self.outcomes:
            status = "pass" if o.success else ("FAIL" if o.critical else "warn")
            percent = "" if o.unexpected_percent is None else f"{o.unexpected_percent:.2f}%"
            cells = [
                f'<td class="{status.lower()}">{status}</td>',
                f"<td><code>{e(o.name)}</code><br><small>{e(o.description)}</small></td>",
                f"<td>{e(o.rule)}</td>",
                f"<td>{'critical' if o.critical else 'warning'}</td>",
                f"<td>{e(o.column or '')}</td>",
                f"<td>{'' if o.unexpected_count is None else o.unexpected_count}</td>",
                f"<td>{percent}</td>",
                f"<td>{'' if o.mostly is None else o.mostly}</td>",
                f"<td>{', '.join(f'<code>{e(v)}</code>' for v in o.sample_values)}"
                f"{'<br>' + e(o.error) if o.error else ''}</td>",
            ]
            rows.append(f"<tr>{''.join(cells)}</tr>")
        verdict = "passed" if self.success else f"{len(self.critical_failures)} critical failure(s)"
        return _HTML_PAGE.format(
            suite=e(self.suite_name),
            verdict=e(verdict),
            evaluated_at=e(self.evaluated_at.isoformat()),
            rows_count=self.row_count,
            meta=e(json.dumps(self.meta, default=str)),
            rows="\n".join(rows),
        )


_HTML_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{suite}: data quality</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;vertical-align:top;text-align:left}}
.pass{{color:#176d2c}}.fail{{color:#b00020;font-weight:bold}}.warn{{color:#a36200}}</style>
</head><body><h1>Suite <code>{suite}</code>: {verdict}</h1>
<p>Evaluated at {evaluated_at} on {rows_count} rows. <small>{meta}</small></p>
<table><tr><th>status</th><th>check</th><th>rule</th><th>severity</th><th>column</th>
<th>unexpected</th><th>unexpected %</th><th>mostly</th><th>samples</th></tr>
{rows}
</table></body></html>
"""


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


class DataQualityResource(ConfigurableResource):
    """Validates Spark DataFrames against `QualitySuite`s with Great Expectations.

    Each validation runs in its own ephemeral GX context: nothing is written to disk, no
    progress bars, no usage statistics. Critical failures are for the caller to act on
    (`report.critical_failures`); validating never raises because data is bad.

    Examples:
        >>> quality = DataQualityResource(sample_size=3)
        >>> report = quality.validate_dataframe(
        ...     candidates, file_deleted_suite(now=now), evaluated_at=now, meta={"run_id": run_id}
        ... )
        >>> [outcome.name for outcome in report.critical_failures]
        ['file_size_in_range']
    """

    sample_size: int = Field(
        default=5, description="How many distinct unexpected values each check outcome keeps."
    )
    result_format: str = Field(
        default="SUMMARY",
        description="GX result format: BASIC or SUMMARY (sample_size unexpected values per "
        "check) or COMPLETE (every unexpected value, collected to the driver).",
    )
    cache_frame: bool = Field(
        default=True,
        description="Persist the frame while GX runs its one or two Spark jobs per expectation.",
    )

    def validate_dataframe(
        self,
        df: DataFrame,
        suite: QualitySuite,
        *,
        evaluated_at: dt.datetime,
        meta: dict[str, Any] | None = None,
    ) -> ValidationReport:
        """Validates `df` against `suite` with this resource's settings.

        Args:
            df: the frame to check.
            suite: the checks.
            evaluated_at: the clock, recorded in the report.
            meta: extra JSON-serialisable values for the report (e.g. the Dagster run id).

        Returns:
            The report; see `validate_dataframe` (the function) for the details.

        Raises:
            DataQualityError: a check names a column the frame does not have.
        """
        return validate_dataframe(
            df,
            suite,
            evaluated_at=evaluated_at,
            sample_size=self.sample_size,
            result_format=self.result_format,
            cache=self.cache_frame,
            meta=meta,
        )
