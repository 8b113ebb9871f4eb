"""Automation conditions shared by the downstream assets (declarative automation).

Bronze is driven by the stream sensors (`sensors/stream.py`); everything after it follows
on its own. `AFTER_UPSTREAM_COMMITS` (silver) is Dagster's `eager()` with two differences,
both because these assets read only their upstream tables' committed Delta versions and
remember in KV or in the table's own history where they stopped:

- it does not wait while an upstream asset is in progress. With a steady stream, an ingest
  run is nearly always in progress, and `eager()` starved silver until a gap between runs
  (bench/HISTORY.md, "Freshness baseline" and change 1);
- an upstream update is handled by this asset's next *request* after it, not by any later
  materialisation of the asset. With `eager()`, a bronze commit made while a silver run was
  going (after that run had read bronze) was cleared by the run's own materialisation and
  waited for the next bronze commit, on a quiet stream forever. Here silver runs once more
  after such a run; if that run had already read the commit, the extra run finds nothing new.

`AFTER_UPSTREAM_CHECKS` (declared aggregates) adds Dagster's
`all_deps_blocking_checks_passed()`: never over a failed blocking quality check upstream,
nor before the checks of the upstream's latest materialisation have run.

`AFTER_UPSTREAM_CHECKS_AT_MOST_EVERY_MINUTE` (gold, the downstream events) is that, requested
at most once per UTC minute: a silver commit that comes after the minute's request waits for
the next minute, then goes in that request with every commit since. A run that keeps
following its stream commits silver every 10-30 s; with a gold run (a new process and Spark
session) per commit, each silver batch took about twice as long on two cores
(docs/performance.md, "Freshness: publish to silver"). Gold is requested up to a minute
after a silver commit, then visible after its run.
"""

from dagster import AutomationCondition

_HANDLED = (
    AutomationCondition.newly_requested() & ~AutomationCondition.any_deps_updated()
) | AutomationCondition.initial_evaluation()

AFTER_UPSTREAM_COMMITS = (
    AutomationCondition.in_latest_time_window()
    & (AutomationCondition.newly_missing() | AutomationCondition.any_deps_updated()).since(
        _HANDLED.with_label("requested since")
    )
    & ~AutomationCondition.any_deps_missing()
    & ~AutomationCondition.in_progress()
).with_label("after each upstream commit, even while upstream runs")

AFTER_UPSTREAM_CHECKS = (
    AFTER_UPSTREAM_COMMITS & AutomationCondition.all_deps_blocking_checks_passed()
).with_label("after each upstream commit, once upstream blocking checks passed")

# Requested since the last UTC minute started: the reset wins over a request seen on the
# same evaluation, which was made before the minute's tick.
_REQUESTED_THIS_MINUTE = (
    AutomationCondition.newly_requested()
    .since(AutomationCondition.cron_tick_passed("* * * * *"))
    .with_label("requested this minute")
)

AFTER_UPSTREAM_CHECKS_AT_MOST_EVERY_MINUTE = (
    AFTER_UPSTREAM_CHECKS & ~_REQUESTED_THIS_MINUTE
).with_label("after upstream commits and blocking checks, at most once a minute")
