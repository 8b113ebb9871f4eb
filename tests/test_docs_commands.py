"""Every shell command that README.md and docs/*.md show is run here as written, or is run by a
named test, or is listed with the reason it cannot run on this machine; so the docs stay true.

A command added to the docs fails `test_every_documented_command_is_run_or_accounted_for`
until it is placed in one of the three tables below.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.file_trash.topology import FILE_TRASH_TOPOLOGY
from resources.jetstream import reconcile
from tests.ui.test_cli import COMMANDS as DAGSTER_MD_COMMANDS

PROJECT = Path(__file__).resolve().parents[1]
DOCS = [PROJECT / "README.md", *sorted((PROJECT / "docs").glob("*.md"))]
FENCE = re.compile(r"```(?:bash|sh|shell)\n(.*?)```", re.S)

# Run by this module, exactly as written (against a provisioned embedded nats-server).
RUN_HERE = {
    ".venv/bin/python -m pipelines.cli.asyncapi --check",
    "jsl provision --dry-run",
    "SPARK_HOME=$(.venv/bin/python -c "
    "'import pyspark, os; print(os.path.dirname(pyspark.__file__))')",
    "jsl status",
    "jsl status --json | python -c 'import json, sys\n"
    'lag = {i["name"]: i["pending"] for i in json.load(sys.stdin)["ingests"]}\n'
    'sys.exit(lag["file_events"] > 10_000)\'',
}
# Run by another test: the command -> the test module that runs it (or what it runs).
RUN_ELSEWHERE = {
    "make demo": "tests/pipelines/cli/test_demo.py",  # runs `python -m pipelines.cli demo`
    # in a fresh dg project that registers the component (docs/components.md)
    "dg list components": "tests/pipelines/components/test_stream_component.py",
    "dg scaffold defs pipelines.components.JetStreamStream orders --stream ORDERS": (
        "tests/pipelines/components/test_stream_component.py"
    ),
    "dg check defs": "tests/pipelines/components/test_stream_component.py",
    # docs/contract-changes.md: against a table the contract no longer fits
    "jsl contract diff": "tests/pipelines/components/test_stream_component.py",
    "jsl quarantine retry --stream ORDERS --rule currency_in_allowed_values": (
        "tests/pipelines/cli/commands/test_rejudge_command.py"
    ),
    "jsl silver rebuild --stream ORDERS --first-seq 1 --last-seq 5000": (
        "tests/pipelines/cli/commands/test_rejudge_command.py"
    ),
    "dg list defs": "tests/pipelines/components/test_stream_component.py",
    # docs/your-stream.md: a temporary dg project declaring ORDERS, provisioned and launched
    "jsl provision --project . --yes": "tests/pipelines/components/test_orders_end_to_end.py",
    "dg launch --assets '*'": "tests/pipelines/components/test_orders_end_to_end.py",
    # docs/your-stream.md's install and set-up, followed word for word in a temporary folder
    # (the venv's bin first on PATH is what activate does; the server is the same binary with
    # JetStream and a store dir, on a free port)
    "jsl setup": "tests/test_install.py",
    "nats-server --jetstream --store_dir .data/nats": "tests/test_install.py",
    "jsl tables": "tests/test_install.py",
    # docs/your-stream.md's two ways of starting a project, each block run as written
    **{
        command: "tests/test_install.py"
        for command in (
            "export UV_PYTHON=3.13",
            "uvx create-dagster@1.13.27 project orders-lake --uv-sync",
            "cd orders-lake",
            "uv add /path/to/dagster_jetstream-0.1.0-py3-none-any.whl",
            "source .venv/bin/activate",
            "python3 -m venv orders-lake-venv",
            "source orders-lake-venv/bin/activate",
            "pip install create-dagster==1.13.27",
            "create-dagster project orders-lake --no-uv-sync",
            "pip install --editable . /path/to/dagster_jetstream-0.1.0-py3-none-any.whl",
        )
    },
    "make test": ".ci/run",  # this suite
    # docs/deploy.md's object storage: `make demo S3=1` as written; its runs get these three
    # variables, with its own SeaweedFS's bucket, keys and endpoint (pipelines/cli/demo.py)
    "make demo S3=1": "tests/pipelines/cli/test_demo.py",
    "export LAKEHOUSE_ROOT=s3a://my-bucket/lakehouse": "tests/pipelines/cli/test_demo.py",
    "export AWS_ACCESS_KEY_ID=AKIA... AWS_SECRET_ACCESS_KEY=...": (
        "tests/pipelines/cli/test_demo.py"
    ),
    'export JSL_SPARK_CONF=\'{"spark.hadoop.fs.s3a.endpoint": "http://s3.internal:8333", '
    '"spark.hadoop.fs.s3a.endpoint.region": "us-east-1", '
    '"spark.hadoop.fs.s3a.path.style.access": "true"}\'': "tests/pipelines/cli/test_demo.py",
    "make dev": "tests/ui/test_cli.py",
    "DAGSTER_WEBSERVER_PORT=3001 make dev": "tests/ui/test_cli.py",
    "jsl generate --count 10000 --rate 500 --bad-share 0.05 --nats-url nats://127.0.0.1:4222": (
        "tests/pipelines/cli/commands/test_generate_command.py"
    ),
    "jsl generate --count 10000 --rate 500 --bad-share 0.05 --seed 7 "
    "--nats-url nats://127.0.0.1:4222": "tests/pipelines/cli/commands/test_generate_command.py",
    "jsl provision --yes": "tests/pipelines/cli/commands/test_provision_command.py",
    # docs/deploy.md's Spark servers: tests/cluster/servers.py starts the same, on free ports
    "$SPARK_HOME/bin/spark-class org.apache.spark.deploy.master.Master --host 127.0.0.1 "
    "--port 7077 --webui-port 8080": "tests/cluster/test_spark_standalone.py",
    "$SPARK_HOME/bin/spark-class org.apache.spark.deploy.worker.Worker --host 127.0.0.1 "
    "--cores 1 --memory 1g spark://127.0.0.1:7077": "tests/cluster/test_spark_standalone.py",
    "PYSPARK_PYTHON=$PWD/.venv/bin/python $SPARK_HOME/bin/spark-submit "
    "--class org.apache.spark.sql.connect.service.SparkConnectServer"
    " \\\n  --master 'local[2]' --driver-memory 1g --jars "
    '"$(ls ~/.cache/jetstream-lakehouse/spark-jars/*/*.jar | paste -sd,)" \\\n'
    "  --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension \\\n"
    "  --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog"
    " \\\n  --conf spark.connect.grpc.binding.port=15002": "tests/cluster/test_spark_connect.py",
    "jsl artifacts list --run RUN_ID": "tests/pipelines/cli/commands/test_artifacts_command.py",
    "jsl artifacts get runs/RUN_ID/silver/file_events/manifest.json -o manifest.json": (
        "tests/pipelines/cli/commands/test_artifacts_command.py"
    ),
    "jsl artifacts list --embedded": "tests/pipelines/cli/commands/test_artifacts_command.py",
    "jsl status [--json] [--tables]": "tests/pipelines/cli/commands/test_status_command.py",
    "jsl status --embedded": "tests/pipelines/cli/commands/test_status_command.py",
    "jsl status --tables [--lakehouse-root .data/lakehouse]": (
        "tests/pipelines/cli/commands/test_status_command.py"
    ),
    ".venv/bin/python -m pipelines.cli.asyncapi": "tests/pipelines/cli/test_asyncapi.py",
    # docs/dagster.md's CI section: its environment lines, then the commands test_cli runs
    "export NATS_URL=nats://127.0.0.1:4222": "tests/ui/test_cli.py",
    "export LAKEHOUSE_ROOT=$PWD/.data/lakehouse": "tests/ui/test_cli.py",
    "export DAGSTER_HOME=$PWD/.data/dagster_home": "tests/ui/test_cli.py",
    'mkdir -p "$DAGSTER_HOME"': "tests/ui/test_cli.py",
    **{command: "tests/ui/test_cli.py" for command in DAGSTER_MD_COMMANDS},
}
# Cannot run on this machine: the command -> why, and what proves the same instead.
NOT_HERE = {
    "nats kv put lakehouse-replays file_events.2026-11-21-bad-deploy "
    '\'{"start_seq": 1001, "end_seq": 5000, "reason": "bad deploy"}\'': (
        "the nats CLI is not installed here; tests/sensors/test_replay_sensor.py puts the same "
        "request through the KV API, which the nats CLI reads and writes the same way"
    ),
    "nats kv get lakehouse-replays file_events.2026-11-21-bad-deploy": (
        "the nats CLI is not installed here; tests/sensors/test_replay_sensor.py reads the status"
    ),
    "docker compose up --build": (
        "no Docker engine here; tests/test_compose.py checks the file's parts line up, parses it "
        "with a compose client when one is installed, and runs the NATS nodes' config and the "
        "provision service's command on loopback"
    ),
    "jsl status --nats-url nats://nats-1:4222 --json": (
        "names a deployment's host (nats-1); the same options against a local server run in "
        "tests/pipelines/cli/commands/test_status_command.py"
    ),
}


def documented_commands() -> dict[str, list[str]]:
    """Each shell command of the docs' bash blocks -> the files that show it.

    Comment lines and trailing comments are dropped; a command whose quotes span lines is
    joined back with its newlines.
    """
    found: dict[str, list[str]] = {}
    for doc in DOCS:
        for block in FENCE.findall(doc.read_text()):
            pending = ""
            for line in block.splitlines():
                if not pending and (not line.strip() or line.lstrip().startswith("#")):
                    continue
                pending = f"{pending}\n{line}" if pending else line
                try:
                    tokens = shlex.split(pending, comments=True)
                except ValueError:  # an open quote: the command goes on
                    continue
                if tokens:
                    found.setdefault(_without_comment(pending), []).append(doc.name)
                pending = ""
    return found


def _without_comment(command: str) -> str:
    """The command without a trailing `# ...` comment outside quotes."""
    end = len(command)
    in_quote = None
    for index, char in enumerate(command):
        if in_quote:
            in_quote = None if char == in_quote else in_quote
        elif char in "'\"":
            in_quote = char
        elif char == "#" and (index == 0 or command[index - 1].isspace()):
            end = index
            break
    return command[:end].rstrip()


def test_every_documented_command_is_run_or_accounted_for():
    documented = set(documented_commands())
    accounted = RUN_HERE | set(RUN_ELSEWHERE) | set(NOT_HERE)

    unaccounted = sorted(documented - accounted)
    assert not unaccounted, (
        "commands in the docs that no test runs: add each to RUN_HERE, RUN_ELSEWHERE or "
        f"NOT_HERE in {Path(__file__).name}:\n" + "\n".join(unaccounted)
    )
    stale = sorted(accounted - documented)
    assert not stale, f"listed here but no longer in the docs: {stale}"


def test_the_tests_named_for_documented_commands_exist():
    missing = {c: t for c, t in RUN_ELSEWHERE.items() if not (PROJECT / t).exists()}
    assert not missing


@pytest.fixture
def provisioned_env(nats_server, js, tmp_path) -> dict[str, str]:
    """The environment of a shell in the project's virtualenv, NATS_URL at a provisioned server."""
    reconcile(js, FILE_TRASH_TOPOLOGY)
    bin_dir = Path(sys.executable).parent
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "NATS_URL": nats_server.url,
        "LAKEHOUSE_DATA_DIR": str(tmp_path / "data"),
    }


@pytest.mark.parametrize("command", sorted(RUN_HERE))
def test_documented_command_runs_as_written(command, provisioned_env):
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=PROJECT,
        env=provisioned_env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"`{command}` exited {done.returncode}:\n{done.stderr[-3000:]}"
