"""Where local state lives: `.data` in the dg project's root (never the installed package),
`LAKEHOUSE_DATA_DIR` over it; the NATS settings; the line that names the locations, printed
by `jsl` and logged by each run."""

from pathlib import Path

import pytest
from dagster import AssetExecutionContext, DagsterInstance, asset, materialize

from pipelines.settings import DEFAULT_NATS_URL, SOURCE_DIR, Settings
from resources.data_dir import dg_project_root
from resources.lakehouse import LakehouseResource

DG_PYPROJECT = """\
[project]
name = "my-lake"
version = "0.1.0"

[tool.dg]
directory_type = "project"

[tool.dg.project]
root_module = "my_lake"
"""


@pytest.fixture
def dg_project(tmp_path: Path) -> Path:
    """A dg project (a pyproject.toml with [tool.dg]) with a subfolder, inside a folder whose
    own pyproject.toml is not a dg one."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "outer"\n')
    root = tmp_path / "my-lake"
    (root / "my_lake" / "defs").mkdir(parents=True)
    (root / "pyproject.toml").write_text(DG_PYPROJECT)
    return root.resolve()


def test_in_this_checkout_the_default_data_dir_is_the_repositorys_dot_data(monkeypatch):
    monkeypatch.chdir(SOURCE_DIR / "pipelines")  # the checkout's pyproject.toml has [tool.dg]

    settings = Settings.from_env({})

    assert settings.data_dir == SOURCE_DIR / ".data"
    assert settings.lakehouse_root == str(SOURCE_DIR / ".data" / "lakehouse")
    assert settings.nats_url == DEFAULT_NATS_URL
    assert settings.nats_store_dir == SOURCE_DIR / ".data" / "nats"


@pytest.mark.parametrize("where", [".", "my_lake", "my_lake/defs"])
def test_the_default_data_dir_is_the_dg_project_roots_from_anywhere_inside_it(
    dg_project, monkeypatch, where
):
    monkeypatch.chdir(dg_project / where)

    settings = Settings.from_env({})

    assert dg_project_root() == dg_project
    assert settings.data_dir == dg_project / ".data"
    assert settings.lakehouse_root == str(dg_project / ".data" / "lakehouse")
    assert settings.dagster_home == dg_project / ".data" / "dagster_home"


def test_outside_any_dg_project_the_default_data_dir_is_the_working_directorys(
    tmp_path, monkeypatch
):
    work = tmp_path / "work"
    work.mkdir()
    (work / "pyproject.toml").write_text('[project]\nname = "not-dg"\n')  # no [tool.dg]
    monkeypatch.chdir(work)

    assert Settings.from_env({}).data_dir == work.resolve() / ".data"


def test_start_finds_the_dg_project_of_another_folder(dg_project, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    assert Settings.from_env({}, start=dg_project / "my_lake").data_dir == dg_project / ".data"


def test_lakehouse_data_dir_wins_over_the_dg_project(dg_project, tmp_path, monkeypatch):
    monkeypatch.chdir(dg_project)

    settings = Settings.from_env({"LAKEHOUSE_DATA_DIR": str(tmp_path / "elsewhere")})

    assert settings.data_dir == tmp_path.resolve() / "elsewhere"
    assert settings.lakehouse_root == str(tmp_path.resolve() / "elsewhere" / "lakehouse")


def test_no_default_is_a_folder_of_the_installed_package(dg_project, monkeypatch):
    """Issue 34: the default was computed from the package's location (site-packages when
    installed), so deleting the virtualenv deleted the lakehouse."""
    monkeypatch.chdir(dg_project)

    settings = Settings.from_env({})

    assert not settings.data_dir.is_relative_to(SOURCE_DIR)
    assert not Path(settings.lakehouse_root).is_relative_to(SOURCE_DIR)


def test_the_locations_line_names_the_data_dir_the_tables_and_the_dagster_home(tmp_path):
    settings = Settings.from_env({"LAKEHOUSE_DATA_DIR": str(tmp_path)})
    root = tmp_path.resolve()

    assert settings.locations(root / "home") == (
        f"data: {root} (tables: {root}/lakehouse, Dagster home: {root}/home)"
    )
    assert settings.locations(None) == (
        f"data: {root} (tables: {root}/lakehouse, Dagster home: none: runs are not kept)"
    )


@asset
def logged_first(context: AssetExecutionContext, lakehouse: LakehouseResource) -> None:
    context.log.info("the asset's own line")


def run_messages(instance: DagsterInstance, lakehouse: LakehouseResource) -> list[str]:
    result = materialize([logged_first], resources={"lakehouse": lakehouse}, instance=instance)
    assert result.success
    return [
        record.user_message
        for record in instance.all_logs(result.run_id)
        if record.level and not record.is_dagster_event
    ]


def test_a_run_logs_where_its_data_tables_and_dagster_home_are_before_its_steps_do(tmp_path):
    lakehouse = LakehouseResource(root=str(tmp_path / "lake"), data_dir=str(tmp_path))
    (tmp_path / "home").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "home")) as instance:
        messages = run_messages(instance, lakehouse)

    assert messages == [
        f"data: {tmp_path} (tables: {tmp_path}/lake, Dagster home: {tmp_path}/home)",
        "the asset's own line",
    ]


def test_a_run_on_an_ephemeral_instance_says_its_runs_are_not_kept(tmp_path, dagster_instance):
    lakehouse = LakehouseResource(root=str(tmp_path / "lake"), data_dir=str(tmp_path))

    [line, _] = run_messages(dagster_instance, lakehouse)

    assert (
        line == f"data: {tmp_path} (tables: {tmp_path}/lake, Dagster home: none: runs are not kept)"
    )


def test_settings_follow_the_environment(tmp_path: Path):
    settings = Settings.from_env(
        {
            "LAKEHOUSE_DATA_DIR": str(tmp_path),
            "LAKEHOUSE_ROOT": "s3a://bucket/lake",
            "NATS_URL": "nats://a:4222,nats://b:4222",
        }
    )
    assert settings.data_dir == tmp_path
    assert settings.lakehouse_root == "s3a://bucket/lake"
    assert settings.nats_url == "nats://a:4222,nats://b:4222"
    assert settings.dagster_home == tmp_path / "dagster_home"


def test_nats_replicas_are_undeclared_unless_jsl_nats_replicas_is_set():
    assert Settings.from_env({}).nats_replicas is None
    assert Settings.from_env({"JSL_NATS_REPLICAS": "3"}).nats_replicas == 3


@pytest.mark.parametrize("value", ["0", "6", "three", "-1"])
def test_jsl_nats_replicas_outside_one_to_five_is_refused_naming_the_variable(value):
    with pytest.raises(ValueError, match="JSL_NATS_REPLICAS must be a number from 1 to 5"):
        Settings.from_env({"JSL_NATS_REPLICAS": value})


def test_the_automation_interval_is_five_seconds_unless_jsl_automation_interval_is_set():
    assert Settings.from_env({}).automation_interval_seconds == 5
    assert (
        Settings.from_env({"JSL_AUTOMATION_INTERVAL_SECONDS": "30"}).automation_interval_seconds
        == 30
    )


@pytest.mark.parametrize("value", ["0", "-5", "5s", "2.5"])
def test_a_bad_automation_interval_is_refused_naming_the_variable(value):
    with pytest.raises(ValueError, match="JSL_AUTOMATION_INTERVAL_SECONDS must be a whole number"):
        Settings.from_env({"JSL_AUTOMATION_INTERVAL_SECONDS": value})


def test_a_run_on_the_temporary_instance_of_dg_launch_says_its_runs_are_not_kept(tmp_path):
    """`dg launch` and `dagster dev` without DAGSTER_HOME keep runs in a `.tmp_dagster_home_*`
    folder that they remove when they exit."""
    lakehouse = LakehouseResource(root=str(tmp_path / "lake"), data_dir=str(tmp_path))
    (tmp_path / ".tmp_dagster_home_x1").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / ".tmp_dagster_home_x1")) as instance:
        [line, _] = run_messages(instance, lakehouse)

    assert line.endswith("Dagster home: none: runs are not kept)")
