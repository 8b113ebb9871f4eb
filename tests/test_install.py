"""The built wheel, installed (not editable) in a project started as Dagster's docs start one,
lands a stream there, and everything it keeps lives in that project's folder.

What a newcomer does after `docs/your-stream.md`, in a temporary folder, once each way:

1. the wheel is built from this checkout;
2. one of the guide's two ways of starting the project runs as written, its commands read from
   the guide's first section: `uvx create-dagster` + `uv add` on the highest supported Python,
   or `pip install create-dagster` + `create-dagster project` + `pip install` on the lowest;
   `uv` comes from this environment (a dev dependency, from PyPI), `create-dagster` at the
   Dagster version constraints.txt pins, everything else from PyPI, through pip's and uv's
   caches. The environment pins the versions (`PIP_CONSTRAINT`, `UV_CONSTRAINT`:
   constraints.txt) without changing a word of the commands, and lets uv download no Python;
3. the stream is declared with `dg scaffold defs pipelines.components.JetStreamStream orders
   --stream ORDERS`, then `dg check defs`, `jsl setup`, `jsl provision --project . --yes`,
   events published, `dg launch --assets '*'` with `DAGSTER_HOME` set as the guide says, and
   `jsl tables`.

Its Spark runs with the tests' tuning (`JSL_SPARK_CONF`, tests/conftest.py), as every other
test's children do; the product's own defaults run in tests/cluster/'s standalone cluster.

Then: `pipelines` is imported from the new virtualenv, of the Python the way was given, every
Delta table is under the project's `.data/lakehouse`, nothing was written inside the
virtualenv, the working directory holds no `spark-warehouse/`, `metastore_db/` or
`derby.log`, and the Dagster instance kept the runs and the check results.

The two ways run one after the other on one worker (module fixtures, one per way); each
builds its virtualenv once.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from resources.jetstream import EmbeddedNatsServer, JetStreamResource
from tests.pipelines.components.test_stream_component import COMPONENT
from tests.pipelines.silver.test_orders import encoded, payload

REPO = Path(__file__).resolve().parents[1]
GUIDE = REPO / "docs" / "your-stream.md"
CONSTRAINTS = REPO / "constraints.txt"
DISTRIBUTION = "dagster_jetstream"  # the wheel's file name spelling of `dagster-jetstream`
WHEEL_IN_GUIDE = "/path/to/dagster_jetstream-0.1.0-py3-none-any.whl"
PACKAGES = ("pipelines", "resources", "assets", "sensors")
EVENTS = 40  # every tenth is bad in one of ten ways (tests/pipelines/silver/test_orders.py)
TABLES = ("bronze/orders_events", "silver/orders_placed", "silver/orders_shipped")
TIMEOUT = 900  # seconds, for any one command
PIP = (sys.executable, "-m", "pip", "-q")
# What the commands may see of this environment: where things are, the caches, the
# registries' certificates and settings.
KEEP = ("HOME", "JAVA_HOME", "LANG", "LC_ALL", "TMPDIR", "JSL_SPARK_JARS_DIR")
KEEP_PREFIXES = ("PIP_", "UV_", "SSL_", "REQUESTS_CA", "CURL_CA")


@dataclass(frozen=True)
class Way:
    """One of the guide's ways of starting the project."""

    name: str
    block: int  # its bash block among the first section's
    python: str  # the supported Python it runs on
    venv: str  # its virtualenv, relative to the folder the block starts in


WAYS = (
    Way("uv", block=0, python="3.13", venv="orders-lake/.venv"),  # the highest supported
    Way("pip", block=1, python="3.10", venv="orders-lake-venv"),  # the lowest
)


def guide_blocks() -> list[str]:
    """The bash blocks of the guide's first section, as written."""
    section = GUIDE.read_text().split("\n## 1. ")[1].split("\n## 2. ")[0]
    return re.findall(r"```bash\n(.*?)```", section, flags=re.DOTALL)


def pinned_dagster() -> str:
    """The Dagster version constraints.txt pins."""
    (version,) = re.findall(r"^dagster==([^\s;]+)$", CONSTRAINTS.read_text(), flags=re.M)
    return version


def python_named(version: str) -> Path | None:
    """The interpreter of a `python3.X` that runs (on PATH, or under pyenv's versions, whose
    shims run only the version pyenv has selected), else None."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(pyenv.glob(f"{version}.*/bin/python{version}"), reverse=True)
    for candidate in filter(None, candidates):
        done = subprocess.run(
            [str(candidate), "-c", "import sys; print(sys.executable)"],
            capture_output=True,
            text=True,
        )
        if done.returncode == 0:
            return Path(done.stdout.strip())
    return None


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


def test_the_guide_starts_a_project_with_uv_first_then_pip_at_the_pinned_dagster():
    uv, pip = guide_blocks()
    version = pinned_dagster()

    assert f"uvx create-dagster@{version} project orders-lake" in uv
    assert f"uv add {WHEEL_IN_GUIDE}" in uv
    assert f"pip install create-dagster=={version}" in pip
    assert WHEEL_IN_GUIDE in pip


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built once for both ways; its name is the one the guide shows."""
    built = build_wheel(tmp_path_factory.mktemp("wheel"))
    assert built.name == Path(WHEEL_IN_GUIDE).name, "the guide names another wheel"
    return built


def system_path() -> list[str]:
    """PATH's folders but those of another Python: this virtualenv's bin, pyenv's shims."""
    own = str(Path(sys.executable).parent)
    return [d for d in os.environ["PATH"].split(os.pathsep) if d and d != own and ".pyenv" not in d]


def base_environment(tools: Path, python: Path) -> dict[str, str]:
    """What the guide's commands run in: the Python of the way first on PATH (its `python3`,
    `python3.X`, `pip`), then `uv` and `uvx`, then the system's; no virtualenv active."""
    env = {name: os.environ[name] for name in KEEP if name in os.environ}
    env.update({k: v for k, v in os.environ.items() if k.startswith(KEEP_PREFIXES)})
    env.pop("UV_PYTHON", None)
    # The tests' Spark tuning (tests/conftest.py), as every other test's children get it.
    for name in ("JSL_SPARK_CONF", "JSL_SPARK_SHUFFLE_PARTITIONS"):
        if name in os.environ:
            env[name] = os.environ[name]
    for command in ("uv", "uvx"):
        (tools / command).symlink_to(Path(sys.executable).parent / command)
    env.update(
        PATH=os.pathsep.join(
            [str(python.parent), str(tools), "/usr/local/bin", "/usr/bin", "/bin"]
        ),
        PIP_CONSTRAINT=str(CONSTRAINTS),
        UV_CONSTRAINT=str(CONSTRAINTS),
        UV_PYTHON_DOWNLOADS="never",  # a Python from the machine, never a download
        UV_NO_PROGRESS="1",
        DAGSTER_DISABLE_TELEMETRY="1",
        NO_COLOR="1",
        COLUMNS="200",
    )
    return env


def run(command: list[str], cwd: Path, env: dict[str, str]) -> str:
    """Runs one of the guide's commands; returns its output."""
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout[-5000:]}\n{done.stderr[-10000:]}"
    return done.stdout + done.stderr


@pytest.fixture(scope="module", params=WAYS, ids=lambda way: f"{way.name}-py{way.python}")
def newcomer(request, tmp_path_factory, wheel: Path) -> Iterator[tuple]:
    """The way, the virtualenv's bin folder, the project and the environment of each command
    after the guide's first section (its virtualenv active; `NATS_URL`: the team's
    nats-server, one per way)."""
    way: Way = request.param
    python = python_named(way.python)
    if python is None:
        pytest.skip(f"no Python {way.python} on PATH or under pyenv: the {way.name} way needs it")
    out = tmp_path_factory.mktemp(f"install-{way.name}")
    (out / "tools").mkdir()
    env = base_environment(out / "tools", python)
    block = guide_blocks()[way.block].replace(WHEEL_IN_GUIDE, str(wheel))
    run(["bash", "-e", "-c", block], out, env)
    venv, project = out / way.venv, out / "orders-lake"
    with EmbeddedNatsServer(store_dir=out / "nats") as server:
        env.update(
            PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}",
            VIRTUAL_ENV=str(venv),
            NATS_URL=server.url,
            DAGSTER_HOME=str(project / ".data" / "dagster_home"),  # as the guide says
        )
        yield way, venv / "bin", project, env


@pytest.fixture(scope="module")
def landed(newcomer) -> dict[str, str]:
    """The guide, word for word: declare, set up, provision, publish, launch, look."""
    _, bin_dir, project, env = newcomer
    said = {}
    said["components"] = run(["dg", "list", "components"], project, env)
    run(["dg", "scaffold", "defs", COMPONENT, "orders", "--stream", "ORDERS"], project, env)
    declared = project / "src" / "orders_lake" / "defs" / "orders"
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
    resource = JetStreamResource(servers=env["NATS_URL"], connect_timeout=5, request_timeout=5)
    with resource.client() as js:
        subject = {0: "orders.placed", 1: "orders.shipped"}
        js.publish_batch((subject[i % 2], encoded(payload(i))) for i in range(EVENTS))
    said["launch"] = run(["dg", "launch", "--assets", "*"], project, env)
    said["tables"] = run(["jsl", "tables"], project, env)
    said["imported"] = run(
        [
            str(bin_dir / "python"),
            "-c",
            "import sys, pipelines; print(pipelines.__file__); print(sys.version.split()[0])",
        ],
        project,
        env,
    )
    return said


def test_the_package_is_imported_from_the_fresh_virtualenv_of_the_ways_python(newcomer, landed):
    way, bin_dir, _, _ = newcomer
    where, version = landed["imported"].split()

    assert Path(where).is_relative_to(bin_dir.parent)
    assert version.startswith(f"{way.python}.")


def test_dg_lists_the_component_from_the_packages_entry_point(landed):
    assert COMPONENT in landed["components"]


def test_every_table_lives_in_the_project_folder_and_nothing_in_the_virtualenv(newcomer, landed):
    _, bin_dir, project, _ = newcomer
    root = project / ".data" / "lakehouse"

    for table in (*TABLES, "quarantine/orders"):
        assert (root / table / "_delta_log").is_dir(), f"{table} not under {root}"
    assert list(bin_dir.parent.rglob("_delta_log")) == []
    assert not list(bin_dir.parent.rglob(".data"))
    for stray in ("spark-warehouse", "metastore_db", "derby.log"):
        assert not (project / stray).exists(), f"{stray} in the working directory"


def test_each_event_is_in_bronze_once_and_in_silver_or_quarantine_once(spark, newcomer, landed):
    _, _, project, _ = newcomer
    root = project / ".data" / "lakehouse"

    def rows(table: str) -> int:
        return spark.read.format("delta").load(str(root / table)).count()

    assert rows("bronze/orders_events") == EVENTS
    placed, shipped = rows("silver/orders_placed"), rows("silver/orders_shipped")
    assert 0 < placed + shipped < EVENTS
    assert placed + shipped + rows("quarantine/orders") == EVENTS


def test_the_first_line_says_where_the_tables_and_the_dagster_home_are(newcomer, landed):
    _, _, project, _ = newcomer

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

    _, _, project, _ = newcomer
    with DagsterInstance.from_config(str(project / ".data" / "dagster_home")) as instance:
        (run_record,) = instance.get_runs()
        checked = instance.all_logs(
            run_record.run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION
        )

    assert {e.dagster_event.asset_check_evaluation_data.check_name for e in checked} >= {
        "order_id_format"
    }
