"""HTML rendering of a data-quality report: the page `ValidationReport.to_html()` returns.

One self-contained page per suite run (inline CSS, no scripts): a verdict, then one table row
per check with its status (pass, FAIL for a critical check, warn otherwise), its figures and
samples of the unexpected values. Every value from the data is HTML-escaped. Contract silver
stores it in the artifacts Object Store as `report-<event type>.html`
(`pipelines/silver/artifacts.py`; `jsl artifacts get` fetches it).

This module does not import `resources.quality.model` (the model calls it): it reads the report
through the small read-only protocols below, which `ValidationReport` and `CheckOutcome` meet.
"""

from __future__ import annotations

import datetime as dt
import html
import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol


class RenderedOutcome(Protocol):
    """The fields of a `CheckOutcome` that the page shows."""

    @property
    def name(self) -> str: ...
    @property
    def rule(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def critical(self) -> bool: ...
    @property
    def success(self) -> bool: ...
    @property
    def column(self) -> str | None: ...
    @property
    def unexpected_count(self) -> int | None: ...
    @property
    def unexpected_percent(self) -> float | None: ...
    @property
    def mostly(self) -> float | None: ...
    @property
    def sample_values(self) -> Sequence[str]: ...
    @property
    def error(self) -> str | None: ...


class RenderedReport(Protocol):
    """The fields of a `ValidationReport` that the page shows."""

    @property
    def suite_name(self) -> str: ...
    @property
    def success(self) -> bool: ...
    @property
    def outcomes(self) -> Sequence[RenderedOutcome]: ...
    @property
    def critical_failures(self) -> Sequence[RenderedOutcome]: ...
    @property
    def evaluated_at(self) -> dt.datetime: ...
    @property
    def row_count(self) -> int: ...
    @property
    def meta(self) -> Mapping[str, Any]: ...


def render_html(report: RenderedReport) -> str:
    """A readable, self-contained HTML page of the report's checks; every value is escaped.

    Args:
        report: a `ValidationReport` (or anything with the same fields).

    Returns:
        The page, as text.
    """
    e = html.escape
    rows = []
    for o in report.outcomes:
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
    verdict = "passed" if report.success else f"{len(report.critical_failures)} critical failure(s)"
    return _HTML_PAGE.format(
        suite=e(report.suite_name),
        verdict=e(verdict),
        evaluated_at=e(report.evaluated_at.isoformat()),
        rows_count=report.row_count,
        meta=e(json.dumps(report.meta, default=str)),
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
