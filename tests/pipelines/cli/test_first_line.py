"""Every `jsl` command but `setup` says first, on one line, where its state is: the data
directory (`.data` in the dg project's root, or `LAKEHOUSE_DATA_DIR`), the tables and the
Dagster home; on stderr when stdout is for a program. The command runs in this process
(`pipelines.cli.main.main`), as `jsl` would."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.cli.main import locations, main
from pipelines.file_trash.topology import FILE_TRASH_TOPOLOGY
from resources.jetstream import EmbeddedNatsServer, JetStreamResource, reconcile

NOWHERE = ["--nats-url", "nats://127.0.0.1:1", "--timeout", "0.5"]  # nothing listens there


def line(data: Path, home: Path | str | None) -> str:
    """The first line for data dir `data` (tables in its `lakehouse`) and Dagster home `home`."""
    home = home or "none: runs are not kept"
    return f"data: {data} (tables: {data}/lakehouse, Dagster home: {home})"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A dg project with a subfolder; the working directory is that subfolder, and neither
    LAKEHOUSE_DATA_DIR, LAKEHOUSE_ROOT nor DAGSTER_HOME is set."""
    root = tmp_path / "my-lake"
    (root / "my_lake").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[tool.dg]\ndirectory_type = "project"\n')
    for name in ("LAKEHOUSE_DATA_DIR", "LAKEHOUSE_ROOT", "DAGSTER_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(root / "my_lake")
    return root.resolve()


@pytest.fixture
def provisioned(tmp_path: Path) -> Iterator[str]:
    """A nats-server of this test's own with the file trash topology."""
    with EmbeddedNatsServer(store_dir=tmp_path / "nats") as server:
        with JetStreamResource(servers=server.url).client() as js:
            reconcile(js, FILE_TRASH_TOPOLOGY)
        yield server.url


def test_the_first_line_names_the_dg_projects_data_dir(project, capsys):
    code = main(["status", *NOWHERE])

    captured = capsys.readouterr()
    assert code == 1  # nothing listens: the error is on stderr, after the line
    assert captured.out.splitlines()[0] == line(project / ".data", None)
    assert "cannot connect" in captured.err


def test_the_dagster_home_is_dagster_home_when_set(project, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))

    main(["provision", "--dry-run", *NOWHERE])

    assert capsys.readouterr().out.splitlines()[0] == line(project / ".data", tmp_path / "home")


def test_lakehouse_data_dir_and_lakehouse_root_win(project, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LAKEHOUSE_DATA_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("LAKEHOUSE_ROOT", "s3a://lake/tables")

    main(["artifacts", "list", *NOWHERE])

    first = capsys.readouterr().out.splitlines()[0]
    assert first == (
        f"data: {tmp_path.resolve()}/state (tables: s3a://lake/tables, "
        "Dagster home: none: runs are not kept)"
    )


def test_project_names_another_dg_projects_data_dir(project, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # no dg project here

    main(["provision", "--project", str(project / "my_lake"), "--dry-run", *NOWHERE])

    assert capsys.readouterr().out.splitlines()[0] == line(project / ".data", None)


def test_the_demo_and_dev_name_their_own_dagster_home(project, tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "ignored"))  # they set their own

    for command in ("demo", "dev"):
        _, first = locations(argparse.Namespace(command=command))
        assert first == line(project / ".data", project / ".data" / "dagster_home")


def test_with_json_the_line_goes_to_stderr_and_stdout_stays_json(project, provisioned, capsys):
    code = main(["status", "--json", "--nats-url", provisioned])

    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.err.splitlines()[0] == line(project / ".data", None)
    assert [i["name"] for i in json.loads(captured.out)["ingests"]]


def test_an_artifact_to_stdout_gets_only_its_bytes(project, capsys):
    main(["artifacts", "get", "runs/r1/report.html", *NOWHERE])

    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines()[0] == line(project / ".data", None)


def test_the_command_runs_with_the_data_dir_it_named(project, monkeypatch, capsys):
    """Whatever the command loads or starts (a project's components, Spark, `dagster`) sees
    LAKEHOUSE_DATA_DIR as the first line said; the process's environment is left as it was."""
    seen = []
    monkeypatch.setattr(
        "pipelines.cli.commands.status.run",
        lambda args: seen.append(os.environ.get("LAKEHOUSE_DATA_DIR")) or 0,
    )

    assert main(["status"]) == 0

    assert seen == [str(project / ".data")]
    assert "LAKEHOUSE_DATA_DIR" not in os.environ


def test_an_invalid_setting_is_one_line_on_stderr(project, monkeypatch, capsys):
    monkeypatch.setenv("JSL_NATS_REPLICAS", "9")

    assert main(["status", *NOWHERE]) == 1

    captured = capsys.readouterr()
    assert captured.out == ""
    [error] = captured.err.splitlines()
    assert error.startswith("jsl status: error: JSL_NATS_REPLICAS must be a number from 1 to 5")
