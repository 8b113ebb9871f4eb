"""Schedules: gold once a day, Delta maintenance once a night (times in UTC)."""

from dagster import AssetSelection, DefaultScheduleStatus, ScheduleDefinition, define_asset_job

from assets.gold import GOLD_KEYS
from pipelines.wiring.maintenance import MAINTENANCE_JOB

daily_gold_job = define_asset_job(
    "daily_gold",
    selection=AssetSelection.assets(*GOLD_KEYS.values()),
    description="Recompute the gold tables (expiring files move with the calendar).",
)

daily_gold_schedule = ScheduleDefinition(
    name="daily_gold_schedule",
    job=daily_gold_job,
    cron_schedule="15 0 * * *",
    execution_timezone="UTC",
    description="Materialise gold just after midnight UTC, so gold/expiring_files counts "
    "from the new day even when no event arrived.",
    default_status=DefaultScheduleStatus.STOPPED,
)

delta_maintenance_schedule = ScheduleDefinition(
    name="delta_maintenance_schedule",
    job_name=MAINTENANCE_JOB,
    cron_schedule="30 3 * * *",
    execution_timezone="UTC",
    description="OPTIMIZE and VACUUM every Delta table (retention in the job's config).",
    default_status=DefaultScheduleStatus.STOPPED,
)
