"""`jsl quarantine retry` and `jsl silver rebuild` on a stream declared in a dg project of its
own: silver ran under a strict contract, the defs.yaml is loosened (or tightened), and the
command moves exactly the rows the new contract places elsewhere.

Real nats-server (the watermark and the intent in the ingest's checkpoint bucket), Spark,
Delta; the command runs in this process (`pipelines.cli.main.main`), as `jsl` would. The retry
and the rebuild run with the tables in a folder and on the S3 server (`lakehouse`).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import os
from pathlib import Path

import pytest
import yaml
from chispa import assert_df_equality
from dagster import AssetKey, DagsterInstance, evaluate_automation_conditions, materialize
from pyspark.sql import functions as F

from pipelines.cli.commands.rejudge import _load
from pipelines.cli.main import main
from pipelines.contract import contract_from_dict
from pipelines.ingest.bronze import BRONZE_SCHEMA
from pipelines.lakehouse.watermarks import WatermarkStore
from pipelines.silver.stage import run_contract_silver, stage_name
from resources.lakehouse import LakehouseResource
from resources.quality import DataQualityResource
from resources.spark import SparkResource
from tests.pipelines.silver.contract_changes import NOW, PUBLISHED, placed
from tests.table_roots import UriRoot, root_of

PYPROJECT = """\
[project]
name = "shop-project"
version = "0.1.0"

[tool.dg]
directory_type = "project"

[tool.dg.project]
root_module = "{module}"
registry_modules = ["pipelines.components"]
"""
STRICT = {
    "envelope": {
        "event_type": "eventType",
        "event_id": "eventId",
        "fields": {"eventId": {"required": True}, "eventType": {"required": True}},
    },
    "events": {
        "OrderPlaced": {
            "table": "silver/shop_placed",
            "fields": {
                "data.orderId": {"required": True},
                "data.amount": "decimal(12,2)",
                "data.currency": {"enum": ["EUR", "USD"]},
            },
        }
    },
}


def _module(stream: str) -> str:
    """The project's package: one per test, since Python keeps a package once imported."""
    return f"shop_{stream.lower()}"


def _declare(project: Path, stream: str, contract: dict, aggregates: list | None = None) -> None:
    defs = project / _module(stream) / "defs" / "shop"
    defs.mkdir(parents=True, exist_ok=True)
    declared = {
        "type": "pipelines.components.JetStreamStream",
        "attributes": {
            "stream": {"name": stream, "subjects": [f"{stream.lower()}.>"]},
            "ingests": [{"name": "shop_events", "durable": "shop-bronze", "table": "bronze/shop"}],
            "quarantine_table": "quarantine/shop",
            "contract": contract,
            **({"aggregates": aggregates} if aggregates else {}),
        },
    }
    (defs / "defs.yaml").write_text(yaml.safe_dump(declared, sort_keys=False))


@pytest.fixture
def lakehouse(request: pytest.FixtureRequest, tmp_path: Path) -> Path | UriRoot:
    """The tables' root: a folder beside the project, or with the parameter "s3" (indirect), a
    root on the session's S3 server (`s3_lakehouse`, which points `JSL_SPARK_CONF` at it)."""
    if getattr(request, "param", "local") == "s3":
        return request.getfixturevalue("s3_lakehouse")
    return tmp_path / "lakehouse"


@pytest.fixture
def project(
    tmp_path: Path, unique_name: str, lakehouse: Path | UriRoot, monkeypatch: pytest.MonkeyPatch
) -> Path:
    root = tmp_path / "shop-project"
    package = root / _module(unique_name)
    (package / "defs").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT.format(module=_module(unique_name)))
    (package / "__init__.py").write_text("")
    (package / "defs" / "__init__.py").write_text("")
    _declare(root, unique_name, STRICT)
    monkeypatch.setenv("LAKEHOUSE_ROOT", str(lakehouse))
    return root


def _silver_ran(spark, js, project: Path, stream: str, messages: list[dict], contract=STRICT):
    """Bronze rows of `messages` (seq 1...) under `LAKEHOUSE_ROOT` (`lakehouse`), and silver
    run once under `contract`; returns the root."""
    silver = _load(project, stream)
    root = root_of(os.environ["LAKEHOUSE_ROOT"])
    rows = [
        (stream, seq, f"{stream.lower()}.placed", PUBLISHED, PUBLISHED.date(), None,
         json.dumps(m).encode(), None, "ingest", NOW)
        for seq, m in enumerate(messages, start=1)
    ]  # fmt: skip
    spark.createDataFrame(rows, BRONZE_SCHEMA).write.format("delta").save(str(root / "bronze/shop"))
    store = WatermarkStore(js.create_key_value(silver.ingest.checkpoint_bucket_spec()))
    run_contract_silver(
        spark, store, contract_from_dict(contract), stream=stream, stage=stage_name(stream),
        bronze_path=str(root / "bronze/shop"),
        table_paths={"OrderPlaced": str(root / "silver/shop_placed")},
        quarantine_path=str(root / "quarantine/shop"), run_id="run-1", now=NOW,
    )  # fmt: skip
    return root


def _seqs(spark, path: Path | UriRoot) -> list[int]:
    return sorted(r.seq for r in spark.read.format("delta").load(str(path)).collect())


@pytest.mark.parametrize("lakehouse", ["local", "s3"], indirect=True)
def test_retry_moves_the_rows_a_loosened_rule_admits_and_nothing_else(
    spark, js, nats_server, project: Path, unique_name: str, capsys
):
    messages = [
        placed(1, currency="EUR"),
        placed(2, currency="GBP"),  # breaks the enum: GBP is admitted below
        placed(3, currency="JPY"),  # breaks it still
        {"eventId": "evt-4", "eventType": "OrderPlaced", "data": {}},  # no orderId
    ]
    root = _silver_ran(spark, js, project, unique_name, messages)
    loose = copy.deepcopy(STRICT)
    loose["events"]["OrderPlaced"]["fields"]["data.currency"]["enum"].append("GBP")
    _declare(project, unique_name, loose)

    argv = ["quarantine", "retry", "--stream", unique_name, "--project", str(project)]
    code = main([*argv, "--rule", "currency_in_allowed_values", "--nats-url", nats_server.url])

    out = capsys.readouterr().out
    assert code == 0, out
    assert "1 row(s) that broke currency_in_allowed_values moved to silver" in out
    assert _seqs(spark, root / "silver/shop_placed") == [1, 2]
    assert _seqs(spark, root / "quarantine/shop") == [3, 4]
    quarantined = spark.read.format("delta").load(str(root / "quarantine/shop"))
    errors = {r.seq: r.error for r in quarantined.collect()}
    assert "JPY" in errors[3] and "GBP" in errors[3]  # judged by the new rule's text

    again = main([*argv, "--nats-url", nats_server.url])  # all quarantined rows: none pass

    assert again == 0
    assert _seqs(spark, root / "silver/shop_placed") == [1, 2]
    assert _seqs(spark, root / "quarantine/shop") == [3, 4]


@pytest.mark.parametrize("lakehouse", ["local", "s3"], indirect=True)
def test_rebuild_moves_rows_a_tightened_contract_refuses_out_of_silver(
    spark, js, nats_server, project: Path, unique_name: str, capsys
):
    messages = [placed(1, currency="EUR", amount=5), placed(2, currency="USD")]  # 2: no amount
    root = _silver_ran(spark, js, project, unique_name, messages)
    strict = copy.deepcopy(STRICT)
    strict["events"]["OrderPlaced"]["fields"]["data.amount"] = {
        "type": "decimal(12,2)",
        "required": True,
    }
    _declare(project, unique_name, strict)
    argv = ["silver", "rebuild", "--stream", unique_name, "--project", str(project)]

    code = main([*argv, "--nats-url", nats_server.url])

    out = capsys.readouterr().out
    assert code == 0, out
    assert _seqs(spark, root / "silver/shop_placed") == [1]
    assert _seqs(spark, root / "quarantine/shop") == [2]


def test_a_stream_the_project_does_not_declare_is_named_with_the_ones_it_does(
    nats_server, project: Path, unique_name: str, capsys
):
    code = main(["quarantine", "retry", "--stream", "NOPE", "--project", str(project)])

    err = capsys.readouterr().err
    assert code == 2
    assert "declares no stream 'NOPE'" in err and unique_name in err


def test_since_must_be_an_iso_time(project: Path, unique_name: str):
    with pytest.raises(SystemExit):
        main(["quarantine", "retry", "--stream", unique_name, "--since", "yesterday"])


# Gold over silver/shop_placed, and a blocking rule on silver: gold follows only a
# materialisation of silver whose blocking checks passed.
GOLD = {
    "table": "gold/shop_by_currency",
    "event_type": "OrderPlaced",
    "group_by": ["currency"],
    "measures": {"orders": "count", "revenue": "sum(amount)"},
}
BLOCKING = {**STRICT, "severities": {"required_fields_present": "quarantine+block"}}


class _Automation:
    """The automation sensor's ticks on `instance` over the project's definitions as they are
    loaded now, and the runs of what a tick requests (as the daemon would launch them)."""

    def __init__(self, project: Path, instance, resources: dict) -> None:
        self.project, self.instance, self.resources = project, instance, resources
        self.cursor, self.now = None, dt.datetime.now(dt.timezone.utc)

    def defs(self):
        from dagster.components.core.component_tree import ComponentTree

        return ComponentTree.for_project(self.project).build_defs()

    def tick(self) -> set[str]:
        """Evaluates every automation condition once; runs and returns what it requested."""
        defs = self.defs()
        self.now += dt.timedelta(minutes=1)
        result = evaluate_automation_conditions(
            defs=defs, instance=self.instance, cursor=self.cursor, evaluation_time=self.now
        )
        self.cursor = result.cursor
        keys = [key for key in defs.resolve_all_asset_keys() if result.get_num_requested(key)]
        if keys:
            self.materialize(keys, defs)
        return {key.to_user_string() for key in keys}

    def materialize(self, keys: list[AssetKey], defs=None) -> None:
        """A run of `keys`' assets, as the daemon launches it (with this test's resources)."""
        assets = (defs or self.defs()).assets
        run = materialize(assets, selection=keys, instance=self.instance, resources=self.resources)
        assert run.success


def _gold_is_a_recompute_of_silver(spark, root: Path) -> list[tuple]:
    silver = spark.read.format("delta").load(str(root / "silver/shop_placed"))
    gold = spark.read.format("delta").load(str(root / GOLD["table"]))
    recomputed = silver.groupBy("currency").agg(
        F.count(F.lit(1)).alias("orders"), F.sum("amount").alias("revenue")
    )
    assert_df_equality(gold, recomputed, ignore_row_order=True, ignore_nullable=True)
    return sorted((r.currency, r.orders, str(r.revenue)) for r in gold.collect())


def test_gold_follows_a_retry_and_a_rebuild_with_no_launch_of_its_own(
    spark,
    js,
    nats_server,
    jetstream_resource,
    project: Path,
    unique_name: str,
    monkeypatch,
    capsys,
):
    home = project.parent / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("")
    monkeypatch.setenv("DAGSTER_HOME", str(home))  # the instance `jsl` tells, as `jsl dev`'s
    _declare(project, unique_name, BLOCKING, [GOLD])
    messages = [
        placed(1, currency="EUR", amount=5),
        placed(2, currency="GBP", amount=7),  # quarantined: GBP is admitted below
        placed(3, currency="USD", amount=11),
    ]
    root = _silver_ran(spark, js, project, unique_name, messages, BLOCKING)
    resources = {
        "jetstream": jetstream_resource,
        "spark": SparkResource(ui_enabled=False, shuffle_partitions=1),
        "lakehouse": LakehouseResource(root=str(root)),
        "quality": DataQualityResource(),
    }
    with DagsterInstance.get() as instance:
        automation = _Automation(project, instance, resources)
        assert automation.tick() == set()  # nothing materialised yet
        # Silver's run with nothing new reports its tables and checks (the blocking one passed).
        automation.materialize(
            [AssetKey(["silver", "shop_placed"]), AssetKey(["quarantine", "shop"])]
        )
        assert automation.tick() == {GOLD["table"]}
        assert _gold_is_a_recompute_of_silver(spark, root) == [
            ("EUR", 1, "5.00"),
            ("USD", 1, "11.00"),
        ]
        assert automation.tick() == set()  # nothing changed: gold is not requested again

        loose = copy.deepcopy(BLOCKING)
        loose["events"]["OrderPlaced"]["fields"]["data.currency"]["enum"].append("GBP")
        _declare(project, unique_name, loose, [GOLD])
        argv = ["quarantine", "retry", "--stream", unique_name, "--project", str(project)]
        assert main([*argv, "--nats-url", nats_server.url]) == 0
        told = f"Dagster ({home}): silver/shop_placed, quarantine/shop reported materialised"
        assert told in capsys.readouterr().out

        assert automation.tick() == {GOLD["table"]}  # no launch: the retry told Dagster
        assert _gold_is_a_recompute_of_silver(spark, root) == [
            ("EUR", 1, "5.00"), ("GBP", 1, "7.00"), ("USD", 1, "11.00")
        ]  # fmt: skip

        _declare(project, unique_name, BLOCKING, [GOLD])  # GBP refused again: rebuild, as a job
        rebuild = automation.defs().resolve_job_def(f"rejudge_{unique_name.lower()}")
        config = {"ops": {f"rejudge_{unique_name.lower()}_rows": {"config": {"mode": "rebuild"}}}}
        run = rebuild.execute_in_process(run_config=config, instance=instance, resources=resources)
        assert run.success

        assert automation.tick() == {GOLD["table"]}
        assert _gold_is_a_recompute_of_silver(spark, root) == [
            ("EUR", 1, "5.00"),
            ("USD", 1, "11.00"),
        ]
