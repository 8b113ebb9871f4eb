"""The data-quality vocabulary: checks and suites going in, outcomes and reports coming out.

A `QualitySuite` is a named, ordered set of `QualityCheck`s, each one Great Expectations
expectation declared by class name and keyword arguments. Running a suite on a frame
(`resources.quality.gx_runner.validate_dataframe`) gives a `ValidationReport` holding one
`CheckOutcome` per check. These are plain frozen dataclasses: declaring checks, as the code
location does when it loads, does not import GX (only `QualityCheck.build` does, when a suite
runs). `DataQualityError` says a suite cannot be run as asked.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from resources.quality.report_html import render_html

if TYPE_CHECKING:
    from great_expectations.expectations import Expectation


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

    @property
    def columns(self) -> list[str]:
        """The columns the expectation reads (`column`, `column_A`, `column_B`, then
        `column_list`), each once."""
        named = [self.kwargs.get(k) for k in ("column", "column_A", "column_B")]
        listed = list(self.kwargs.get("column_list") or [])
        return list(dict.fromkeys(c for c in named + listed if c is not None))

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
        return render_html(self)
