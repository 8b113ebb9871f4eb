"""The Dagster webserver, driven through its GraphQL API as the UI drives it.

A real `dagster-webserver -w workspace.yaml` subprocess (the `webserver` fixture) serves
the code location; runs launched through `launchRun` execute in subprocesses of its code
server (DefaultRunLauncher), against a real nats-server, Spark and Delta.
"""

from dagster import AssetKey

from pipelines.file_trash.topology import BRONZE_FILE_EVENTS
from tests.ui import REPOSITORY, Webserver
from tests.ui.conftest import CodeLocationEnv

INGEST_JOB = "ingest_file_events"
BRONZE_KEY = AssetKey(["bronze", BRONZE_FILE_EVENTS.name])
PUBLISHED = 300
RUN_TIMEOUT = 600.0  # seconds: a JVM start, a Delta commit, on a shared 2-core machine

REPOSITORY_CONTENTS = """
query RepositoryContents($selector: RepositorySelector!) {
  repositoryOrError(repositorySelector: $selector) {
    __typename
    ... on Repository {
      jobs { name }
      sensors { name }
      schedules { name }
      assetNodes {
        assetKey { path }
        assetChecksOrError { ... on AssetChecks { checks { name } } }
      }
    }
    ... on Error { message }
  }
}
"""


def test_webserver_serves_every_asset_check_job_sensor_and_schedule_of_the_code_location(
    webserver: Webserver,
):
    from pipelines.definitions import defs

    repository = defs.get_repository_def()
    served = webserver.graphql(
        REPOSITORY_CONTENTS,
        {
            "selector": {
                "repositoryLocationName": webserver.location_name,
                "repositoryName": REPOSITORY,
            }
        },
    )["repositoryOrError"]
    assert served["__typename"] == "Repository", served

    assert {tuple(node["assetKey"]["path"]) for node in served["assetNodes"]} == {
        tuple(key.path) for key in defs.resolve_all_asset_keys()
    }
    served_checks = {
        (tuple(node["assetKey"]["path"]), check["name"])
        for node in served["assetNodes"]
        for check in (node["assetChecksOrError"] or {}).get("checks", [])
    }
    assert served_checks == {
        (tuple(key.asset_key.path), key.name) for key in defs.resolve_asset_graph().asset_check_keys
    }
    assert {job["name"] for job in served["jobs"]} >= {
        job.name for job in defs.resolve_all_job_defs() if not job.name.startswith("__")
    }
    assert {sensor["name"] for sensor in served["sensors"]} == {
        sensor.name for sensor in repository.sensor_defs
    }
    assert {schedule["name"] for schedule in served["schedules"]} == {
        schedule.name for schedule in repository.schedule_defs
    }


def test_run_launched_through_graphql_lands_the_published_events_and_reports_them(
    webserver: Webserver, ui_env: CodeLocationEnv
):
    committed_before = ui_env.consumer_ack_floor()
    last_seq = ui_env.publish(PUBLISHED)

    run_id = webserver.launch_run(INGEST_JOB)
    status = webserver.wait_for_run(run_id, RUN_TIMEOUT)

    assert status == "SUCCESS", webserver.run_failure_report(run_id)
    materialized_by, metadata = webserver.latest_materialization(list(BRONZE_KEY.path))
    assert materialized_by == run_id
    assert metadata["messages"] == PUBLISHED
    assert (metadata["range_start"], metadata["range_end"]) == (committed_before + 1, last_seq)
    assert metadata["dagster/row_count"] == last_seq
    assert metadata["lag"] == 0
    assert ui_env.consumer_ack_floor() == last_seq
    assert (ui_env.bronze_table / "_delta_log").is_dir()
