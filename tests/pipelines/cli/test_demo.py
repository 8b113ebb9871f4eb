"""The README's demo command, as a new user runs it: twice, on an embedded nats-server."""

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from delta.tables import DeltaTable

from pipelines.definitions import defs
from pipelines.lakehouse.delta_log import read_table_files
from resources.jetstream import EmbeddedNatsServer, JetStreamResource
from resources.object_store.server import EmbeddedS3Server

PROJECT = Path(__file__).resolve().parents[3]


MAX_LINES = 50  # what `make demo` may print by default (issue #15)
README = PROJECT / "README.md"


def run_demo(
    data_dir: Path, events: int, nats_url: str | None = None, *options: str
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "DAGSTER_HOME")}
    env["LAKEHOUSE_DATA_DIR"] = str(data_dir)
    if nats_url is not None:
        env["NATS_URL"] = nats_url
    return subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "demo", "--events", str(events), *options],
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

    for run in (first, second):
        check_quiet_output(run, tmp_path)
    assert "[demo] nats-server: embedded at nats://" in second.stdout
    assert "[demo] topology: unchanged 1 stream, 3 consumers, 2 kv buckets" in second.stdout
    # One line per asset materialised: 10 in pass 1, 5 in pass 2. The second demo's 80
    # events are seqs 235-314 (the first's 120 and the 114 trash events it published come
    # before), and its pass 1 publishes 76 trash events, which pass 2 lands.
    assert asset_lines(second.stdout, "pass 1") == 10, second.stdout
    assert asset_lines(second.stdout, "pass 2") == 5, second.stdout
    assert "bronze/file_events             +80 rows (seq 235-314), 314 in" in second.stdout
    assert "bronze/file_events             +76 rows (seq 315-390), 390 in" in second.stdout
    assert "[demo]   silver: 190 file_deleted + 190 file_trashed + 10 quarantine = 390" in (
        second.stdout
    )
    assert summary_labels(second.stdout) == summary_labels(readme_sample())
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
    # Pass 1 materialises every asset, so every check of the code location is evaluated.
    checks = len(defs.resolve_asset_graph().asset_check_keys)
    assert f"[demo]   quality checks: {checks} evaluated, failed: none\n" in second.stdout

    # The embedded server is stopped; restart one on the demo's store to check the consumer.
    with (
        EmbeddedNatsServer(store_dir=tmp_path / "nats") as server,
        JetStreamResource(servers=server.url).client() as js,
    ):
        consumer = js.consumers.info("FILE_EVENTS", "lakehouse-bronze")
        assert consumer.ack_floor_stream_seq == js.streams.info("FILE_EVENTS").last_seq
        assert consumer.ack_floor_stream_seq == 390


def test_demo_with_s3_keeps_every_table_in_the_s3_server_with_exact_counts(
    tmp_path, monkeypatch, weed_binary
):
    # 120 events, 6 of them bad; pass 2 lands the 114 FilePlacedInTrashEvents of pass 1.
    done = run_demo(tmp_path, 120, None, "--s3")

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    check_quiet_output(done, tmp_path)
    assert re.search(
        r"\[demo\] S3 server: SeaweedFS at http://127\.0\.0\.1:\d+, tables at "
        r"s3a://lakehouse/lakehouse, data " + re.escape(str(tmp_path / "s3")),
        done.stdout,
    ), done.stdout
    assert "[demo]   silver: 114 file_deleted + 114 file_trashed + 6 quarantine = 234" in (
        done.stdout
    )
    assert not (tmp_path / "lakehouse").exists()  # nothing on the local disk
    # The tables, read back through the S3 API from the demo's store (a server on its data).
    with EmbeddedS3Server(
        data_dir=tmp_path / "s3",
        access_key=os.environ["AWS_ACCESS_KEY_ID"],
        secret_key=os.environ["AWS_SECRET_ACCESS_KEY"],
    ) as server:
        conf = {**json.loads(os.environ.get("JSL_SPARK_CONF") or "{}"), **server.spark_conf()}
        monkeypatch.setenv("JSL_SPARK_CONF", json.dumps(conf))
        # `jsl contract diff` reads the silver tables' logs through the S3 API, `jsl tables`
        # counts them with Spark through S3A.
        env = {
            **os.environ,
            "LAKEHOUSE_DATA_DIR": str(tmp_path),
            "LAKEHOUSE_ROOT": server.root("lakehouse"),
        }
        jsl = str(Path(sys.executable).parent / "jsl")
        diff = subprocess.run(
            [jsl, "contract", "diff"], cwd=PROJECT, env=env, capture_output=True, text=True
        )
        listed = subprocess.run(
            [jsl, "tables", "--sample", "0"], cwd=PROJECT, env=env, capture_output=True, text=True
        )
        rows = {
            table: read_table_files(server.root(f"lakehouse/{table}")).rows
            for table in (
                "bronze/file_events",
                "silver/file_deleted",
                "silver/file_trashed",
                "silver/quarantine",
                "audit/audit_log",
            )
        }
    assert diff.returncode == 0, diff.stdout + diff.stderr
    assert "the tables fit the contract" in diff.stdout, diff.stdout
    assert listed.returncode == 0, listed.stdout + listed.stderr
    for table, count in (("bronze/file_events", 234), ("silver/quarantine", 6)):
        assert f"{table}: {count} rows" in listed.stdout, listed.stdout
    assert rows == {
        "bronze/file_events": 234,
        "silver/file_deleted": 114,
        "silver/file_trashed": 114,
        "silver/quarantine": 6,
        "audit/audit_log": 234,
    }


def check_quiet_output(run: subprocess.CompletedProcess, data_dir: Path) -> None:
    """First where the data goes, then at most MAX_LINES lines, none of Dagster's, Spark's or
    Ivy's; all of it in the log."""
    lines = (run.stdout + run.stderr).splitlines()
    assert lines[0] == data_line(data_dir), run.stdout + run.stderr
    assert len(lines[1:]) <= MAX_LINES, run.stdout
    assert all(line.startswith("[demo]") for line in lines[1:]), run.stdout + run.stderr
    for noise in ("SupersessionWarning", "DEBUG", "Ivy Default Cache", "ASSET_MATERIALIZATION"):
        assert noise not in run.stdout + run.stderr, noise
    log_path = Path(lines[-1].removeprefix("[demo] full log: "))
    log = log_path.read_text()
    assert "ASSET_MATERIALIZATION" in log and "STEP_SUCCESS" in log
    console = run.stdout.splitlines()
    assert console[0] in log and console[2] in log  # the console lines are in the log too


def data_line(data_dir: Path) -> str:
    """The demo's first line: its data dir, tables and Dagster home (`jsl`'s first line)."""
    return f"data: {data_dir} (tables: {data_dir}/lakehouse, Dagster home: {data_dir}/dagster_home)"


def asset_lines(output: str, step: str) -> int:
    """How many `[demo]   <group>/<asset>  ...` lines the step (`pass 1`) printed."""
    lines = output[output.index(f"[demo] {step}:") :].splitlines()[1:]
    count = 0
    for line in lines:
        if not re.match(r"\[demo\]   \w+/\w+ ", line):
            break
        count += 1
    return count


def readme_sample() -> str:
    """The README's sample of the demo's summary: the code block with `[demo] summary`."""
    text = README.read_text()
    summary = text.index("[demo] summary")
    return text[text.rindex("```", 0, summary) + 3 : text.index("```", summary)]


def summary_labels(output: str) -> list[str]:
    """The label of each summary line (`published`, `silver`, ...), from `[demo] summary` on."""
    lines = output[output.index("[demo] summary") :].splitlines()
    labels = []
    for line in lines[1:]:
        match = re.match(r"\[demo\]   (\S[^:]*):", line)
        if match is None:
            break
        labels.append(match.group(1))
    return labels


def test_a_failing_step_prints_the_step_the_error_and_the_log(tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"nats://127.0.0.1:{probe.getsockname()[1]}"
    result = run_demo(tmp_path, 10, nats_url=url)

    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == data_line(tmp_path)
    assert "[demo] FAILED: topology" in result.stdout, result.stdout + result.stderr
    log_path = Path(lines[-1].removeprefix("[demo] full log: "))
    assert log_path.is_file() and log_path.parent == tmp_path / "logs"
    assert "Traceback" in log_path.read_text()
    assert len(lines[1:]) <= 6, result.stdout
