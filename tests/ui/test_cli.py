"""The command lines docs/dagster.md gives CI users and newcomers, run exactly as written.

Each test gets a fresh deployment (`cli_env`: its own nats-server, DAGSTER_HOME and tables)
and runs `dagster ...` as a subprocess from the project directory; what the runs did is
read back from the Dagster instance in DAGSTER_HOME, the stream's consumer and the Delta
table's directory. `test_docs_list_only_commands_these_tests_run` keeps the doc honest.
"""

import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from dagster import AssetKey, DagsterRunStatus, IntMetadataValue, RunsFilter

from pipelines.file_trash.topology import BRONZE_FILE_EVENTS
from sensors.stream import BACKFILL_TAG, PIECE_TAG
from tests.ui import Webserver
from tests.ui.conftest import (
    INSTANCE_YAML,
    PROJECT_DIR,
    WEBSERVER_START_TIMEOUT,
    CodeLocationEnv,
    free_port,
    interrupt_process_group,
    stop_process_group,
    subprocess_env,
)

DOC = PROJECT_DIR / "docs" / "dagster.md"
BRONZE_KEY = AssetKey(["bronze", BRONZE_FILE_EVENTS.name])
RUN_TIMEOUT = 600.0  # seconds: a JVM start and a Delta commit on a shared 2-core machine


def piece_config(end_seq: int) -> str:
    """`--config-json` bounding a bronze file_events run at `end_seq` (a backfill piece)."""
    return json.dumps({"ops": {"bronze__file_events": {"config": {"end_seq": end_seq}}}})


# The commands, exactly as docs/dagster.md prints them.
VALIDATE_MODULE = "dagster definitions validate -m pipelines.definitions"
VALIDATE_WORKSPACE = "dagster definitions validate -w workspace.yaml"
ASSET_LIST = "dagster asset list -m pipelines.definitions"
MATERIALIZE = "dagster asset materialize -m pipelines.definitions --select bronze/file_events"
JOB_EXECUTE = "dagster job execute -m pipelines.definitions -j ingest_file_events"
MATERIALIZE_PIECE = f"{MATERIALIZE} --config-json '{piece_config(500)}'"
BACKFILL_TAGS = {
    BACKFILL_TAG: f"{BRONZE_FILE_EVENTS.stream}:{BRONZE_FILE_EVENTS.durable}:1-1000",
    PIECE_TAG: "2/2",
}
LAUNCH_PIECE = (
    "dagster job launch -w workspace.yaml -j ingest_file_events "
    f"--config-json '{piece_config(1000)}' --tags '{json.dumps(BACKFILL_TAGS)}'"
)
JOB_BACKFILL = "dagster job backfill -w workspace.yaml -j ingest_file_events --noprompt"
REPLAY = "dagster job execute -m pipelines.definitions -j replay_file_events -c replay.yaml"
REPLAY_YAML = """\
ops:
  replay_file_events_range:
    config:
      start_seq: 101
      end_seq: 200
"""
MAKE_DEV = "make dev"
MAKE_DEV_ON_PORT = "DAGSTER_WEBSERVER_PORT=3001 make dev"
MAKEFILE_DEV_RECIPE = "$(PY) -m pipelines.cli dev"  # what `make dev` runs after `setup`

COMMANDS = {
    VALIDATE_MODULE,
    VALIDATE_WORKSPACE,
    ASSET_LIST,
    MATERIALIZE,
    JOB_EXECUTE,
    MATERIALIZE_PIECE,
    LAUNCH_PIECE,
    JOB_BACKFILL,
    REPLAY,
    MAKE_DEV,
    MAKE_DEV_ON_PORT,
}


def run(env: CodeLocationEnv, command: str, cwd: Path = PROJECT_DIR) -> subprocess.CompletedProcess:
    """Runs one documented `dagster` command line, failing the test if it exits non-zero."""
    args = shlex.split(command)
    assert args[0] == "dagster", command
    result = env.dagster(*args[1:], cwd=cwd)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"`{command}` exited with {result.returncode}:\n{output[-6000:]}"
    return result


def bronze_materializations(env: CodeLocationEnv) -> list[tuple[str, dict[str, int]]]:
    """(run id, integer metadata) of every bronze file_events materialisation, oldest first."""
    with env.instance() as instance:
        records = instance.fetch_materializations(BRONZE_KEY, limit=100, ascending=True).records
        return [
            (
                record.event_log_entry.run_id,
                {
                    label: value.value
                    for label, value in record.asset_materialization.metadata.items()
                    if isinstance(value, IntMetadataValue)
                },
            )
            for record in records
        ]


def wait_for_runs_to_finish(env: CodeLocationEnv, timeout: float) -> list:
    """Waits until no run in DAGSTER_HOME is unfinished; returns all runs, newest first."""
    deadline = time.monotonic() + timeout
    while True:
        with env.instance() as instance:
            runs = instance.get_runs()
        if runs and all(run.is_finished for run in runs):
            return runs
        assert time.monotonic() < deadline, (
            f"runs still unfinished after {timeout}s: {[(r.run_id, r.status) for r in runs]}"
        )
        time.sleep(2)


def test_definitions_validate_accepts_the_module_and_the_workspace(cli_env):
    for command in (VALIDATE_MODULE, VALIDATE_WORKSPACE):
        result = run(cli_env, command)
        assert "Validation successful" in result.stdout + result.stderr, result.stdout[-3000:]


def test_asset_list_prints_every_materializable_asset_of_the_code_location(cli_env):
    from pipelines.definitions import defs

    listed = run(cli_env, ASSET_LIST).stdout.split()

    graph = defs.resolve_asset_graph()
    materializable = {
        key.to_user_string()
        for key in graph.get_all_asset_keys()
        if graph.get(key).is_materializable
    }
    assert BRONZE_KEY.to_user_string() in materializable
    assert set(listed) == materializable  # external assets (the stream) are not listed


def test_asset_materialize_lands_the_published_events_and_records_them_in_dagster_home(cli_env):
    last_seq = cli_env.publish(120)

    run(cli_env, MATERIALIZE)

    [(_, metadata)] = bronze_materializations(cli_env)
    assert (metadata["range_start"], metadata["range_end"]) == (1, last_seq)
    assert metadata["messages"] == metadata["dagster/row_count"] == last_seq == 120
    assert cli_env.consumer_ack_floor() == last_seq
    assert (cli_env.bronze_table / "_delta_log").is_dir()


def test_job_execute_runs_the_ingest_job_to_success_in_dagster_home(cli_env):
    last_seq = cli_env.publish(80)

    run(cli_env, JOB_EXECUTE)

    with cli_env.instance() as instance:
        [ingest_run] = instance.get_runs(filters=RunsFilter(job_name="ingest_file_events"))
    assert ingest_run.status == DagsterRunStatus.SUCCESS
    [(run_id, metadata)] = bronze_materializations(cli_env)
    assert run_id == ingest_run.run_id
    assert metadata["messages"] == metadata["dagster/row_count"] == last_seq == 80
    assert cli_env.consumer_ack_floor() == last_seq


def test_backfill_from_the_cli_lands_a_backlog_in_bounded_pieces_exactly_once(cli_env):
    assert cli_env.publish(1000) == 1000

    run(cli_env, MATERIALIZE_PIECE)
    run(cli_env, LAUNCH_PIECE)  # returns once launched: the run goes on in the code server
    runs = wait_for_runs_to_finish(cli_env, RUN_TIMEOUT)

    assert [r.status for r in runs] == [DagsterRunStatus.SUCCESS] * 2, runs
    launched = runs[0]
    assert {k: launched.tags.get(k) for k in BACKFILL_TAGS} == BACKFILL_TAGS
    pieces = bronze_materializations(cli_env)
    assert [(m["range_start"], m["range_end"]) for _, m in pieces] == [(1, 500), (501, 1000)]
    assert [m["dagster/row_count"] for _, m in pieces] == [500, 1000]
    assert pieces[1][0] == launched.run_id
    assert cli_env.consumer_ack_floor() == 1000


def test_job_backfill_refuses_the_unpartitioned_ingest_job_and_says_why(cli_env):
    args = shlex.split(JOB_BACKFILL)
    result = cli_env.dagster(*args[1:])

    assert result.returncode == 2  # a usage error: nothing was launched
    assert "Job `ingest_file_events` is not partitioned" in result.stdout + result.stderr
    with cli_env.instance() as instance:
        assert instance.get_runs() == []


def test_replay_job_rewrites_the_configured_range_without_moving_the_consumer(cli_env, tmp_path):
    cli_env.publish(300)
    (tmp_path / "replay.yaml").write_text(REPLAY_YAML)

    run(cli_env, REPLAY, cwd=tmp_path)

    [(_, metadata)] = bronze_materializations(cli_env)
    assert (metadata["replay_start"], metadata["replay_end"]) == (101, 200)
    assert metadata["messages"] == 100
    assert cli_env.consumer_ack_floor() == 0
    assert (cli_env.bronze_table / "_delta_log").is_dir()


def test_make_dev_serves_the_ui_whose_daemon_runs_a_launched_ingest(tmp_path):
    port = free_port()
    env = subprocess_env(tmp_path / "data", nats_url=None)  # `make dev` starts its own server
    env["DAGSTER_WEBSERVER_PORT"] = str(port)
    # Not warmed up (tested in tests/resources/ and tests/cluster/): the one run here pays for
    # its first Delta write itself, rather than the warm-up's 20-30 s of both cores first.
    env["JSL_DEV_SPARK_WARM_UP"] = "off"
    log_path = tmp_path / "make-dev.log"
    with log_path.open("wb") as log:
        # What `make dev` runs after `make setup` (the Makefile's recipe, checked below).
        process = subprocess.Popen(
            [sys.executable, "-m", "pipelines.cli", "dev"],
            cwd=PROJECT_DIR,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = Webserver(f"http://127.0.0.1:{port}", log_path=log_path, process=process)
    left_after_ctrl_c: list[str] = []
    try:
        server.wait_until_loaded(WEBSERVER_START_TIMEOUT)
        nats_url = re.search(r"started embedded nats-server at (\S+)", server.log_tail(10**6))
        assert nats_url, server.log_tail()
        dev_env = CodeLocationEnv(
            nats_url=nats_url.group(1),
            data_dir=tmp_path / "data",
            dagster_home=tmp_path / "data" / "dagster_home",
            lakehouse_root=tmp_path / "data" / "lakehouse",
            env=env,
        )
        last_seq = dev_env.publish(50)

        run_id = server.launch_run("ingest_file_events")  # queued: the daemon starts it
        assert server.wait_for_run(run_id, RUN_TIMEOUT) == "SUCCESS", server.run_failure_report(
            run_id
        )
        assert dev_env.consumer_ack_floor() == last_seq
        left_after_ctrl_c = interrupt_process_group(process)
    finally:
        server.close()
        stop_process_group(process)

    assert not left_after_ctrl_c, f"still running a minute after Ctrl-C: {left_after_ctrl_c}"
    [(run_id_in_home, metadata)] = bronze_materializations(dev_env)
    assert run_id_in_home == run_id
    assert metadata["messages"] == last_seq
    assert "stopping the embedded nats-server" in log_path.read_text(errors="replace")


def test_docs_list_only_commands_these_tests_run():
    documented = set()
    for block in re.findall(r"```(?:bash|sh|console)\n(.*?)```", DOC.read_text(), re.S):
        for line in block.splitlines():
            line = line.strip()
            if line and not line.startswith(("#", "export ", "mkdir ")):
                documented.add(line)

    assert documented, f"{DOC} shows no commands"
    assert documented <= COMMANDS, (
        f"{DOC} shows commands no test runs: {sorted(documented - COMMANDS)}"
    )
    text = DOC.read_text()
    assert REPLAY_YAML in text, f"{DOC} must show replay.yaml as REPLAY_YAML has it"
    coordinator = INSTANCE_YAML.split("telemetry:")[0]
    assert coordinator in text, f"{DOC} must show the run coordinator the tests configure"
    makefile = (PROJECT_DIR / "Makefile").read_text()
    assert re.search(r"^dev: .*\n\t" + re.escape(MAKEFILE_DEV_RECIPE) + "$", makefile, re.M), (
        f"`make dev` no longer runs `{MAKEFILE_DEV_RECIPE}`: update the test and {DOC}"
    )


def test_job_execute_exits_non_zero_when_the_run_fails(cli_env):
    cli_env.env["NATS_URL"] = f"nats://127.0.0.1:{free_port()}"  # nothing listens there

    result = cli_env.dagster(*shlex.split(JOB_EXECUTE)[1:])

    output = result.stdout + result.stderr
    assert result.returncode == 1, output[-6000:]
    assert "resulted in failure" in output, output[-6000:]
    with cli_env.instance() as instance:
        [failed] = instance.get_runs()
    assert failed.status == DagsterRunStatus.FAILURE
