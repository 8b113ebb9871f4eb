"""The Dagster resource for data quality: `DataQualityResource`.

Assets declare a `quality: DataQualityResource` parameter and call
`quality.validate_dataframe(df, suite, evaluated_at=..., meta=...)`; the resource supplies its
configured settings (sample size, GX result format, whether to cache the frame, up to how many
rows to check in memory) to the runner in `resources.quality.gx_runner`. It is wired under
the key `quality` in `pipelines/wiring/default_resources.py`.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from dagster import ConfigurableResource
from pydantic import Field

from resources.quality.gx_runner import validate_dataframe
from resources.quality.in_memory import PANDAS_MAX_ROWS
from resources.quality.model import QualitySuite, ValidationReport

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


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
    pandas_max_rows: int = Field(
        default=PANDAS_MAX_ROWS,
        description="A frame of at most this many rows is collected once and checked by GX on "
        "pandas, for the checks whose verdict is provably Spark's (the others on Spark); 0: "
        "every check on Spark.",
    )

    def validate_dataframe(
        self,
        df: DataFrame,
        suite: QualitySuite,
        *,
        evaluated_at: dt.datetime,
        meta: dict[str, Any] | None = None,
        cache: bool | None = None,
    ) -> ValidationReport:
        """Validates `df` against `suite` with this resource's settings.

        Args:
            df: the frame to check.
            suite: the checks.
            evaluated_at: the clock, recorded in the report.
            meta: extra JSON-serialisable values for the report (e.g. the Dagster run id).
            cache: persist `df` while GX runs on Spark; None: `cache_frame`. False suits a
                frame Spark already holds computed (a projection of a `localCheckpoint`,
                as the silver stage's are): persisting it would cost two requests and save
                nothing.

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
            cache=self.cache_frame if cache is None else cache,
            meta=meta,
            pandas_max_rows=self.pandas_max_rows,
        )
