"""Five broken `JetStreamStream` declarations through the real `dg check defs`: each fails with
one message (the defs.yaml and the line of the attribute, the contract's own file, line and
path when it is a separate file, the problem, the fix, the allowed values) and no Python
traceback.

A code location stops at its first broken component, so each declaration gets a project of
its own: five temporary dg projects, checked by five `dg check defs` run at once (about 25 s on
two idle cores, one alone takes about 10 s). One dg workspace of the five projects reports all
five from one `dg check defs` but is no faster: it loads each project through a code server of
its own, one after the other."""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner
from dagster._utils.error import serializable_error_info_from_exc_info
from dagster.components.core.component_tree import ComponentTree

from pipelines.components.errors import CODE_SERVER_LOGGER, ComponentDeclarationError
from pipelines.components.models import IngestModel, StreamModel
from pipelines.components.stream import JetStreamStream
from pipelines.contract.datatypes import TYPE_HELP
from tests.pipelines.components.test_stream_component import DEFINITIONS, FIXTURES

PYPROJECT = """\
[project]
name = "{name}"
version = "0.1.0"

[tool.dg]
directory_type = "project"

[tool.dg.project]
root_module = "{module}"
registry_modules = ["pipelines.components"]
"""
HEAD = """\
type: pipelines.components.JetStreamStream

attributes:
  stream:
    name: ORDERS
    subjects: ["orders.>"]
  ingests:
    - {name: orders_events, durable: orders-bronze, table: bronze/orders_events}
"""
ENVELOPE = """\
  envelope: {event_type: eventType, event_id: eventId, event_time: occurredAt}
"""
INLINE = """\
  contract:
    envelope:
      event_type: eventType
      event_id: eventId
      fields:
        eventId: {required: true}
        eventType: {required: true}
    events:
      ExampleEvent:
        fields:
          data.name: {type: text, required: true}
"""
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|File \"[^\"]+\.py\", line \d+")


@dataclass(frozen=True)
class Broken:
    """A broken declaration: its defs.yaml, the files beside it, what the output must say."""

    defs_yaml: str
    files: dict[str, str]
    expected: Callable[[Path], list[str]]  # the component's folder -> texts in the output


def line(text: str, start: str) -> int:
    """The 1-based line of `text` that starts (after indentation) with `start`."""
    return next(i for i, t in enumerate(text.splitlines(), 1) if t.lstrip().startswith(start))


ASYNCAPI = (FIXTURES / "orders.asyncapi.yaml").read_text()
VARCHAR = ASYNCAPI.replace("customerId: {type: string}", "customerId: {type: varchar}")
ORDERS = (FIXTURES / "orders.yaml").read_text()
CRITICAL = ORDERS.replace("severity: warn}", "severity: critical}")
BOTH = HEAD + INLINE + "  asyncapi_file: orders.asyncapi.yaml\n" + ENVELOPE

BROKEN = {
    "a wrong asyncapi_file path": Broken(
        HEAD + "  asyncapi_file: orders.asynapi.yaml\n" + ENVELOPE,
        {"orders.asyncapi.yaml": ASYNCAPI},
        lambda folder: [
            f"{folder}/defs.yaml:9: attributes.asyncapi_file: no file 'orders.asynapi.yaml' "
            f"in {folder}, the folder of this defs.yaml that the path is relative to (its "
            "YAML and JSON files: orders.asyncapi.yaml); fix the path or put the file there",
        ],
    ),
    "an unsupported AsyncAPI payload type": Broken(
        HEAD + "  asyncapi_file: orders.asyncapi.yaml\n" + ENVELOPE,
        {"orders.asyncapi.yaml": VARCHAR},
        lambda folder: [
            f"{folder}/defs.yaml:9: attributes.asyncapi_file: orders.asyncapi.yaml:"
            f"{line(VARCHAR, 'customerId:')}: #/components/schemas/OrderPlaced/properties/data"
            "/properties/customerId/type: unsupported type 'varchar'; use string, integer, "
            'number, boolean, object or array (or one of them and "null", e.g. [string, '
            f'"null"]), or x-jsl-type with a contract type: {TYPE_HELP}',
        ],
    ),
    "contract and asyncapi_file both set": Broken(
        BOTH,
        {"orders.asyncapi.yaml": ASYNCAPI},
        lambda folder: [
            f"{folder}/defs.yaml:{line(BOTH, 'asyncapi_file:')}: attributes.asyncapi_file: the "
            f"contract is declared 2 times, by contract (line {line(BOTH, 'contract:')}) and "
            f"asyncapi_file (line {line(BOTH, 'asyncapi_file:')}); keep one of contract, "
            "contract_file, asyncapi_file, json_schema_files",
        ],
    ),
    "an unknown field type in an inline contract": Broken(
        HEAD + INLINE,
        {},
        lambda folder: [
            f"{folder}/defs.yaml:9: attributes.contract: defs.yaml:{line(INLINE, 'data.name') + 8}"
            ": attributes.contract.events.ExampleEvent.fields['data.name'].type: unknown type "
            f"'text'; use {TYPE_HELP}",
        ],
    ),
    "a rule with an unknown severity in a contract file": Broken(
        HEAD + "  contract_file: orders.yaml\n",
        {"orders.yaml": CRITICAL},
        lambda folder: [
            f"{folder}/defs.yaml:9: attributes.contract_file: orders.yaml:"
            f"{line(CRITICAL, 'data.shippedAt:')}: events.OrderShipped.fields['data.shippedAt']"
            ".severity: unknown severity 'critical'; use one of quarantine, warn, block, "
            "quarantine+block",
        ],
    ),
}


def make_project(root: Path, index: int, broken: Broken) -> Path:
    """A dg project at `root` whose one component is `broken`; returns the component's folder."""
    module = f"broken_{index}"
    (root / "pyproject.toml").write_text(PYPROJECT.format(name=f"broken-{index}", module=module))
    folder = root / module / "defs" / "orders"
    folder.mkdir(parents=True)
    (root / module / "__init__.py").write_text("")
    (root / module / "defs" / "__init__.py").write_text("")
    (root / module / "definitions.py").write_text(DEFINITIONS)
    (folder / "defs.yaml").write_text(broken.defs_yaml)
    for name, text in broken.files.items():
        (folder / name).write_text(text)
    return folder


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str, Path]]:
    """Each broken declaration's `dg check defs`: (exit status, output, component folder);
    the five processes run at once."""
    env = {**os.environ, "NO_COLOR": "1", "DAGSTER_DISABLE_TELEMETRY": "1", "COLUMNS": "200"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    started, begun = {}, time.monotonic()
    for index, (name, broken) in enumerate(BROKEN.items()):
        root = tmp_path_factory.mktemp(f"broken-{index}")
        folder = make_project(root, index, broken)
        process = subprocess.Popen(
            [shutil.which("dg", path=env["PATH"]) or "dg", "check", "defs"],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        started[name] = (process, folder)
    results = {}
    for name, (process, folder) in started.items():
        output, _ = process.communicate(timeout=300)
        results[name] = (process.returncode, output, folder)
    print(f"five dg check defs in {time.monotonic() - begun:.1f}s")
    return results


@pytest.mark.parametrize("broken", list(BROKEN))
def test_dg_check_defs_prints_one_message_with_the_place_and_the_fix_and_no_traceback(
    checked: dict[str, tuple[int, str, Path]], broken: str
) -> None:
    status, output, folder = checked[broken]

    assert status != 0, output
    for text in BROKEN[broken].expected(folder):
        assert text in output, f"{broken}: {text!r} not in:\n{output[-4000:]}"
        assert output.count(text) == 1, f"{broken}: printed more than once:\n{output}"
    assert not TRACEBACK.search(output), f"{broken}: a traceback:\n{output}"
    assert "ComponentDeclarationError: " in output


def both_forms(folder: Path) -> JetStreamStream:
    """A stream whose contract is given twice (inline and as an AsyncAPI file in `folder`)."""
    (folder / "orders.asyncapi.yaml").write_text(ASYNCAPI)
    return JetStreamStream(
        stream=StreamModel(name="ORDERS", subjects=["orders.>"]),
        ingests=[IngestModel(name="orders_events", durable="orders-bronze", table="bronze/o")],
        contract={"events": {}},
        asyncapi_file=str(folder / "orders.asyncapi.yaml"),
    )


def test_the_error_reaches_dagster_and_click_as_its_message_alone(tmp_path: Path) -> None:
    with pytest.raises(ComponentDeclarationError) as raised:
        both_forms(tmp_path).build_defs(ComponentTree.for_test().load_context)
    error = raised.value

    # The component tree lets it through instead of wrapping it in its tree of components.
    with (
        pytest.raises(ComponentDeclarationError),
        ComponentTree.for_test().augment_component_tree_exception(
            Path.cwd(), lambda key: f"loading {key}"
        ),
    ):
        raise error
    # Dagster's load error is its message, without a stack or causes.
    info = serializable_error_info_from_exc_info((type(error), error, error.__traceback__))
    assert info.stack == [] and info.cause is None and info.context is None
    assert info.to_string() == f"ComponentDeclarationError: {error}\n"

    # click (dg launch) prints it as an error and exits 1.
    @click.command()
    def launch() -> None:
        raise error

    result = CliRunner().invoke(launch)
    assert result.exit_code == 1
    assert result.output == f"Error: {error}\n"
    assert isinstance(error, ValueError)


def test_without_a_defs_yaml_the_error_names_where_it_would_be(tmp_path: Path) -> None:
    with pytest.raises(ComponentDeclarationError) as raised:
        both_forms(tmp_path).read_contract(tmp_path)

    assert str(raised.value) == (
        f"{tmp_path}/defs.yaml: attributes.asyncapi_file: the contract is declared 2 times, by "
        "contract and asyncapi_file; keep one of contract, contract_file, asyncapi_file, "
        "json_schema_files"
    )


def test_a_code_server_logs_the_error_as_its_message_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(ComponentDeclarationError) as raised:
        both_forms(tmp_path).read_contract(tmp_path)
    logger = logging.getLogger(CODE_SERVER_LOGGER)

    with caplog.at_level(logging.ERROR, logger=CODE_SERVER_LOGGER):
        try:
            raise raised.value
        except ComponentDeclarationError:
            logger.exception("Error while importing code")  # as dagster/_grpc/server.py does

    assert caplog.text.rstrip().endswith(
        f"Error while importing code: ComponentDeclarationError: {raised.value}"
    )
    assert not TRACEBACK.search(caplog.text)


def test_follow_seconds_without_silver_in_the_ingest_run_is_refused_naming_the_attribute() -> None:
    declared = JetStreamStream(
        stream=StreamModel(name="ORDERS", subjects=["orders.>"]),
        ingests=[IngestModel(name="orders_events", durable="orders-bronze", table="bronze/o")],
        contract=yaml.safe_load(textwrap.dedent(INLINE.replace("text", "string")))["contract"],
        silver_in_ingest_run=False,
        follow_seconds=60,
    )

    with pytest.raises(ComponentDeclarationError) as raised:
        declared.build_defs(ComponentTree.for_test().load_context)

    assert "attributes.follow_seconds: stream 'ORDERS': follow_seconds keeps an ingest run" in str(
        raised.value
    )
    assert "needs a contract and silver_in_ingest_run: true" in str(raised.value)
