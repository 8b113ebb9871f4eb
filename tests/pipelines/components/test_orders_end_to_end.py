"""A stream declared only in YAML lands exactly, through the real tools, end to end.

A temporary dg project declares two `JetStreamStream` components and nothing else:

- `orders`: stream ORDERS, its contract in the YAML form (`contract_file:`, a copy of
  `tests/pipelines/contract/fixtures/orders.yaml`);
- `orders_twin`: stream ORDERS_TWIN on its own subjects, consumer, bronze, silver and
  quarantine tables, its contract read from the AsyncAPI document of the same contract
  (`asyncapi_file:` + `envelope:` + `tables:` + `derived:`), rebound to ORDERS_TWIN.

Their topology is provisioned on a real nats-server by `jsl provision --project`, the same
1,000 ORDERS events (10% bad, of ten kinds: `tests/pipelines/silver/test_orders.py`'s
generator) are published to both streams, and one `dg launch --assets '*'` (one process, one
Spark JVM) lands them. Then: bronze holds each message once, each silver table exactly the
good events, the quarantine exactly the bad ones with the rules they broke, the consumers are
caught up, and the twin's tables hold what ORDERS' hold. A second `dg launch` writes nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from pipelines.cli.provisioning import project_topology
from pipelines.lakehouse.delta_tables import table_version
from resources.jetstream import EmbeddedNatsServer, JetStreamResource, plan
from resources.jetstream.topology.plan import Action
from tests.pipelines.components.test_stream_component import (
    COMPONENT,
    DEFINITIONS,
    FIXTURES,
    PYPROJECT,
)
from tests.pipelines.silver.test_orders import (
    COUNT,
    collected,
    encoded,
    expected_placed,
    expected_quarantine,
    expected_shipped,
    payload,
)

# Its own package name: other tests import a temporary `orders_project` of their own.
PACKAGE = "orders_end_to_end"
# A gold table declared without Python: OrderPlaced per day and currency.
GOLD = "gold/orders_daily_by_currency"
DAILY = {
    "table": GOLD,
    "event_type": "OrderPlaced",
    "group_by": ["currency"],
    "time": {"column": "occurred_at", "grain": "day"},
    "measures": {"orders": "count", "revenue": "sum(amount)", "largest": "max(amount)"},
}
# The columns of test_orders' expected rows, in its order.
PLACED_COLUMNS = (
    "event_id", "event_type", "occurred_at", "order_id", "customer_id", "amount", "currency",
    "amount_cents", "stream", "seq", "subject", "published", "run_id", "processed_at",
    "contract_version",
)  # fmt: skip
SHIPPED_COLUMNS = (
    "event_id", "event_type", "occurred_at", "order_id", "shipped_at", "stream", "seq",
    "subject", "published", "run_id", "processed_at", "contract_version",
)  # fmt: skip
# What differs between two runs landing the same events.
RUN_COLUMNS = {"published", "run_id", "processed_at", "quarantined_at", "ingest_run_id"}
RUN_COLUMNS |= {"ingested_at", "published_date", "headers"}
# Where a stream's own identity shows in a row (the contract's fingerprint covers the
# event type's table, which is the stream's).
STREAM_COLUMNS = {"stream", "subject", "seq", "source_table", "contract_version"}


@dataclass(frozen=True)
class Declared:
    """One declared stream: its name, subjects, consumer and tables."""

    name: str

    @property
    def prefix(self) -> str:
        return self.name.lower()

    @property
    def durable(self) -> str:
        return f"{self.prefix.replace('_', '-')}-bronze"

    @property
    def bronze(self) -> str:
        return f"bronze/{self.prefix}_events"

    @property
    def silver(self) -> dict[str, str]:
        """Event type -> its silver table."""
        return {
            "OrderPlaced": f"silver/{self.prefix}_placed",
            "OrderShipped": f"silver/{self.prefix}_shipped",
        }

    @property
    def quarantine(self) -> str:
        return f"quarantine/{self.prefix}"

    def subject(self, i: int) -> str:
        """Row i's subject, as test_orders' bronze rows have it."""
        return f"{self.prefix}.placed" if i % 2 == 0 else f"{self.prefix}.shipped"

    def attributes(self) -> dict:
        """The component's attributes, without the contract."""
        return {
            "stream": {"name": self.name, "subjects": [f"{self.prefix}.>"]},
            "ingests": [
                {"name": f"{self.prefix}_events", "durable": self.durable, "table": self.bronze}
            ],
        }


ORDERS = Declared("ORDERS")
TWIN = Declared("ORDERS_TWIN")
STREAMS = (ORDERS, TWIN)


def twin_asyncapi() -> dict:
    """The ORDERS AsyncAPI document with its ORDERS channels rebound to ORDERS_TWIN's."""
    document = yaml.safe_load((FIXTURES / "orders.asyncapi.yaml").read_text())
    for channel in document["channels"].values():
        binding = channel["bindings"]["nats"]["jetstream"]
        if binding["stream"] == ORDERS.name:
            binding["stream"] = TWIN.name
            channel["address"] = channel["address"].replace(ORDERS.prefix, TWIN.prefix, 1)
    return document


def declare(folder: Path, attributes: dict) -> None:
    folder.mkdir(parents=True)
    declared = {"type": COMPONENT, "attributes": attributes}
    (folder / "defs.yaml").write_text(yaml.safe_dump(declared, sort_keys=False))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dg project whose defs folder declares ORDERS (YAML contract) and its twin (AsyncAPI)."""
    root = tmp_path_factory.mktemp("orders-end-to-end")
    pyproject = PYPROJECT.replace("orders-project", "orders-end-to-end")
    (root / "pyproject.toml").write_text(pyproject.replace("orders_project", PACKAGE))
    defs = root / PACKAGE / "defs"
    defs.mkdir(parents=True)
    (root / PACKAGE / "__init__.py").write_text("")
    (defs / "__init__.py").write_text("")
    (root / PACKAGE / "definitions.py").write_text(DEFINITIONS)

    declare(
        defs / "orders",
        {**ORDERS.attributes(), "contract_file": "orders.yaml", "aggregates": [DAILY]},
    )
    shutil.copy(FIXTURES / "orders.yaml", defs / "orders" / "orders.yaml")
    envelope = {"event_type": "eventType", "event_id": "eventId", "event_time": "occurredAt"}
    twin = {
        "asyncapi_file": "orders.asyncapi.yaml",
        "envelope": envelope,
        "tables": TWIN.silver,
        "derived": {"OrderPlaced": {"amount_cents": "CAST(amount * 100 AS BIGINT)"}},
        # The columns orders.yaml gives (data.amount -> amount), not one struct `data`.
        "nested_objects": "flatten",
    }
    declare(defs / "orders_twin", {**TWIN.attributes(), **twin})
    document = yaml.safe_dump(twin_asyncapi(), sort_keys=False)
    (defs / "orders_twin" / "orders.asyncapi.yaml").write_text(document)
    return root


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedNatsServer]:
    """A nats-server of this module's own: ORDERS must start at seq 1."""
    with EmbeddedNatsServer(store_dir=tmp_path_factory.mktemp("nats")) as running:
        yield running


@pytest.fixture(scope="module")
def jetstream(server: EmbeddedNatsServer) -> JetStreamResource:
    return JetStreamResource(servers=server.url, connect_timeout=5, request_timeout=5)


@pytest.fixture(scope="module")
def environment(
    tmp_path_factory: pytest.TempPathFactory, server: EmbeddedNatsServer
) -> dict[str, str]:
    """The environment of `dg launch`: this server, tables and Dagster home under tmp."""
    data = tmp_path_factory.mktemp("data")
    (data / "dagster_home").mkdir()
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("NATS_", "LAKEHOUSE_", "DAGSTER_"))
    }
    env.update(
        NATS_URL=server.url,
        LAKEHOUSE_DATA_DIR=str(data),
        LAKEHOUSE_ROOT=str(data / "lakehouse"),
        DAGSTER_HOME=str(data / "dagster_home"),
        DAGSTER_DISABLE_TELEMETRY="1",
        NO_COLOR="1",
        COLUMNS="200",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    )
    return env


def launch(project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`dg launch --assets '*'` in `project`: every asset and check, in one process."""
    done = subprocess.run(
        ["dg", "launch", "--assets", "*"],  # the component's in-process executor: one JVM
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-10000:]
    return done


@pytest.fixture(scope="module")
def provisioned(
    project: Path, environment: dict[str, str], server: EmbeddedNatsServer
) -> list[str]:
    """`jsl provision --project` on the temporary project; returns its plan's lines."""
    done = subprocess.run(
        ["jsl", "provision", "--project", str(project), "--yes", "--nats-url", server.url],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.splitlines()


@pytest.fixture(scope="module")
def landed(
    project: Path, environment: dict[str, str], jetstream: JetStreamResource, provisioned: list
) -> Path:
    """Publishes the 1,000 events to both streams, launches once; returns the table root."""
    with jetstream.client() as js:
        for stream in STREAMS:
            acks = js.publish_batch((stream.subject(i), encoded(payload(i))) for i in range(COUNT))
            assert [(a.stream, a.seq) for a in acks] == [(stream.name, i + 1) for i in range(COUNT)]
    launch(project, environment)
    return Path(environment["LAKEHOUSE_ROOT"])


def count(spark, root: Path, table: str) -> int:
    """How many rows the table holds (`rows` gives a set: a repeated row shows only here)."""
    return spark.read.format("delta").load(str(root / table)).count()


def rows(spark, root: Path, table: str, columns) -> set[tuple]:
    """The table's distinct rows as `columns`, arrays as tuples."""
    frame = spark.read.format("delta").load(str(root / table)).select(*columns)
    return {tuple(tuple(v) if isinstance(v, list) else v for v in r) for r in frame.collect()}


def expected_silver(stream: Declared, event_type: str, columns) -> list[tuple]:
    """test_orders' expected rows of `event_type`, on `stream`, as `columns`."""
    names, expected = {
        "OrderPlaced": (PLACED_COLUMNS, expected_placed()),
        "OrderShipped": (SHIPPED_COLUMNS, expected_shipped()),
    }[event_type]
    found = []
    for row in expected:
        values = dict(zip(names, row, strict=True))
        values["stream"] = stream.name
        values["subject"] = values["subject"].replace(ORDERS.prefix, stream.prefix, 1)
        found.append(tuple(values[name] for name in columns))
    return found


def twin_error(error: str | None) -> str | None:
    """ORDERS' quarantine error as the twin's says it."""
    return error and error.replace(f"stream {ORDERS.name!r}", f"stream {TWIN.name!r}")


def data_columns(spark, root: Path, table: str) -> list[str]:
    """The table's columns, without those a run or the stream decide."""
    columns = spark.read.format("delta").load(str(root / table)).columns
    return [c for c in columns if c not in RUN_COLUMNS | STREAM_COLUMNS]


def test_both_streams_consumers_and_buckets_are_provisioned(
    project: Path, provisioned: list[str], jetstream: JetStreamResource
) -> None:
    created = {
        line.split(": ", 1)[1].strip().removesuffix(": created")
        for line in provisioned
        if line.endswith(": created")
    }

    assert {"stream 'ORDERS'", "stream 'ORDERS_TWIN'"} <= created
    assert {f"consumer '{s.name}/{s.durable}'" for s in STREAMS} <= created
    assert any("'lakehouse-checkpoints'" in line for line in created)
    assert any("'lakehouse-artifacts'" in line for line in created)  # silver's reports
    assert not any("FILE_EVENTS" in line for line in provisioned)  # only this project's
    with jetstream.client() as js:
        assert {c.action for c in plan(js, project_topology(project))} == {Action.UNCHANGED}


def test_bronze_holds_each_message_once_and_the_consumers_are_caught_up(
    spark, landed: Path, jetstream: JetStreamResource
) -> None:
    for stream in STREAMS:
        bronze = rows(spark, landed, stream.bronze, ["stream", "seq", "subject", "payload"])

        assert len(bronze) == count(spark, landed, stream.bronze) == COUNT
        assert {(s, seq) for s, seq, _, _ in bronze} == {(stream.name, i + 1) for i in range(COUNT)}
        assert {(seq, subject, bytes(data)) for _, seq, subject, data in bronze} == {
            (i + 1, stream.subject(i), encoded(payload(i))) for i in range(COUNT)
        }
    with jetstream.client() as js:
        for stream in STREAMS:
            consumer = js.consumers.info(stream.name, stream.durable)
            assert (consumer.num_pending, consumer.ack_floor_stream_seq) == (0, COUNT)


@pytest.mark.parametrize("stream", STREAMS, ids=lambda s: s.name)
@pytest.mark.parametrize("event_type", ["OrderPlaced", "OrderShipped"])
def test_each_silver_table_holds_exactly_the_good_events(
    spark, landed: Path, stream: Declared, event_type: str
) -> None:
    table = stream.silver[event_type]
    columns = [*data_columns(spark, landed, table), "stream", "seq", "subject"]
    schema = spark.read.format("delta").load(str(landed / table)).select(*columns).schema

    found = rows(spark, landed, table, columns)

    assert found == collected(spark, expected_silver(stream, event_type, columns), schema)
    assert len(found) == count(spark, landed, table)
    assert len(found) == {"OrderPlaced": 500, "OrderShipped": 410}[event_type]


@pytest.mark.parametrize("stream", STREAMS, ids=lambda s: s.name)
def test_the_quarantine_holds_exactly_the_bad_events_with_the_rules_they_broke(
    spark, landed: Path, stream: Declared
) -> None:
    columns = ["stream", "seq", "failed_rules", "event_id", "event_type", "source_table"]
    found = rows(spark, landed, stream.quarantine, columns)

    assert {row[1]: (list(row[2]), row[3], row[4]) for row in found} == expected_quarantine()
    assert len(found) == count(spark, landed, stream.quarantine) == 90
    assert {(row[0], row[5]) for row in found} == {(stream.name, stream.bronze)}


@pytest.mark.parametrize("event_type", ["OrderPlaced", "OrderShipped", None])
def test_the_twin_declared_in_asyncapi_holds_what_orders_holds(
    spark, landed: Path, event_type: str | None
) -> None:
    orders = ORDERS.silver[event_type] if event_type else ORDERS.quarantine
    twin = TWIN.silver[event_type] if event_type else TWIN.quarantine
    columns = data_columns(spark, landed, twin)
    # A quarantined copy's error names the stream where the event was first seen.
    renamed = {
        tuple(
            twin_error(value) if name == "error" else value
            for name, value in zip(columns, row, strict=True)
        )
        for row in rows(spark, landed, orders, columns)
    }

    assert rows(spark, landed, twin, columns) == renamed
    assert set(data_columns(spark, landed, orders)) == set(columns)  # amount_cents too


def test_the_declared_aggregate_groups_the_silver_table(spark, landed: Path) -> None:
    placed = rows(
        spark,
        landed,
        ORDERS.silver["OrderPlaced"],
        ["event_id", "occurred_at", "currency", "amount"],
    )
    groups: dict[tuple, list] = {}
    for _, at, currency, amount in placed:
        groups.setdefault((at.date(), currency), []).append(amount)

    gold = rows(spark, landed, GOLD, ["day", "currency", "orders", "revenue", "largest"])

    assert gold == {
        (day, currency, len(amounts), sum(amounts), max(amounts))
        for (day, currency), amounts in groups.items()
    }
    assert sum(n for _, _, n, _, _ in gold) == len(placed) == 500


def test_a_second_launch_writes_nothing(
    spark, project: Path, environment: dict[str, str], landed: Path
) -> None:
    tables = [t for s in STREAMS for t in (s.bronze, *s.silver.values(), s.quarantine)]
    tables.append(GOLD)

    def state() -> dict[str, tuple[int | None, int]]:
        return {t: (table_version(spark, str(landed / t)), count(spark, landed, t)) for t in tables}

    before = state()
    launch(project, environment)

    assert state() == before
