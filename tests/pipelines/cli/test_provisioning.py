"""The declared topology: the file trash pipeline's plus every `JetStreamStream` component's,
read from a dg project's defs folder and reconciled on a real nats-server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from pipelines.cli.provisioning import declared_topology, merge_topologies, project_topology
from pipelines.file_trash.topology import FILE_TRASH_TOPOLOGY
from resources.jetstream import JetStreamClient, StreamSpec, Topology, reconcile
from tests.pipelines.components.test_stream_component import DEFINITIONS, PYPROJECT

ORDERS_DEFS = {
    "type": "pipelines.components.JetStreamStream",
    "attributes": {
        "stream": {"name": "ORDERS_PROVISIONED", "subjects": ["orders-provisioned.>"]},
        "ingests": [
            {
                "name": "placed",
                "durable": "orders-placed",
                "table": "bronze/placed",
                "filter_subjects": ["orders-provisioned.placed"],
                "replay": True,
            },
            {
                "name": "shipped",
                "durable": "orders-shipped",
                "table": "bronze/shipped",
                "filter_subjects": ["orders-provisioned.shipped"],
            },
        ],
    },
}


@pytest.fixture
def orders_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A dg project whose defs folder declares one stream with two filtered ingests."""
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    package = tmp_path / "orders_project"
    (package / "defs" / "orders").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "defs" / "__init__.py").write_text("")
    (package / "definitions.py").write_text(DEFINITIONS)
    (package / "defs" / "orders" / "defs.yaml").write_text(yaml.safe_dump(ORDERS_DEFS))
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m.partition(".")[0] == "orders_project"]:
        monkeypatch.delitem(sys.modules, name)  # another test's project of the same name
    return tmp_path


def test_a_declared_stream_is_provisioned_beside_the_file_trash_topology(
    orders_project: Path, js: JetStreamClient
) -> None:
    topology = declared_topology(orders_project)

    assert [s.name for s in topology.streams] == ["FILE_EVENTS", "ORDERS_PROVISIONED"]
    assert {(c.stream, c.durable) for c in topology.consumers} >= {
        ("ORDERS_PROVISIONED", "orders-placed"),
        ("ORDERS_PROVISIONED", "orders-shipped"),
    }
    # The checkpoint and replay buckets are shared: declared once, as the file trash does.
    assert [b.bucket for b in topology.kv_buckets] == [
        b.bucket for b in FILE_TRASH_TOPOLOGY.kv_buckets
    ]

    reconcile(js, topology)

    assert js.streams.info("ORDERS_PROVISIONED").subjects == ("orders-provisioned.>",)
    placed = js.consumers.info("ORDERS_PROVISIONED", "orders-placed")
    assert placed.spec.filter_subjects == ("orders-provisioned.placed",)


def test_a_stream_declared_twice_differently_is_refused() -> None:
    one = Topology(streams=(StreamSpec("TWICE", ("twice.>",)),))
    other = Topology(streams=(StreamSpec("TWICE", ("twice.a",)),))

    assert merge_topologies(one, one) == one
    with pytest.raises(ValueError, match="stream 'TWICE' is declared twice, differently"):
        merge_topologies(one, other)


def test_another_project_provisions_only_its_own_streams(orders_project: Path) -> None:
    topology = project_topology(orders_project)

    assert [s.name for s in topology.streams] == ["ORDERS_PROVISIONED"]
    assert {c.durable for c in topology.consumers} == {"orders-placed", "orders-shipped"}


def test_a_project_that_declares_no_stream_is_named_with_what_to_do(orders_project: Path) -> None:
    (orders_project / "orders_project" / "defs" / "orders" / "defs.yaml").unlink()

    with pytest.raises(ValueError, match="declares no JetStreamStream component") as raised:
        project_topology(orders_project)

    assert str(orders_project.resolve()) in str(raised.value)
    assert "dg scaffold defs pipelines.components.JetStreamStream" in str(raised.value)
