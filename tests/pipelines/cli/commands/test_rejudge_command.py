"""`jsl quarantine retry` and `jsl silver rebuild` on a stream declared in a dg project of its
own: silver ran under a strict contract, the defs.yaml is loosened (or tightened), and the
command moves exactly the rows the new contract places elsewhere.

Real nats-server (the watermark and the intent in the ingest's checkpoint bucket), Spark,
Delta; the command runs in this process (`pipelines.cli.main.main`), as `jsl` would.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from pipelines.cli.commands.rejudge import _load
from pipelines.cli.main import main
from pipelines.contract import contract_from_dict
from pipelines.ingest.bronze import BRONZE_SCHEMA
from pipelines.lakehouse.watermarks import WatermarkStore
from pipelines.silver.stage import run_contract_silver, stage_name
from tests.pipelines.silver.contract_changes import NOW, PUBLISHED, placed

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


def _declare(project: Path, stream: str, contract: dict) -> None:
    defs = project / _module(stream) / "defs" / "shop"
    defs.mkdir(parents=True, exist_ok=True)
    declared = {
        "type": "pipelines.components.JetStreamStream",
        "attributes": {
            "stream": {"name": stream, "subjects": [f"{stream.lower()}.>"]},
            "ingests": [{"name": "shop_events", "durable": "shop-bronze", "table": "bronze/shop"}],
            "quarantine_table": "quarantine/shop",
            "contract": contract,
        },
    }
    (defs / "defs.yaml").write_text(yaml.safe_dump(declared, sort_keys=False))


@pytest.fixture
def project(tmp_path: Path, unique_name: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "shop-project"
    package = root / _module(unique_name)
    (package / "defs").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT.format(module=_module(unique_name)))
    (package / "__init__.py").write_text("")
    (package / "defs" / "__init__.py").write_text("")
    _declare(root, unique_name, STRICT)
    monkeypatch.setenv("LAKEHOUSE_ROOT", str(tmp_path / "lakehouse"))
    return root


def _silver_ran(spark, js, project: Path, stream: str, messages: list[dict]):
    """Bronze rows of `messages` (seq 1...), and silver run once under the strict contract."""
    silver = _load(project, stream)
    root = project.parent / "lakehouse"
    rows = [
        (stream, seq, f"{stream.lower()}.placed", PUBLISHED, PUBLISHED.date(), None,
         json.dumps(m).encode(), None, "ingest", NOW)
        for seq, m in enumerate(messages, start=1)
    ]  # fmt: skip
    spark.createDataFrame(rows, BRONZE_SCHEMA).write.format("delta").save(str(root / "bronze/shop"))
    store = WatermarkStore(js.create_key_value(silver.ingest.checkpoint_bucket_spec()))
    run_contract_silver(
        spark, store, contract_from_dict(STRICT), stream=stream, stage=stage_name(stream),
        bronze_path=str(root / "bronze/shop"),
        table_paths={"OrderPlaced": str(root / "silver/shop_placed")},
        quarantine_path=str(root / "quarantine/shop"), run_id="run-1", now=NOW,
    )  # fmt: skip
    return root


def _seqs(spark, path: Path) -> list[int]:
    return sorted(r.seq for r in spark.read.format("delta").load(str(path)).collect())


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
