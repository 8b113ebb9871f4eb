"""The README's demo command, as a new user runs it: twice, on an embedded nats-server."""

import os
import subprocess
import sys
from pathlib import Path

from delta.tables import DeltaTable

from resources.jetstream import EmbeddedNatsServer, JetStreamResource

PROJECT = Path(__file__).resolve().parents[2]


def run_demo(data_dir: Path, events: int) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "DAGSTER_HOME")}
    env["LAKEHOUSE_DATA_DIR"] = str(data_dir)
    return subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "demo", "--events", str(events)],
        env=env,
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_demo_twice_lands_every_event_and_leaves_the_consumers_caught_up(tmp_path, spark):
    # 120 then 80 events, 5% of them bad (6 + 4): 190 good ones, each of which makes silver
    # publish a FilePlacedInTrashEvent that the demo's second pass lands too.
    first = run_demo(tmp_path, 120)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    second = run_demo(tmp_path, 80)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]

    assert "started embedded nats-server" in second.stdout
    assert "stream 'FILE_EVENTS': unchanged" in second.stdout
    table_path = tmp_path / "lakehouse" / "bronze" / "file_events"
    assert (table_path / "_delta_log").is_dir()
    rows = DeltaTable.forPath(spark, str(table_path)).toDF().select("seq").collect()
    assert sorted(r.seq for r in rows) == list(range(1, 200 + 190 + 1))
    lakehouse = tmp_path / "lakehouse"
    for table, rows in (
        ("silver/file_deleted", 190),
        ("silver/file_trashed", 190),
        ("silver/quarantine", 10),
        ("audit/audit_log", 390),
    ):
        assert DeltaTable.forPath(spark, str(lakehouse / table)).toDF().count() == rows, table
    assert "quality checks: 24 evaluated, failed: none" in second.stdout

    # The embedded server is stopped; restart one on the demo's store to check the consumer.
    with (
        EmbeddedNatsServer(store_dir=tmp_path / "nats") as server,
        JetStreamResource(servers=server.url).client() as js,
    ):
        consumer = js.consumers.info("FILE_EVENTS", "lakehouse-bronze")
        assert consumer.ack_floor_stream_seq == js.streams.info("FILE_EVENTS").last_seq
        assert consumer.ack_floor_stream_seq == 390
