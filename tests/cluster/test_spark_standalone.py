"""The exactly-once ingest on a Spark standalone cluster: a master and 2 workers started from
the pyspark wheel on loopback, the readers running in the workers' executors.

The driver runs in a child process (`ingest_child.py`) with `JSL_SPARK_MASTER` set to the
cluster, the project shipped as a zip (`JSL_SPARK_SHIP_CODE`), and the table root on this
host's disk, which the workers share (`JSL_SPARK_SHARED_FS`), or in the S3 server (SeaweedFS)
with no shared folder: the executors write the data files to S3 themselves.
"""

from __future__ import annotations

import json

import pytest

from tests.cluster.conftest import run_child, spec_fields
from tests.pipelines.ingest.harness import make_ingest, publish_events
from tests.table_roots import UriRoot

# Two executors of 1 core and 768 MiB, one per worker.
EXECUTORS_CONF = {
    "spark.executor.memory": "768m",
    "spark.executor.cores": "1",
    "spark.cores.max": "2",
}


def standalone_env(master_url: str, s3_conf: dict[str, str] | None = None) -> dict[str, str]:
    """The driver's settings: the cluster, the code shipped, and the table root shared
    through the local disk, or (`s3_conf`, S3A's settings) in the S3 server, with no shared
    folder. The workers, started from this process, pass its AWS variables to executors."""
    shared = {} if s3_conf else {"JSL_SPARK_SHARED_FS": "1"}
    return {
        "JSL_SPARK_MASTER": master_url,
        **shared,
        "JSL_SPARK_SHIP_CODE": "1",
        "JSL_SPARK_CONF": json.dumps({**EXECUTORS_CONF, **(s3_conf or {})}),
    }


@pytest.mark.parametrize("any_root", ["local", "s3"], indirect=True)
def test_ingest_on_a_standalone_cluster_reads_in_the_executors_and_lands_each_message_once(
    js, nats_server, standalone_cluster, unique_name, any_root, request
):
    ingest = make_ingest(js, unique_name, any_root, readers=2)
    published = publish_events(js, unique_name, 300, seed=31)
    on_s3 = isinstance(any_root, UriRoot)
    s3_conf = request.getfixturevalue("s3_server").spark_conf() if on_s3 else None

    report = run_child(
        standalone_env(standalone_cluster.master_url, s3_conf),
        nats_url=nats_server.url,
        table_path=ingest.path,
        spec=spec_fields(ingest.spec),
        published=published,
        steps=[
            {"do": "probe"},
            {"do": "ingest", "run_id": "standalone-1"},
            {"do": "verify"},
            {"do": "executors"},
            {"do": "ingest", "run_id": "standalone-2"},
        ],
    )
    probe, landed, verdict, executors, again = report["steps"]

    # Python tasks run in the workers' executors (their JVMs are the Python workers'
    # parents), not in the driver, and import the project from the shipped zip.
    assert len(probe) == 2
    assert {task["jvm"].split("--executor-id ")[1].split()[0] for task in probe} <= {"0", "1"}
    for task in probe:
        assert task["pid"] != report["driver_pid"]
        assert "CoarseGrainedExecutorBackend" in task["jvm"]
        assert "jetstream_lakehouse-" in task["module"] and ".zip" in task["module"]
    # The ingest's readers and its Delta write ran as tasks on both executors, none on the
    # driver.
    assert set(executors) == {"driver", "0", "1"}
    assert executors["driver"] == 0 and executors["0"] > 0 and executors["1"] > 0

    assert (landed["start"], landed["end"], landed["messages"], landed["written"]) == (
        1,
        300,
        300,
        True,
    )
    assert landed["bytes"] > 0
    assert verdict == "exactly once"
    assert (again["start"], again["messages"]) == (None, 0)  # nothing new, nothing written
