"""The built wheel, installed (not editable) into a fresh virtualenv, lands a stream in a dg
project of one's own, and everything it keeps lives in that project's folder.

What a newcomer does after `docs/your-stream.md`, in a temporary folder:

1. the wheel is built from this checkout and installed with `pip install --no-deps` into a new
   virtualenv (its dependencies are this environment's, linked in: no network, and a copy of
   this package would shadow nothing, since it is left out of the link);
2. a dg project is written as `create-dagster project` writes one, and the stream is declared
   with `dg scaffold defs pipelines.components.JetStreamStream orders --stream ORDERS`;
3. `jsl setup`, `jsl provision --project . --yes`, events published, `dg launch --assets '*'`
   with `DAGSTER_HOME` set as the guide says; then `jsl tables` prints each table.

Its Spark runs with the tests' tuning (`JSL_SPARK_CONF`, tests/conftest.py), as every other
test's children do; the product's own defaults run in tests/cluster/'s standalone cluster.

Then: `pipelines` is imported from the new virtualenv, every Delta table is under the project's
`.data/lakehouse`, nothing was written inside the virtualenv, the working directory holds no
`spark-warehouse/`, `metastore_db/` or `derby.log`, and the Dagster instance kept the runs and
the check results.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from resources.jetstream import EmbeddedNatsServer, JetStreamResource
from tests.pipelines.components.test_stream_component import COMPONENT, DEFINITIONS
from tests.pipelines.silver.test_orders import encoded, payload

REPO = Path(__file__).resolve().parents[1]
DISTRIBUTION = "dagster_jetstream"  # the wheel's file name spelling of `dagster-jetstream`
PACKAGES = ("pipelines", "resources", "assets", "sensors")
EVENTS = 40  # every tenth is bad in one of ten ways (tests/pipelines/silver/test_orders.py)
TABLES = ("bronze/orders_events", "silver/orders_placed", "silver/orders_shipped")
PYPROJECT = """\
[project]
name = "orders-lake"
version = "0.1.0"
dependencies = ["dagster-jetstream"]

[tool.dg]
directory_type = "project"

[tool.dg.project]
root_module = "orders_lake"
registry_modules = ["pipelines.components"]
"""
TIMEOUT = 900  # seconds, for any one command
PIP = (sys.executable, "-m", "pip", "-q")


def build_wheel(out: Path) -> Path:
    """The wheel of this checkout, built from a copy (no build/ or egg-info in the tree)."""
    source = out / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in PACKAGES:
        shutil.copytree(REPO / package, source / package, ignore=ignore)
    done = subprocess.run(
        [*PIP, "wheel", "--no-deps", "--no-build-isolation", "-w", str(out / "dist"), str(source)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = (out / "dist").glob(f"{DISTRIBUTION}-*.whl")
    return wheel


def linked_dependencies(out: Path) -> Path:
    """A folder linking every entry of this environment's site-packages but this package's
    own (its dist-info and the editable install's hooks)."""
    site = Path(sysconfig.get_paths()["purelib"])
    linked = out / "dependencies"
    linked.mkdir()
    own = ("dagster_jetstream", "__editable__", "jetstream_lakehouse")
    for entry in site.iterdir():
        if not entry.name.startswith(own) and entry.suffix != ".pth":
            (linked / entry.name).symlink_to(entry)
    return linked


def fresh_virtualenv(out: Path, wheel: Path) -> Path:
    """A new virtualenv with the wheel installed, the dependencies linked in, and the `dg` and
    `dagster` commands their own packages would have installed; returns its bin folder."""
    venv = out / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "linked_dependencies.pth").write_text(f"{linked_dependencies(out)}\n")
    done = subprocess.run(
        [*PIP, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for command in ("dg", "dagster"):
        script = (Path(sys.executable).parent / command).read_text().splitlines()
        target = venv / "bin" / command
        target.write_text("\n".join([f"#!{python}", *script[1:]]) + "\n")
        target.chmod(0o755)
    return venv / "bin"


def create_project(root: Path) -> Path:
    """A dg project as `create-dagster project orders-lake` writes it."""
    package = root / "orders_lake"
    (package / "defs").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (package / "__init__.py").write_text("")
    (package / "defs" / "__init__.py").write_text("")
    (package / "definitions.py").write_text(DEFINITIONS)
    return root


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedNatsServer]:
    """The team's nats-server (the guide's NATS_URL)."""
    with EmbeddedNatsServer(store_dir=tmp_path_factory.mktemp("nats")) as running:
        yield running


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory: pytest.TempPathFactory, server: EmbeddedNatsServer):
    """The virtualenv's bin folder, the project and the environment of each command."""
    out = tmp_path_factory.mktemp("install")
    bin_dir = fresh_virtualenv(out, build_wheel(out))
    project = create_project(out / "orders-lake")
    keep = ("PATH", "HOME", "JAVA_HOME", "LANG", "LC_ALL", "TMPDIR", "JSL_SPARK_JARS_DIR")
    # The tests' Spark tuning (tests/conftest.py), as every other test's children get it.
    keep += ("JSL_SPARK_CONF", "JSL_SPARK_SHUFFLE_PARTITIONS")
    env = {name: os.environ[name] for name in keep if name in os.environ}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        VIRTUAL_ENV=str(bin_dir.parent),
        NATS_URL=server.url,
        DAGSTER_HOME=str(project / ".data" / "dagster_home"),  # as the guide says
        DAGSTER_DISABLE_TELEMETRY="1",
        NO_COLOR="1",
        COLUMNS="200",
    )
    return bin_dir, project, env


def run(command: list[str], cwd: Path, env: dict[str, str]) -> str:
    """Runs one of the guide's commands; returns its output."""
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout[-5000:]}\n{done.stderr[-10000:]}"
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def landed(newcomer, server: EmbeddedNatsServer) -> dict[str, str]:
    """The guide, word for word: declare, set up, provision, publish, launch, look."""
    bin_dir, project, env = newcomer
    said = {}
    run(["dg", "scaffold", "defs", COMPONENT, "orders", "--stream", "ORDERS"], project, env)
    declared = project / "orders_lake" / "defs" / "orders"
    attributes = yaml.safe_load((declared / "defs.yaml").read_text())["attributes"]
    attributes["ingests"][0].update(durable="orders-bronze", table="bronze/orders_events")
    attributes.pop("contract", None)
    attributes["contract_file"] = "orders.yaml"
    shutil.copy(REPO / "tests/pipelines/contract/fixtures/orders.yaml", declared / "orders.yaml")
    document = {"type": COMPONENT, "attributes": attributes}
    (declared / "defs.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    (project / ".data" / "dagster_home").mkdir(parents=True, exist_ok=True)  # mkdir -p

    said["check"] = run(["dg", "check", "defs"], project, env)
    said["setup"] = run(["jsl", "setup"], project, env)
    said["provision"] = run(["jsl", "provision", "--project", ".", "--yes"], project, env)
    resource = JetStreamResource(servers=server.url, connect_timeout=5, request_timeout=5)
    with resource.client() as js:
        subject = {0: "orders.placed", 1: "orders.shipped"}
        js.publish_batch((subject[i % 2], encoded(payload(i))) for i in range(EVENTS))
    said["launch"] = run(["dg", "launch", "--assets", "*"], project, env)
    said["tables"] = run(["jsl", "tables"], project, env)
    said["imported"] = run(
        [str(bin_dir / "python"), "-c", "import pipelines; print(pipelines.__file__)"], project, env
    )
    return said


def test_the_package_is_imported_from_the_fresh_virtualenv(newcomer, landed):
    bin_dir, _, _ = newcomer

    assert Path(landed["imported"].strip()).is_relative_to(bin_dir.parent)


def test_every_table_lives_in_the_project_folder_and_nothing_in_the_virtualenv(newcomer, landed):
    bin_dir, project, _ = newcomer
    root = project / ".data" / "lakehouse"

    for table in (*TABLES, "quarantine/orders"):
        assert (root / table / "_delta_log").is_dir(), f"{table} not under {root}"
    assert list(bin_dir.parent.rglob("_delta_log")) == []
    assert not list(bin_dir.parent.rglob(".data"))
    for stray in ("spark-warehouse", "metastore_db", "derby.log"):
        assert not (project / stray).exists(), f"{stray} in the working directory"


def test_each_event_is_in_bronze_once_and_in_silver_or_quarantine_once(spark, newcomer, landed):
    _, project, _ = newcomer
    root = project / ".data" / "lakehouse"

    def rows(table: str) -> int:
        return spark.read.format("delta").load(str(root / table)).count()

    assert rows("bronze/orders_events") == EVENTS
    placed, shipped = rows("silver/orders_placed"), rows("silver/orders_shipped")
    assert 0 < placed + shipped < EVENTS
    assert placed + shipped + rows("quarantine/orders") == EVENTS


def test_the_first_line_says_where_the_tables_and_the_dagster_home_are(newcomer, landed):
    _, project, _ = newcomer

    for command in ("provision", "tables"):
        first = landed[command].splitlines()[0]
        assert str(project / ".data") in first, f"jsl {command}: {first}"
        assert str(project / ".data" / "dagster_home") in first, f"jsl {command}: {first}"


def test_jsl_tables_prints_each_table_with_its_rows(landed):
    for table in (*TABLES, "quarantine/orders"):
        assert table in landed["tables"]
    assert f"bronze/orders_events: {EVENTS} rows" in landed["tables"]


def test_the_instance_kept_the_run_and_the_check_results(newcomer, landed):
    from dagster import DagsterEventType, DagsterInstance

    _, project, _ = newcomer
    with DagsterInstance.from_config(str(project / ".data" / "dagster_home")) as instance:
        (run_record,) = instance.get_runs()
        checked = instance.all_logs(
            run_record.run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION
        )

    assert {e.dagster_event.asset_check_evaluation_data.check_name for e in checked} >= {
        "order_id_format"
    }
