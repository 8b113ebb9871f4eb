"""Tests of the Dagster UI and CLI paths, and the webserver GraphQL client they share.

`Webserver` drives a running `dagster-webserver` (or `dagster dev`) the way the UI does:
through `/graphql` (workspace status, `launchRun`, `runOrError`, `logsForRun`,
`assetOrError`). The fixtures that start one are in conftest.py.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

REPOSITORY = "__repository__"  # the repository name of a `Definitions` code location


class GraphQLError(AssertionError):
    """The webserver answered a GraphQL request with errors."""


WORKSPACE_QUERY = """
query Workspace {
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        locationOrLoadError {
          __typename
          ... on RepositoryLocation { name }
          ... on PythonError { message stack }
        }
      }
    }
    ... on PythonError { message }
  }
}
"""

LAUNCH_RUN = """
mutation LaunchRun($executionParams: ExecutionParams!) {
  launchRun(executionParams: $executionParams) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
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
    ... on Run { status }
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
        metadataEntries { __typename label ... on IntMetadataEntry { intRepr } }
      }
    }
    ... on AssetNotFoundError { message }
  }
}
"""

TERMINAL_STATUSES = frozenset({"SUCCESS", "FAILURE", "CANCELED"})


@dataclass
class Webserver:
    """A running Dagster webserver and a small client for its GraphQL API (`/graphql`).

    Attributes:
        base_url: e.g. `http://127.0.0.1:40123`.
        log_path: the process's combined stdout and stderr.
        process: the webserver (or `dagster dev`) process.
        location_name: the code location's name, known once `wait_until_loaded` returns.
    """

    base_url: str
    log_path: Path
    process: subprocess.Popen = field(repr=False)
    location_name: str = ""
    http: requests.Session = field(default_factory=requests.Session, repr=False)

    def __post_init__(self) -> None:
        # Loopback only: an http_proxy in the environment (common in CI) must not see it.
        self.http.trust_env = False

    def close(self) -> None:
        """Closes the HTTP session (the process is the fixture's to stop)."""
        self.http.close()

    def log_tail(self, chars: int = 6000) -> str:
        """The end of the process's log, for failure messages."""
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-chars:]
        return "<no log>"

    def graphql(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """Posts a GraphQL request and returns its `data`.

        Raises:
            GraphQLError: the response carries `errors` (a schema or resolver failure).
        """
        response = self.http.post(
            f"{self.base_url}/graphql",
            json={"query": query, "variables": variables or {}},
            timeout=60,
        )
        response.raise_for_status()
        body = response.json()
        if body.get("errors"):
            raise GraphQLError(f"GraphQL errors from {self.base_url}: {body['errors']}")
        return body["data"]

    def wait_until_loaded(self, timeout: float) -> None:
        """Waits until the webserver answers and its code location has loaded.

        Raises:
            AssertionError: the process exited, the location failed to load, or `timeout`
                seconds passed; the message carries the process's log.
        """
        deadline = time.monotonic() + timeout
        last_problem = "no answer yet"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(
                    f"the webserver exited with {self.process.returncode} at start-up; "
                    f"its log ends with:\n{self.log_tail()}"
                )
            try:
                entries = self.graphql(WORKSPACE_QUERY)["workspaceOrError"]["locationEntries"]
            except (requests.RequestException, GraphQLError, KeyError) as error:
                last_problem, entries = repr(error), []
            for entry in entries:
                location = entry["locationOrLoadError"] or {}
                if location.get("__typename") == "PythonError":
                    raise AssertionError(
                        f"code location {entry['name']!r} failed to load in the webserver: "
                        f"{location['message']}\n{''.join(location.get('stack') or [])}"
                    )
                if location.get("__typename") == "RepositoryLocation":
                    self.location_name = entry["name"]
                    return
                last_problem = f"location {entry['name']!r} is {entry['loadStatus']}"
            time.sleep(1)
        raise AssertionError(
            f"the webserver at {self.base_url} did not load the code location within "
            f"{timeout}s ({last_problem}); its log ends with:\n{self.log_tail()}"
        )

    def launch_run(self, job_name: str, run_config: dict[str, Any] | None = None) -> str:
        """Launches `job_name` through the `launchRun` mutation; returns the run id."""
        result = self.graphql(
            LAUNCH_RUN,
            {
                "executionParams": {
                    "selector": {
                        "repositoryLocationName": self.location_name,
                        "repositoryName": REPOSITORY,
                        "jobName": job_name,
                    },
                    "runConfigData": run_config or {},
                }
            },
        )["launchRun"]
        assert result["__typename"] == "LaunchRunSuccess", f"launchRun({job_name!r}): {result}"
        return result["run"]["runId"]

    def run_failure_report(self, run_id: str) -> str:
        """The run's warnings and errors from `logsForRun`, then the process's log."""
        logs = self.graphql(RUN_LOGS, {"runId": run_id})["logsForRun"]
        lines = []
        for event in logs.get("events", []):
            if event.get("level") in ("WARNING", "ERROR", "CRITICAL"):
                lines.append(f"{event['__typename']} {event['level']}: {event.get('message')}")
            if event.get("error"):
                lines.append(event["error"]["message"] + "".join(event["error"]["stack"] or []))
        if any("marked as failed from outside" in line for line in lines):
            lines.append(
                "(the run's worker process died before it could report: look for its last "
                "words, e.g. a sys.exit at import, in the log below)"
            )
        return (
            f"run {run_id}'s event log says:\n"
            + ("\n".join(lines) or str(logs))
            + f"\n--- {self.log_path.name} ---\n{self.log_tail()}"
        )

    def wait_for_run(self, run_id: str, timeout: float) -> str:
        """Polls `runOrError` until the run ends; returns its status.

        Raises:
            AssertionError: `timeout` seconds passed first (with the run's event log).
        """
        deadline = time.monotonic() + timeout
        status = "UNKNOWN"
        while time.monotonic() < deadline:
            run = self.graphql(RUN_STATUS, {"runId": run_id})["runOrError"]
            assert run["__typename"] == "Run", f"runOrError({run_id!r}): {run}"
            status = run["status"]
            if status in TERMINAL_STATUSES:
                return status
            time.sleep(2)
        raise AssertionError(
            f"run {run_id} still {status} after {timeout}s; {self.run_failure_report(run_id)}"
        )

    def latest_materialization(self, path: list[str]) -> tuple[str, dict[str, int]]:
        """The run id and integer metadata of an asset's latest materialisation."""
        asset = self.graphql(LATEST_MATERIALIZATION, {"assetKey": {"path": path}})["assetOrError"]
        assert asset["__typename"] == "Asset", f"assetOrError({path!r}): {asset}"
        assert asset["assetMaterializations"], f"{'/'.join(path)} has no materialisation"
        latest = asset["assetMaterializations"][0]
        numbers = {
            entry["label"]: int(entry["intRepr"])
            for entry in latest["metadataEntries"]
            if entry["__typename"] == "IntMetadataEntry"
        }
        return latest["runId"], numbers
