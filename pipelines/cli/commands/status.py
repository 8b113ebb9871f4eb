"""`jsl status`: the pipeline's state on one screen, or as JSON for scripts and CI.

    jsl status [--json] [--tables [--lakehouse-root ROOT]] [--nats-url URL | --embedded]
               [--timeout SECONDS]

Shows each declared stream (last sequence, messages, bytes, first and last message time),
each ingest's consumer (ack floor, pending lag, redeliveries), checkpoint (committed end, the
last run and its range, a planned range left in flight) and lease, each stage watermark and
how far it is behind bronze, and the replay requests not finished yet. Only JetStream is
asked; `--tables` also starts Spark to read each Delta table's version, rows and last commit.

The server is `--nats-url`, else `$NATS_URL`, else nats://127.0.0.1:4222; `--embedded`
starts a nats-server on the demo's store instead (`$LAKEHOUSE_DATA_DIR/nats`; not while
`make dev` runs on it). Errors (no server, a stream or bucket missing) are one line on
stderr with exit code 1.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import json
import sys
from collections.abc import Iterator, Sequence

from pipelines.cli import status
from pipelines.cli.commands import (
    add_server_arguments,
    jetstream_resource,
    server_url,
    settings_for,
    spark_session,
)
from pipelines.settings import Settings
from resources.jetstream.connection.settings import redact_url
from resources.jetstream.errors import JetStreamError

PROG = "jsl status"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the `status` options to `parser`.

    Args:
        parser: the `status` subparser of `jsl` (or a standalone parser).
    """
    parser.add_argument("--json", action="store_true", help="print the snapshot as JSON")
    parser.add_argument(
        "--tables",
        action="store_true",
        help="also each Delta table's version, rows and last commit (starts Spark)",
    )
    parser.add_argument(
        "--lakehouse-root",
        help="root of the Delta tables (default: $LAKEHOUSE_ROOT, else the data directory's)",
    )
    add_server_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Runs `jsl status`.

    Args:
        args: the parsed arguments (see `add_arguments`).

    Returns:
        The exit code: 0 with the status on stdout, 1 with a one-line message on stderr
        (bad arguments, no server, a declared stream or KV bucket missing).
    """
    try:
        if args.timeout <= 0:
            raise ValueError(f"--timeout must be positive, got {args.timeout!r}")
        with server_url(args, create_store=False) as url:
            resource = jetstream_resource(args, url)
            with resource.client() as js:
                now = dt.datetime.now(dt.timezone.utc)
                snapshot = status.take_snapshot(js, server=redact_url(url), now=now)
    except (JetStreamError, OSError, ValueError) as error:
        message = " ".join(str(error).split())
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return 1
    if args.tables:
        settings = settings_for(args)
        root = args.lakehouse_root or settings.lakehouse_root
        with _spark_session(settings) as spark:
            tables = status.table_statuses(spark, root)
        snapshot = dataclasses.replace(snapshot, tables=tables)
    print(json.dumps(snapshot.to_json(), indent=2) if args.json else render(snapshot))
    return 0


@contextlib.contextmanager
def _spark_session(settings: Settings) -> Iterator:
    """The active SparkSession if there is one (left running), else a new one (its output in
    a log file: `spark_session`), stopped after."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    with spark_session(PROG, settings, ui_enabled=False) as session:
        try:
            yield session
        finally:
            session.stop()


STREAM = ("STREAM", "SUBJECTS", "LAST SEQ", "MESSAGES", "BYTES", "FIRST", "LAST")
INGEST = (
    "INGEST",
    "CONSUMER",
    "ACK FLOOR",
    "PENDING",
    "REDELIVERED",
    "CHECKPOINT",
    "LAST RUN",
    "LEASE",
)
STAGE = ("STAGE", "POSITION", "BEHIND BRONZE", "LAST RUN")
REPLAY = ("REPLAY REQUEST", "STATUS", "RANGE", "RUNS")
TABLE = ("TABLE", "VERSION", "ROWS", "LAST COMMIT")


def render(snapshot: status.StatusSnapshot) -> str:
    """The snapshot as aligned text tables, one per section."""
    sections = [
        f"NATS {snapshot.server} at {_time(snapshot.taken_at)}",
        _table(STREAM, [_stream_row(s) for s in snapshot.streams]),
        _table(INGEST, [_ingest_row(i) for i in snapshot.ingests]),
        _table(STAGE, [_stage_row(s) for s in snapshot.stages]),
    ]
    if snapshot.replays:
        rows = [(r.key, r.status, r.request, len(r.run_ids)) for r in snapshot.replays]
        sections.append(_table(REPLAY, rows))
    else:
        sections.append("REPLAY REQUESTS: none open")
    if snapshot.tables is not None:
        sections.append(_table(TABLE, [_table_row(t) for t in snapshot.tables]))
    return "\n\n".join(sections)


def _stream_row(s: status.StreamStatus) -> tuple:
    subjects = ",".join(s.subjects)
    first, last = _time(s.first_time), _time(s.last_time)
    return (s.name, subjects, s.last_seq, s.messages, _size(s.bytes), first, last)


def _ingest_row(i: status.IngestStatus) -> tuple:
    consumer = f"{i.stream}/{i.consumer}" + ("" if i.consumer_exists else " (not created)")
    position = (i.ack_floor, i.pending, i.redelivered)
    return (i.name, consumer, *position, _checkpoint(i), _last_run(i), _lease(i.lease))


def _stage_row(s: status.StageStatus) -> tuple:
    last = f"{_run(s.run_id)} {_time(s.at)}" if s.run_id else "never"
    return (s.stage, s.position, s.lag, last)


def _table_row(t: status.TableStatus) -> tuple:
    if t.version is None:
        return (t.name, None, None, "not created")
    return (t.name, t.version, t.rows, _time(t.last_commit))


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns aligned; numbers to the right, None as '-'."""
    cells = [list(header)] + [["-" if v is None else str(v) for v in row] for row in rows]
    right = [any(isinstance(row[i], int) for row in rows) for i in range(len(header))]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(
            cell.rjust(width) if numeric else cell.ljust(width)
            for cell, width, numeric in zip(line, widths, right, strict=True)
        ).rstrip()
        for line in cells
    )


def _time(value: dt.datetime | str | None) -> str | None:
    if value is None:
        return None
    moment = dt.datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _run(run_id: str | None) -> str:
    return (run_id or "?")[:8]  # as the Dagster UI shortens run ids; --json has them whole


def _checkpoint(i: status.IngestStatus) -> str:
    if i.checkpoint == "none":
        return "never ran"
    if i.planned:
        text = f"planned {i.planned[0]}-{i.planned[1]} by {_run(i.planned_run_id)}"
    else:
        text = f"committed to {i.committed_end}"
    return text + (f", {len(i.gaps)} gaps" if i.gaps else "")


def _last_run(i: status.IngestStatus) -> str:
    if i.last_run_id is None:
        return "-"
    span = f"{i.last_run_range[0]}-{i.last_run_range[1]}" if i.last_run_range else "?"
    recovered = f", recovered by {_run(i.last_recovered_by)}" if i.last_recovered_by else ""
    return f"{span} {_run(i.last_run_id)} {_time(i.last_run_at)}{recovered}"


def _lease(lease: status.LeaseStatus | None) -> str:
    if lease is None:
        return "free"
    state = "expired" if lease.expired else "until"
    return f"{_run(lease.holder)} {state} {_time(lease.expires_at)}"
