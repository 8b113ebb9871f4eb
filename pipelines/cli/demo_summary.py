"""What the demo reports: each materialisation of a run, the summary, and what to try next.

Everything here is read from the Dagster instance (the event log the `dagster` CLI wrote)
and from JetStream, never parsed from the CLI's output. The summary's lines are
`[demo]   <label>: <figures>`; README.md shows a sample, which tests/pipelines/cli/test_demo.py
compares with a real run's labels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipelines.file_trash.topology import INGESTS
from pipelines.settings import Settings

if TYPE_CHECKING:
    import datetime as dt

    from dagster import DagsterInstance

    from pipelines.cli.demo_output import DemoOutput
    from pipelines.cli.demo_sample import SamplePublished
    from resources.jetstream import JetStreamClient

SILVER_TABLES = ("silver/file_deleted", "silver/file_trashed", "silver/quarantine")
SUMMARY_LABELS = (
    "published",
    "bronze/file_events",
    "silver",
    "quarantined by rule",
    "quality checks",
    "consumers",
    "Dagster runs",
)


class RunReport:
    """One `dg launch` run as the instance recorded it.

    Args:
        instance: the demo's Dagster instance.
        started: when the command was started (the run is the first one created after).
    """

    def __init__(self, instance: DagsterInstance, started: dt.datetime) -> None:
        self.instance = instance
        self.started = started
        self.run_id: str | None = None
        self.metadata: dict[str, dict[str, Any]] = {}
        self.checks: dict[str, bool] = {}

    def selected_assets(self, selection: str) -> int:
        """How many assets `selection` (`*` or a comma-separated list of keys) materialises."""
        if selection != "*":
            return len(selection.split(","))
        from pipelines.definitions import defs

        return len(defs.resolve_asset_graph().materializable_asset_keys)

    def poll(self) -> int:
        """Reads the run's materialisations and check evaluations so far; returns how many
        assets are materialised."""
        from dagster import DagsterEventType, RunsFilter

        if self.run_id is None:
            runs = self.instance.get_runs(RunsFilter(created_after=self.started), limit=1)
            if not runs:
                return 0
            self.run_id = runs[0].run_id
        kinds = {DagsterEventType.ASSET_MATERIALIZATION, DagsterEventType.ASSET_CHECK_EVALUATION}
        for entry in self.instance.all_logs(self.run_id, of_type=kinds):
            event = entry.dagster_event
            if event is None:
                continue
            if event.event_type == DagsterEventType.ASSET_MATERIALIZATION:
                materialization = event.step_materialization_data.materialization
                self.metadata[materialization.asset_key.to_user_string()] = {
                    name: value.value for name, value in materialization.metadata.items()
                }
            else:
                check = event.asset_check_evaluation_data
                self.checks[f"{check.asset_key.to_user_string()}:{check.check_name}"] = check.passed
        return len(self.metadata)

    def materializations(self) -> list[tuple[str, dict[str, Any]]]:
        """(asset key, metadata) of each asset the run materialised, in order."""
        self.poll()
        return list(self.metadata.items())

    def outcome(self) -> str:
        """`10 assets, 15 checks (0 failed)`."""
        failed = sum(1 for passed in self.checks.values() if not passed)
        return f"{len(self.metadata)} assets, {len(self.checks)} checks ({failed} failed)"

    def failure(self) -> str | None:
        """The first failed step's error (`step 'x': Error: message`), if the run has one."""
        from dagster import DagsterEventType

        if self.run_id is None:
            return None
        kinds = {DagsterEventType.STEP_FAILURE, DagsterEventType.RUN_FAILURE}
        for entry in self.instance.all_logs(self.run_id, of_type=kinds):
            event = entry.dagster_event
            if event is not None and event.event_type == DagsterEventType.STEP_FAILURE:
                error = event.step_failure_data.error
                while error is not None and error.cause is not None:
                    error = error.cause  # the user code's own exception, not Dagster's wrapper
                message = (error.message.strip().splitlines() or [""])[0] if error else ""
                return f"step {entry.step_key!r}: {message}"
            if event is not None:
                return entry.message
        return None


def describe(meta: dict[str, Any]) -> str:
    """What one materialisation did, from its metadata: rows added, published, rewritten."""
    total = meta.get("dagster/row_count")
    if "messages" in meta:  # an ingest: a range of the stream
        if not meta["messages"]:
            return f"nothing new, {total} rows"
        return (
            f"+{meta['messages']} rows (seq {meta['range_start']}-{meta['range_end']}), "
            f"{total} in the table"
        )
    if "published" in meta:
        return f"{meta['published']} published, {meta.get('duplicates', 0)} duplicates"
    if "rows_written" in meta:
        return f"+{meta['rows_written']} rows, {total} in the table"
    if meta.get("rewritten"):
        return f"{total} rows (rewritten)"
    return f"{total} rows" if total is not None else "materialised"


def _rows(instance: DagsterInstance, key: str) -> int:
    from dagster import AssetKey

    event = instance.get_latest_materialization_event(AssetKey.from_user_string(key))
    if event is None or event.asset_materialization is None:
        return 0
    value = event.asset_materialization.metadata.get("dagster/row_count")
    return int(value.value) if value is not None else 0


def summarize_run(
    out: DemoOutput,
    settings: Settings,
    js: JetStreamClient,
    passes: list[RunReport],
    published: SamplePublished,
) -> bool:
    """Prints what the demo did, one labelled line each; True if the consumers caught up.

    Args:
        out: the demo's output.
        settings: where the data lives.
        js: a client of the demo's server.
        passes: the reports of the demo's runs.
        published: what this demo published.
    """
    instance = passes[0].instance
    total_events = sum(published.kinds.values())
    out.say(f"  published: {total_events} FileDeletedEvents, {published}")
    bronze = _rows(instance, "bronze/file_events")
    out.say(f"  bronze/file_events: {bronze} rows, one per stream message")
    silver = {key: _rows(instance, key) for key in SILVER_TABLES}
    figures = " + ".join(f"{n} {key.removeprefix('silver/')}" for key, n in silver.items())
    total = sum(silver.values())
    matches = "one row per bronze row" if total == bronze else f"bronze has {bronze}"
    out.say(f"  silver: {figures} = {total}, {matches}")
    rules: dict[str, int] = {}
    for report in passes:
        for name, value in report.metadata.get("silver/quarantine", {}).items():
            if name.startswith("quarantined_"):
                rule = name.removeprefix("quarantined_")
                rules[rule] = rules.get(rule, 0) + int(value)
    by_rule = ", ".join(f"{rule} {n}" for rule, n in sorted(rules.items()) if n)
    out.say(f"  quarantined by rule: {by_rule or 'none'} (this demo)")
    checks = {name: passed for report in passes for name, passed in report.checks.items()}
    failed = sorted(name for name, passed in checks.items() if not passed)
    out.say(f"  quality checks: {len(checks)} evaluated, failed: {', '.join(failed) or 'none'}")
    caught_up = True
    by_stream: dict[str, list[str]] = {}
    for ingest in INGESTS:
        consumer = js.consumers.info(ingest.stream, ingest.durable)
        caught_up &= consumer.num_pending == 0
        by_stream.setdefault(ingest.stream, []).append(
            f"{consumer.name} {consumer.num_pending} pending"
        )
    for stream, consumers in by_stream.items():
        last_seq = js.streams.info(stream).last_seq
        state = "caught up" if caught_up else "NOT CAUGHT UP"
        out.say(f"  consumers: {', '.join(consumers)} on {stream} (last seq {last_seq}): {state}")
    runs = ", ".join((report.run_id or "?")[:8] for report in passes)
    out.say(f"  Dagster runs: {runs} in {settings.dagster_home}")
    return caught_up


def print_next_steps(out: DemoOutput, settings: Settings, nats_url: str | None) -> None:
    """Prints what to try next: the UI, `jsl status`, more events, a table read with Spark.

    Args:
        out: the demo's output.
        settings: where the data lives.
        nats_url: the server, when it is not the embedded one (`NATS_URL`, which the commands
            read themselves: it is not printed, as it may hold credentials).
    """
    server = "" if nats_url else " --embedded"
    table = f"{settings.lakehouse_root}/silver/file_deleted"
    commands = (
        ("make dev", "the Dagster UI on http://localhost:3000: these runs, assets, checks"),
        (f"jsl status{server}", "streams, consumers, checkpoints, watermarks"),
        (f"jsl generate{server} --count 1000 --bad-share 0.05", "more events"),
    )
    out.say("next (jsl is .venv/bin/jsl):")
    width = max(len(command) for command, _ in commands)
    for command, what in commands:
        out.say(f"  {command:<{width}}  {what}")
    if table.startswith("s3a://"):
        out.say(f"  the tables ({settings.lakehouse_root}) are in {settings.data_dir / 's3'}:")
        out.say("  `jsl demo --s3` serves them again while it runs (docs/deploy.md)")
        return
    out.say("  read a table with Spark:")
    out.say(
        '    .venv/bin/python -c "from resources.spark import SparkResource; '
        "SparkResource(ui_enabled=False).get_session()"
        f".read.format('delta').load('{table}').show()\""
    )
