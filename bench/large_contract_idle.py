"""A run with nothing new, for a large contract against a small one (issue 50), in one run.

For each contract, in its own temporary folder (an embedded nats-server, Delta tables, and a
persistent Dagster instance, as `dg launch` writes to):

1. the `JetStreamStream` component is declared and its definitions built (timed: `load`, the
   contract read from its files and the assets and checks made, as every code-server start
   and launch pays);
2. the examples are published and one `materialize` of every asset lands them (Spark);
3. `--runs` more `materialize` calls of every asset, each with nothing new, are timed
   (`idle`): the bronze and silver steps find it from the KV and the Delta logs, start no
   Spark, and report every table and every check (carried over) to the instance;
4. then `--runs` launches from the command line, `dagster asset materialize --select '*'`
   on a file that builds the same component with the project's resources (from
   `NATS_URL`, `LAKEHOUSE_ROOT`, `DAGSTER_HOME`), each a fresh process timed from start to
   exit (`cli`: the CLI's start, the code's import and load, and the run), as `dg launch`.

The large contract is six GitHub webhook event types of the corpus's npm
`@octokit/webhooks-schemas` (draft-07, `json_schema_files`, the event type from the subject);
the small one the ORDERS fixture contract. Prints for each the event types, rules, asset
checks, `load`, the median `idle` and the median `cli`, then the ratios large / small.

    .venv/bin/python bench/large_contract_idle.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the corpus lives in tests/

import yaml
from dagster import ComponentTree, DagsterInstance, materialize
from schema_verdicts import orders_payload

from pipelines.components.stream import JetStreamStream
from pipelines.settings import PROJECT_DIR
from resources.jetstream import EmbeddedNatsServer, JetStreamResource, reconcile
from resources.lakehouse import LakehouseResource
from resources.quality import DataQualityResource
from resources.spark import SparkResource
from tests.pipelines.contract.corpus import corpus_events

ORDERS = PROJECT_DIR / "tests/pipelines/contract/fixtures/orders.yaml"
GITHUB = (
    "octokit.push", "octokit.issues.opened", "octokit.issue_comment.created",
    "octokit.pull_request.opened", "octokit.release.published", "octokit.star.created",
)  # fmt: skip
DAGSTER = Path(sys.executable).parent / "dagster"
INGEST = {"name": "events", "durable": "events-bronze", "table": "bronze/events"}


def _token(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _github(folder: Path) -> tuple[dict, list[tuple[str, bytes]]]:
    """The large contract's component attributes (its schema files written to `folder`) and
    its messages: every example of each event type, on `github.<event type>`."""
    events = [e for e in corpus_events() if e.name in GITHUB]
    files, messages = [], []
    for event in events:
        files.append(str(folder / f"{_token(event.name)}.schema.json"))
        Path(files[-1]).write_text(json.dumps(event.schema))
        messages += [(f"github.{_token(event.name)}", text.encode()) for text in event.examples]
    attributes = {
        "stream": {"name": "GITHUB", "subjects": ["github.>"]},
        "ingests": [INGEST],
        "json_schema_files": files,
        "envelope": {"event_type": "subject:1"},
    }
    return attributes, messages


def _orders(folder: Path) -> tuple[dict, list[tuple[str, bytes]]]:
    """The small contract's attributes and 20 valid orders (`folder` unused)."""
    messages = [("orders.placed", orders_payload(n).encode()) for n in range(20)]
    attributes = {
        "stream": {"name": "ORDERS", "subjects": ["orders.>"]},
        "ingests": [INGEST],
        "contract_file": str(ORDERS),
    }
    return attributes, messages


LAUNCHED = """\
from pathlib import Path

import yaml
from dagster import ComponentTree

from pipelines.components.stream import JetStreamStream

declared = yaml.safe_load((Path(__file__).parent / "defs.yaml").read_text())["attributes"]
defs = JetStreamStream(**declared).build_defs(ComponentTree.for_test().load_context)
"""


def _launch(folder: Path, nats_url: str) -> float:
    """Seconds of one `dagster asset materialize --select '*'` of the folder's component."""
    (folder / "launched.py").write_text(LAUNCHED)
    env = {
        **os.environ,
        "NATS_URL": nats_url,
        "LAKEHOUSE_ROOT": str(folder / "lakehouse"),
        "DAGSTER_HOME": str(folder / "dagster_home"),
        "PYTHONPATH": str(PROJECT_DIR),
    }
    command = [str(DAGSTER), "asset", "materialize", "-f", str(folder / "launched.py")]
    start = time.perf_counter()
    subprocess.run([*command, "--select", "*"], env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def measure(name: str, build, runs: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix=f"jsl-idle-{name}-"))
    attributes, messages = build(folder)
    (folder / "defs.yaml").write_text(
        yaml.safe_dump({"type": "pipelines.components.JetStreamStream", "attributes": attributes})
    )
    (folder / "dagster_home").mkdir()
    with (
        EmbeddedNatsServer(store_dir=folder / "nats") as server,
        DagsterInstance.local_temp(str(folder / "dagster_home")) as instance,
    ):
        start = time.perf_counter()
        declared = JetStreamStream(**attributes)
        defs = declared.build_defs(ComponentTree.for_test().load_context)
        load = time.perf_counter() - start
        checks = len(defs.resolve_asset_graph().asset_check_keys)
        contract = declared.read_contract(folder)
        resources = {
            "jetstream": JetStreamResource(servers=server.url),
            "spark": SparkResource(ui_enabled=False, shuffle_partitions=2),
            "lakehouse": LakehouseResource(root=str(folder / "lakehouse")),
            "quality": DataQualityResource(),
        }
        with resources["jetstream"].client() as client:
            reconcile(client, declared.topology())
            client.publish_batch(messages)
        landed = materialize(defs.assets, resources=resources, instance=instance)
        assert landed.success
        idle = []
        for _ in range(runs):
            start = time.perf_counter()
            again = materialize(defs.assets, resources=resources, instance=instance)
            idle.append(time.perf_counter() - start)
            assert again.success
            reported = len(again.get_asset_check_evaluations())
        cli = [_launch(folder, server.url) for _ in range(runs)]
    figures = {
        "event_types": len(contract.event_types),
        "rules": len(contract.rules),
        "checks": checks,
        "checks_reported": reported,
        "load_s": load,
        "idle_s": statistics.median(idle),
        "cli_s": statistics.median(cli),
    }
    print(
        f"{name}: {figures['event_types']} event types, {figures['rules']} rules, "
        f"{checks} asset checks ({reported} reported by a run with nothing new); "
        f"load {load:.2f} s, run with nothing new {figures['idle_s']:.2f} s in process, "
        f"{figures['cli_s']:.2f} s launched from the CLI (medians of {runs})",
        flush=True,
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs with nothing new")
    args = parser.parse_args()
    large = measure("large (GitHub webhooks)", _github, args.runs)
    small = measure("small (ORDERS)", _orders, args.runs)
    print(
        f"large / small: load {large['load_s'] / small['load_s']:.1f}x, run with nothing new "
        f"{large['idle_s'] / small['idle_s']:.1f}x in process, "
        f"{large['cli_s'] / small['cli_s']:.1f}x launched"
    )


if __name__ == "__main__":
    main()
