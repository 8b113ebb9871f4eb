"""The `JetStreamStream` component through the real `dg` CLI, in a fresh temporary project
that has no Python of its own beyond dg's layout: listed by `dg list components`, scaffolded
into a working `defs.yaml` by `dg scaffold defs`, validated by `dg check defs` (five broken
files, five errors naming the file, the line or the path, and the fix), and loaded with the
stream's assets, jobs, sensors and checks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

PROJECT_DIR = Path(__file__).resolve().parents[3]
FIXTURES = PROJECT_DIR / "tests" / "pipelines" / "contract" / "fixtures"
COMPONENT = "pipelines.components.JetStreamStream"
PYPROJECT = """\
[project]
name = "orders-project"
version = "0.1.0"

[tool.dg]
directory_type = "project"

[tool.dg.project]
root_module = "orders_project"
registry_modules = ["pipelines.components"]
"""
DEFINITIONS = """\
from pathlib import Path

import dagster as dg

defs = dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
"""


def dg(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Runs the venv's `dg` (no colour, no telemetry) and returns what it did."""
    env = {**os.environ, "NO_COLOR": "1", "DAGSTER_DISABLE_TELEMETRY": "1", "COLUMNS": "200"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return subprocess.run(
        ["dg", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty dg project (pyproject.toml, a package with an empty defs folder)."""
    root = tmp_path_factory.mktemp("orders-project")
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "orders_project" / "defs").mkdir(parents=True)
    (root / "orders_project" / "__init__.py").write_text("")
    (root / "orders_project" / "defs" / "__init__.py").write_text("")
    # What `create-dagster project` writes: the code location loads the defs folder.
    (root / "orders_project" / "definitions.py").write_text(DEFINITIONS)
    return root


@pytest.fixture(scope="module")
def scaffolded(project: Path) -> Path:
    """`dg scaffold defs JetStreamStream orders --stream ORDERS`; returns its defs.yaml."""
    done = dg("scaffold", "defs", COMPONENT, "orders", "--stream", "ORDERS", cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    return project / "orders_project" / "defs" / "orders" / "defs.yaml"


def test_dg_lists_the_component_from_the_project_checkout() -> None:
    done = dg("list", "components", "--json", cwd=PROJECT_DIR)

    assert done.returncode == 0, done.stderr
    listed = {entry["key"]: entry for entry in json.loads(done.stdout)["items"]}
    assert COMPONENT in listed
    assert "landed exactly once" in listed[COMPONENT]["summary"]


def test_the_scaffolded_defs_yaml_checks_and_loads_the_stream(
    project: Path, scaffolded: Path
) -> None:
    declared = yaml.safe_load(scaffolded.read_text())
    assert declared["type"] == COMPONENT
    assert declared["attributes"]["stream"] == {"name": "ORDERS", "subjects": ["orders.>"]}

    checked = dg("check", "defs", cwd=project)
    listed = dg("list", "defs", "--json", cwd=project)

    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert listed.returncode == 0, listed.stderr
    defs = json.loads(listed.stdout)
    assert {a["asset_key"] for a in defs["assets"]} == {
        "jetstream/ORDERS", "bronze/orders_events", "silver/orders_example", "quarantine/orders",
    }  # fmt: skip
    assert {c["key"] for c in defs["asset_checks"]} == {
        "bronze/orders_events:consumer_lag",
        "quarantine/orders:parseable_json",
        "quarantine/orders:known_event_type",
        "silver/orders_example:required_fields_present",
        "silver/orders_example:field_types_valid",
        "silver/orders_example:event_id_unique",
    }
    assert {j["name"] for j in defs["jobs"]} == {"ingest_orders_events", "rejudge_orders"}
    # Silver follows bronze by declarative automation (automate: true), which Dagster evaluates
    # with its default automation condition sensor.
    assert {s["name"] for s in defs["sensors"]} == {
        "observe_ORDERS",
        "orders_events_stream_sensor",
        "default_automation_condition_sensor",
    }


def test_a_contract_from_an_asyncapi_document_loads(project: Path, scaffolded: Path) -> None:
    folder = project / "orders_project" / "defs" / "orders_asyncapi"
    folder.mkdir()
    shutil.copy(FIXTURES / "orders.asyncapi.yaml", folder / "orders.asyncapi.yaml")
    declared = {
        "type": COMPONENT,
        "attributes": {
            "stream": {"name": "ORDERS_API", "subjects": ["ordersapi.>"]},
            "ingests": [{"name": "api_events", "durable": "api", "table": "bronze/api_events"}],
            "asyncapi_file": "orders.asyncapi.yaml",
        },
    }
    (folder / "defs.yaml").write_text(yaml.safe_dump(declared, sort_keys=False))
    try:
        done = dg("check", "defs", cwd=project)
    finally:
        shutil.rmtree(folder)

    # The fixture's channels are bound to stream ORDERS, not ORDERS_API: the error says which.
    assert done.returncode != 0
    assert "ORDERS" in done.stdout + done.stderr


BROKEN = {
    "a misspelt field": (
        lambda a: a.update(ingest=a.pop("ingests")),
        ["defs.yaml:", "'ingest' was unexpected"],
    ),
    "an invalid subject": (
        lambda a: a["stream"].update(subjects=["orders..placed"]),
        ["defs.yaml:3: attributes.stream: stream 'ORDERS': invalid subject 'orders..placed'"],
    ),
    "an unknown column type in the contract": (
        lambda a: a["contract"]["events"]["ExampleEvent"]["fields"]["data.name"].update(
            type="text"
        ),
        ["defs.yaml:", "events.ExampleEvent.fields", "type"],
    ),
    "a table used twice": (
        lambda a: a["ingests"].append({**a["ingests"][0], "name": "copy", "durable": "copy"}),
        ["defs.yaml:7: attributes.ingests: stream 'ORDERS': two ingests share the table 'bronze/"],
    ),
    "a contract file that is not there": (
        lambda a: (a.pop("contract"), a.update(contract_file="missing.yaml")),
        ["missing.yaml"],
    ),
}


@pytest.mark.parametrize("broken", list(BROKEN))
def test_dg_check_defs_names_what_is_wrong_and_where(
    project: Path, scaffolded: Path, broken: str
) -> None:
    good = scaffolded.read_text()
    declared = yaml.safe_load(good)
    breaking, expected = BROKEN[broken]
    breaking(declared["attributes"])
    scaffolded.write_text(yaml.safe_dump(declared, sort_keys=False))
    try:
        done = dg("check", "defs", cwd=project)
    finally:
        scaffolded.write_text(good)

    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    for text in expected:
        assert text in output, f"{broken}: {text!r} not in:\n{output[-3000:]}"


def test_dg_check_defs_and_jsl_contract_diff_report_how_the_contract_differs_from_its_table(
    project: Path, scaffolded: Path, spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyspark.sql.types import DecimalType, StructField, StructType

    from pipelines.contract import read_contract
    from pipelines.silver.schema import silver_schema

    contract = read_contract(scaffolded, at=("attributes", "contract"))
    event = contract.event_types[0]
    wanted = silver_schema(event, spark)
    # The live table as an older contract left it: its first field a decimal, and a column
    # the contract no longer has.
    first = wanted.fields[0]
    old = StructType(
        [
            StructField(first.name, DecimalType(10, 2)),
            *wanted.fields[1:],
            StructField("legacy", DecimalType(10, 2)),
        ]
    )
    root = tmp_path / "lakehouse"
    spark.createDataFrame([], old).write.format("delta").save(str(root / event.table))
    monkeypatch.setenv("LAKEHOUSE_ROOT", str(root))

    checked = dg("check", "defs", cwd=project)
    diff = subprocess.run(
        [str(Path(sys.executable).parent / "jsl"), "contract", "diff", "--project", str(project)],
        capture_output=True,
        text=True,
        timeout=300,
    )

    output = checked.stdout + checked.stderr
    assert checked.returncode == 0, output  # a report, not a failure: the run refuses
    line = f"stream ORDERS: {event.table}: column {first.name!r} decimal(10,2) -> string"
    assert line in output, output[-3000:]
    assert f"{event.table}: column 'legacy' decimal(10,2) -> (none)" in output
    assert diff.returncode == 1, diff.stdout + diff.stderr
    assert line in diff.stdout and "would be refused" in diff.stdout
