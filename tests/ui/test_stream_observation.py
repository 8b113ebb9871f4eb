"""The stream as a live asset and the consumer_lag checks, as a person sees them in the UI.

A tick of the code location's observation sensor is evaluated against the deployment's
nats-server and its events are stored the way the daemon stores them
(`instance.report_runless_asset_event`); headless Chromium then renders the stream's asset
page and the bronze asset's checks.
"""

from urllib.parse import quote

from dagster import AssetCheckEvaluation, AssetObservation, build_sensor_context

from resources.jetstream import JetStreamResource
from tests.ui.test_asset_graph import PNG_SIGNATURE, run_chromium, visible_text


def asset_page_url(webserver, path: str, view: str | None = None) -> str:
    url = f"{webserver.base_url}/assets/{quote(path)}"
    return url + (f"?view={view}" if view else "")


def tick_observation_sensor(ui_env) -> list:
    """One tick of the code location's observation sensor, stored as the daemon stores it."""
    from pipelines.definitions import observation_sensor

    resource = JetStreamResource(servers=ui_env.nats_url)
    with ui_env.instance() as instance:
        with build_sensor_context(instance=instance, resources={"jetstream": resource}) as context:
            result = observation_sensor(context)
        for event in result.asset_events:
            instance.report_runless_asset_event(event)
    return result.asset_events


def test_the_stream_page_shows_its_observed_state_and_bronze_shows_the_lag_check(
    chromium, webserver, ui_env, artifacts_dir, tmp_path
):
    # Publishing here would leave messages the session's other UI tests do not expect: the
    # stream is observed as it is.
    with JetStreamResource(servers=ui_env.nats_url).client() as js:
        last_seq = js.streams.info("FILE_EVENTS").last_seq
    events = tick_observation_sensor(ui_env)

    [observed] = [e for e in events if isinstance(e, AssetObservation)]
    assert observed.metadata["stream_last_seq"].value == last_seq
    checks = [e for e in events if isinstance(e, AssetCheckEvaluation)]
    assert {c.check_name for c in checks} == {"consumer_lag"}
    assert len(checks) == 3  # one per ingest

    stream_page = asset_page_url(webserver, "jetstream/FILE_EVENTS")
    text = visible_text(run_chromium(chromium, tmp_path / "p1", stream_page, "--dump-dom"))
    assert "stream_last_seq" in text, text[:80]
    assert str(last_seq) in text

    checks_page = asset_page_url(webserver, "bronze/file_events", view="checks")
    text = visible_text(run_chromium(chromium, tmp_path / "p2", checks_page, "--dump-dom"))
    assert "consumer_lag" in text, text[:80]

    screenshot = artifacts_dir / "stream-asset-FILE_EVENTS.png"
    screenshot.unlink(missing_ok=True)
    run_chromium(chromium, tmp_path / "p3", stream_page, f"--screenshot={screenshot}")
    print(f"stream asset screenshot: {screenshot}")
    assert screenshot.read_bytes()[:8] == PNG_SIGNATURE
