"""Data quality: validate a Spark DataFrame against a suite of Great Expectations checks.

Import from here (`from resources.quality import DataQualityResource, QualitySuite`); the
modules are, in dependency order:

- `report_html`: the HTML page of a report (`ValidationReport.to_html()`).
- `model`: `QualityCheck` and `QualitySuite` (what to check), `CheckOutcome` and
  `ValidationReport` (what was found), `DataQualityError`.
- `gx_runner`: `validate_dataframe`, which runs a suite in an ephemeral GX context.
- `resource`: `DataQualityResource`, which hands `validate_dataframe` to assets with its
  settings.

GX is imported on first use, not at import (it takes seconds): importing this package, or the
code location, does not load it.
"""

from resources.quality.gx_runner import RESULT_FORMATS, validate_dataframe
from resources.quality.model import (
    CheckOutcome,
    DataQualityError,
    QualityCheck,
    QualitySuite,
    ValidationReport,
)
from resources.quality.resource import DataQualityResource

__all__ = [
    "RESULT_FORMATS",
    "CheckOutcome",
    "DataQualityError",
    "DataQualityResource",
    "QualityCheck",
    "QualitySuite",
    "ValidationReport",
    "validate_dataframe",
]
