"""The Dagster webserver, driven through its GraphQL API as the UI drives it.

A real `dagster-webserver -w workspace.yaml` subprocess (the `webserver` fixture) serves
the code location; runs launched through `launchRun` execute in subprocesses of its code
server (DefaultRunLauncher), against a real nats-server, Spark and Delta.
"""

import time
from dagster import AssetKey

from pipelines.file_trash.topology import BRONZE_FILE_EVENTS
from tests.ui.conftest import REPOSITORY, Webserver

INGEST_JOB = "ingest_file_events"
BRONZE_KEY = AssetKey(["bronze", BRONZE_FILE_EVENTS.name])
PUBLISHED = 300
RUN_TIMEOUT = 600.0  # seconds: a JVM start, a Delta commit, on a shared 2-core machine
TERMINAL_STATUSES = {"SUCCESS", "FAILURE", "CANCELED"}

LAUNCH_RUN = """
mutation LaunchRun($executionParams: ExecutionParams!) {
  launchRun(executionParams: $executionParams) {
    __typename
    ... on LaunchRunSuccess { run { runId status } }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on PythonError { message stack }
    ... on Error { message }
  }
}
"""

RUN_STATUS = """
query RunStatus($runId: ID!) {
  runOrError(runId: $runId) {
    __typename
    ... on Run { status jobName }
    ... on Error { message }
  }
}
"""

RUN_LOGS = """
query RunLogs($runId: ID!) {
  logsForRun(runId: $runId) {
    __typename
    ... on EventConnection {
      events {
        __typename
        ... on MessageEvent { message level }
        ... on ErrorEvent { error { message stack } }
      }
    }
    ... on Error { message }
  }
}
"""

LATEST_MATERIALIZATION = """
query LatestMaterialization($assetKey: AssetKeyInput!) {
  assetOrError(assetKey: $assetKey) {
    __typename
    ... on Asset {
      assetMaterializations(limit: 1) {
        runId
        metadataEntries {
          __typename
          label
          ... on IntMetadataEntry { intRepr }
        }
      }
    }
    ... on AssetNotFoundError { message }
  }
}
"""

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


def launch_run(server: Webserver, job_name: str, run_config: dict | None = None) -> str:
    """Launches `job_name` through the `launchRun` mutation; returns the run id."""
    result = server.graphql(
        LAUNCH_RUN,
        {
            "executionParams": {
                "selector": {
                    "repositoryLocationName": server.location_name,
                    "repositoryName": REPOSITORY,
                    "jobName": job_name,
                },
                "runConfigData": run_config or {},
            }
        },
    )["launchRun"]
    assert result["__typename"] == "LaunchRunSuccess", f"launchRun of {job_name!r}: {result}"
    return result["run"]["runId"]


def run_failure_report(server: Webserver, run_id: str) -> str:
    """The run's warnings and errors from `logsForRun`, and the webserver's log."""
    logs = server.graphql(RUN_LOGS, {"runId": run_id})["logsForRun"]
    lines = []
    for event in logs.get("events", []):
        if event.get("level") in ("WARNING", "ERROR", "CRITICAL"):
            lines.append(f"{event['__typename']} {event['level']}: {event.get('message')}")
        if event.get("error"):
            lines.append(event["error"]["message"] + "".join(event["error"].get("stack") or []))
    return (
        f"run {run_id} did not succeed; its event log says:\n"
        + ("\n".join(lines) or str(logs))
        + f"\n--- webserver log ---\n{server.log_tail()}"
    )


def wait_for_run(server: Webserver, run_id: str, timeout: float) -> str:
    """Polls `runOrError` until the run ends or `timeout` seconds pass; returns its status."""
    deadline = time.monotonic() + timeout
    status = "UNKNOWN"
    while time.monotonic() < deadline:
        run = server.graphql(RUN_STATUS, {"runId": run_id})["runOrError"]
        assert run["__typename"] == "Run", f"runOrError({run_id!r}): {run}"
        status = run["status"]
        if status in TERMINAL_STATUSES:
            return status
        time.sleep(2)
    raise AssertionError(
        f"run {run_id} still {status} after {timeout}s\n{run_failure_report(server, run_id)}"
    )


def latest_materialization(server: Webserver, key: AssetKey) -> tuple[str, dict[str, int]]:
    """The run id and integer metadata of `key`'s latest materialisation, via GraphQL."""
    asset = server.graphql(LATEST_MATERIALIZATION, {"assetKey": {"path": list(key.path)}})[
        "assetOrError"
    ]
    assert asset["__typename"] == "Asset", f"assetOrError({key.to_user_string()!r}): {asset}"
    assert asset["assetMaterializations"], f"{key.to_user_string()} has no materialisation"
    latest = asset["assetMaterializations"][0]
    numbers = {
        entry["label"]: int(entry["intRepr"])
        for entry in latest["metadataEntries"]
        if entry["__typename"] == "IntMetadataEntry"
    }
    return latest["runId"], numbers


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
        (tuple(key.asset_key.path), key.name)
        for key in defs.resolve_asset_graph().asset_check_keys
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
    webserver: Webserver,
):
    committed_before = webserver.env.consumer_ack_floor()
    last_seq = webserver.env.publish(PUBLISHED)

    run_id = launch_run(webserver, INGEST_JOB)
    status = wait_for_run(webserver, run_id, RUN_TIMEOUT)

    assert status == "SUCCESS", run_failure_report(webserver, run_id)
    materialized_by, metadata = latest_materialization(webserver, BRONZE_KEY)
    assert materialized_by == run_id
    assert metadata["messages"] == PUBLISHED
    assert (metadata["range_start"], metadata["range_end"]) == (committed_before + 1, last_seq)
    assert metadata["dagster/row_count"] == last_seq
    assert metadata["lag"] == 0
    assert webserver.env.consumer_ack_floor() == last_seq
    assert (webserver.env.bronze_table / "_delta_log").is_dir()

