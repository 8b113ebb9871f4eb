"""`jsl status` against a real nats-server of its own and real Delta tables.

One module-wide scenario: the file trash topology provisioned, 50 events published, one
bronze ingest run of at most 30 of them (real Spark, real Delta), and the silver stage's
watermark saved at 25. Tests that add a lease or replay requests take them away again.
"""

import argparse
import dataclasses
import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.cli import main as cli
from pipelines.cli.commands import status
from pipelines.file_trash.generator import generate_event_mix, publish_events
from pipelines.file_trash.topology import (
    AUDIT_LOG,
    BRONZE_FILE_EVENTS,
    CHECKPOINTS,
    FILE_EVENTS,
    FILE_TRASH_TOPOLOGY,
    REPLAY_REQUESTS,
)
from pipelines.ingest.lease import acquire_lease
from pipelines.ingest.options import IngestRunOptions
from pipelines.ingest.run import ingest
from pipelines.lakehouse.watermarks import WatermarkStore
from resources.jetstream import EmbeddedNatsServer, JetStreamResource, reconcile

NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone.utc)
RUN_ID = "0badc0de-1111-2222-3333-444455556666"


@dataclasses.dataclass(frozen=True)
class Scenario:
    url: str
    root: Path


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory, spark) -> Iterator[Scenario]:
    """A provisioned server after 50 events, one bronze run of 30 and silver at 25."""
    base = tmp_path_factory.mktemp("status")
    root = base / "lakehouse"
    with EmbeddedNatsServer(store_dir=base / "nats") as server:
        with JetStreamResource(servers=server.url).client() as js:
            reconcile(js, FILE_TRASH_TOPOLOGY)
            publish_events(js, generate_event_mix(50, now=NOW, seed=7))
            checkpoints = js.key_value(CHECKPOINTS.bucket)
            spec = dataclasses.replace(BRONZE_FILE_EVENTS, max_messages=30)
            path = str(root / BRONZE_FILE_EVENTS.table)
            ingest(js, spark, spec, path, checkpoints=checkpoints, run_id=RUN_ID)
            watermarks = WatermarkStore(checkpoints)
            mark = watermarks.load("silver.file_events").advanced(25, run_id="silver-1", now=NOW)
            watermarks.save(mark)
        yield Scenario(server.url, root)


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="jsl status")
    status.add_arguments(parser)
    return parser.parse_args(list(argv))


def status_json(url: str, capsys, *argv: str) -> dict:
    assert status.run(parse("--json", "--nats-url", url, *argv)) == 0
    return json.loads(capsys.readouterr().out)


def by(items: list[dict], field: str) -> dict[str, dict]:
    return {item[field]: item for item in items}


def test_json_reports_the_stream_consumers_checkpoint_and_watermarks_exactly(scenario, capsys):
    doc = status_json(scenario.url, capsys)

    [stream] = doc["streams"]
    assert (stream["name"], stream["first_seq"], stream["last_seq"], stream["messages"]) == (
        "FILE_EVENTS",
        1,
        50,
        50,
    )
    assert stream["bytes"] > 0 and stream["first_time"] <= stream["last_time"]
    ingests = by(doc["ingests"], "name")
    bronze = ingests["file_events"]
    assert bronze["consumer"] == "lakehouse-bronze"
    assert (bronze["ack_floor"], bronze["pending"], bronze["redelivered"]) == (30, 20, 0)
    assert bronze["checkpoint"] == "committed"
    assert (bronze["committed_end"], bronze["last_run_range"]) == (30, [1, 30])
    assert bronze["last_run_id"] == RUN_ID and bronze["planned"] is None
    assert bronze["lease"] is None
    # The audit logger sees all 50 (files.>) and never ran; the notification service
    # only sees files.trashed, of which there is none.
    assert (ingests["audit_log"]["pending"], ingests["audit_log"]["checkpoint"]) == (50, "none")
    assert ingests["trash_notifications"]["pending"] == 0
    stages = by(doc["stages"], "stage")
    assert stages["silver.file_events"] == {
        "stage": "silver.file_events",
        "position": 25,
        "run_id": "silver-1",
        "at": NOW.isoformat(),
        "bronze_end": 30,
        "lag": 5,
    }
    assert (
        stages["downstream.file_trashed"]["position"],
        stages["downstream.file_trashed"]["lag"],
    ) == (0, 30)
    assert doc["replays"] == [] and doc["tables"] is None


def test_text_names_each_stream_consumer_and_stage(scenario, capsys):
    assert status.run(parse("--nats-url", scenario.url)) == 0

    out = capsys.readouterr().out
    for name in (
        "FILE_EVENTS",
        "FILE_EVENTS/lakehouse-bronze",
        "FILE_EVENTS/audit-logger",
        "FILE_EVENTS/notification-service",
        "silver.file_events",
        "downstream.file_trashed",
    ):
        assert name in out
    assert "committed to 30" in out and f"1-30 {RUN_ID[:8]}" in out
    assert "REPLAY REQUESTS: none open" in out


def test_a_held_lease_and_open_replay_requests_show(scenario, capsys):
    with JetStreamResource(servers=scenario.url).client() as js:
        checkpoints = js.key_value(CHECKPOINTS.bucket)
        lease = acquire_lease(
            checkpoints,
            stream=FILE_EVENTS.name,
            consumer=AUDIT_LOG.durable,
            holder="run-holding-the-lease",
            ttl=600,
        )
        replays = js.key_value(REPLAY_REQUESTS.bucket)
        replays.put("file_events.incident-1", json.dumps({"start_seq": 3, "end_seq": 9}).encode())
        done = {"start_seq": 1, "end_seq": 2, "status": "succeeded", "run_ids": ["r"]}
        replays.put("file_events.old", json.dumps(done).encode())
        try:
            doc = status_json(scenario.url, capsys)
            assert status.run(parse("--nats-url", scenario.url)) == 0
            text = capsys.readouterr().out
        finally:
            lease.release()
            replays.delete("file_events.incident-1")
            replays.delete("file_events.old")

    held = by(doc["ingests"], "name")["audit_log"]["lease"]
    assert held["holder"] == "run-holding-the-lease" and held["expired"] is False
    assert dt.datetime.fromisoformat(held["expires_at"]) == lease.expires_at
    assert doc["replays"] == [
        {"key": "file_events.incident-1", "status": "requested", "request": "3-9", "run_ids": []}
    ]
    assert "run-hold until" in text
    assert "file_events.incident-1  requested  3-9" in text and "file_events.old" not in text


def test_tables_reports_each_delta_tables_version_and_rows(scenario, spark, capsys):
    doc = status_json(scenario.url, capsys, "--tables", "--lakehouse-root", str(scenario.root))

    tables = by(doc["tables"], "name")
    bronze = tables["bronze/file_events"]
    committed = by(doc["ingests"], "name")["file_events"]["committed_version"]
    assert (bronze["version"], bronze["rows"]) == (committed, 30)
    assert bronze["last_commit"] is not None
    assert tables["silver/file_deleted"] == {
        "name": "silver/file_deleted",
        "path": f"{scenario.root}/silver/file_deleted",
        "version": None,
        "rows": None,
        "last_commit": None,
    }


def test_the_jsl_command_line_runs_status(scenario, capsys):
    assert cli.main(["status", "--nats-url", scenario.url]) == 0

    assert "FILE_EVENTS/lakehouse-bronze" in capsys.readouterr().out


@pytest.fixture
def bare_server(tmp_path: Path) -> Iterator[str]:
    """A nats-server of this test's own, with nothing provisioned."""
    with EmbeddedNatsServer(store_dir=tmp_path / "nats") as server:
        yield server.url


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.strip().splitlines()
    return line


def test_a_missing_stream_is_named_with_how_to_provision_it(bare_server, capsys):
    assert status.run(parse("--nats-url", bare_server)) == 1

    line = one_error_line(capsys)
    assert line.startswith(
        f"jsl status: error: stream 'FILE_EVENTS' does not exist on NATS server {bare_server}"
    )
    assert "make demo" in line and "--provision" in line


def test_a_missing_bucket_is_named_with_how_to_provision_it(bare_server, capsys):
    with JetStreamResource(servers=bare_server).client() as js:
        js.streams.add(FILE_EVENTS)

    assert status.run(parse("--nats-url", bare_server)) == 1

    line = one_error_line(capsys)
    assert line.startswith(
        "jsl status: error: KV bucket 'lakehouse-checkpoints' does not exist on NATS server "
        f"{bare_server}"
    )
    assert "make demo" in line


def test_an_unreachable_server_is_a_one_line_error_naming_it(capsys):
    args = parse("--nats-url", "nats://127.0.0.1:1", "--timeout", "0.5")

    assert status.run(args) == 1

    line = one_error_line(capsys)
    assert line.startswith("jsl status: error: cannot connect to NATS server nats://127.0.0.1:1")


class Crash(RuntimeError):
    """Stops an ingest run right after it recorded its plan."""


def crash_after_planning(step: str) -> None:
    if step == "planned":
        raise Crash(step)


def land_file_events(js, spark, tmp_path, run_id: str, **options) -> None:
    """One run of the file-events ingest into `tmp_path`'s bronze table."""
    ingest(
        js,
        spark,
        BRONZE_FILE_EVENTS,
        str(tmp_path / "bronze"),
        checkpoints=js.key_value(CHECKPOINTS.bucket),
        run_id=run_id,
        **options,
    )


def test_a_run_stopped_after_planning_shows_its_planned_range_then_its_recovery(
    bare_server, spark, tmp_path, capsys
):
    with JetStreamResource(servers=bare_server).client() as js:
        reconcile(js, FILE_TRASH_TOPOLOGY)
        publish_events(js, generate_event_mix(12, now=NOW, seed=8))
        with pytest.raises(Crash):
            crashing = IngestRunOptions(hook=crash_after_planning)
            land_file_events(js, spark, tmp_path, "run-that-stopped", options=crashing)

    doc = status_json(bare_server, capsys)
    assert status.run(parse("--nats-url", bare_server)) == 0
    text = capsys.readouterr().out

    bronze = by(doc["ingests"], "name")["file_events"]
    assert (bronze["checkpoint"], bronze["planned"], bronze["committed_end"]) == (
        "planned",
        [1, 12],
        0,
    )
    assert (bronze["ack_floor"], bronze["pending"]) == (0, 12)
    assert bronze["lease"] is None  # a run that raises still releases its lease
    assert "planned 1-12 by run-that" in text

    # The next run finishes that range: the status says it was a recovery, and by whom.
    with JetStreamResource(servers=bare_server).client() as js:
        land_file_events(js, spark, tmp_path, "run-recovering")
    bronze = by(status_json(bare_server, capsys)["ingests"], "name")["file_events"]
    assert (bronze["checkpoint"], bronze["last_run_range"]) == ("committed", [1, 12])
    assert (bronze["last_run_id"], bronze["last_recovered_by"]) == (
        "run-that-stopped",
        "run-recovering",
    )
    assert status.run(parse("--nats-url", bare_server)) == 0
    assert ", recovered by run-reco" in capsys.readouterr().out
