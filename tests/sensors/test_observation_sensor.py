"""The stream observation sensor and the consumer_lag check, against a real nats-server and
a real (ephemeral) Dagster instance."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest
from dagster import (
    AssetCheckEvaluation,
    AssetObservation,
    AssetSelection,
    AssetSpec,
    Definitions,
    SensorResult,
    define_asset_job,
)

from assets.bronze import bronze_asset_key, stream_asset_key
from assets.lag import LAG_CHECK, build_lag_check
from resources.jetstream import JetStreamResource
from sensors.observe import build_stream_observation_sensor
from sensors.stream import SensorTickError
from tests.sensors.conftest import context_for, publish


def tick(sensor, instance, jetstream_resource, cursor=None) -> SensorResult:
    with context_for(instance, jetstream_resource, cursor) as context:
        result = sensor(context)
    assert isinstance(result, SensorResult)
    return result


def events_of(result: SensorResult, kind: type) -> list:
    return [event for event in result.asset_events if isinstance(event, kind)]


def now_plus(seconds: float):
    return lambda: dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=seconds)


def test_a_tick_observes_the_stream_and_evaluates_the_lag_check(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 5)
    sensor = build_stream_observation_sensor(stream=ingest.stream, ingests=[ingest])

    result = tick(sensor, dagster_instance, jetstream_resource)

    [observed] = events_of(result, AssetObservation)
    assert observed.asset_key == stream_asset_key(ingest.stream)
    assert observed.metadata["stream_last_seq"].value == 5
    assert observed.metadata["stream_messages"].value == 5
    assert "stream_last_time" in observed.metadata
    [lag] = events_of(result, AssetCheckEvaluation)
    assert (lag.asset_key, lag.check_name) == (bronze_asset_key(ingest), LAG_CHECK)
    assert lag.passed
    assert lag.metadata["consumer_lag"].value == 5
    assert lag.metadata["consumer_ack_floor"].value == 0


def test_an_unchanged_stream_is_not_observed_again_but_the_lag_is(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 2)
    sensor = build_stream_observation_sensor(stream=ingest.stream, ingests=[ingest])

    first = tick(sensor, dagster_instance, jetstream_resource)
    second = tick(sensor, dagster_instance, jetstream_resource, first.cursor)
    publish(js, ingest, 1)
    third = tick(sensor, dagster_instance, jetstream_resource, second.cursor)

    assert events_of(second, AssetObservation) == []
    assert len(events_of(second, AssetCheckEvaluation)) == 1
    [observed] = events_of(third, AssetObservation)
    assert observed.metadata["stream_last_seq"].value == 3


def test_too_many_waiting_messages_fail_the_lag_check_naming_the_consumer(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 5)
    bounded = dataclasses.replace(ingest, max_lag_messages=3)
    sensor = build_stream_observation_sensor(stream=ingest.stream, ingests=[bounded])

    [lag] = events_of(tick(sensor, dagster_instance, jetstream_resource), AssetCheckEvaluation)

    assert not lag.passed
    assert f"consumer {ingest.durable!r} of stream {ingest.stream!r}" in lag.description
    assert "5 messages wait (bound 3)" in lag.description


def test_an_old_waiting_message_fails_the_lag_check_and_a_caught_up_consumer_passes(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 4)
    aged = dataclasses.replace(ingest, max_lag_age=60)
    later = build_stream_observation_sensor(
        stream=ingest.stream, ingests=[aged], clock=now_plus(3_600)
    )

    [stale] = events_of(tick(later, dagster_instance, jetstream_resource), AssetCheckEvaluation)
    js.consumers.reset(ingest.stream, ingest.durable, seq=5)  # as after a committed run
    [caught_up] = events_of(tick(later, dagster_instance, jetstream_resource), AssetCheckEvaluation)

    assert not stale.passed
    assert stale.metadata["oldest_pending_age_s"].value >= 3_500
    assert "the oldest has waited" in stale.description
    assert caught_up.passed
    assert caught_up.metadata["consumer_lag"].value == 0
    assert caught_up.metadata["oldest_pending_age_s"].value == 0


def test_the_lag_of_a_filtered_ingest_counts_only_its_subjects(
    js, ingest, jetstream_resource, dagster_instance
):
    js.publish(f"{ingest.stream}.files.trashed", b"{}")
    publish(js, ingest, 2)  # on files.deleted
    trashed = dataclasses.replace(
        ingest, durable="trash", filter_subjects=(f"{ingest.stream}.files.trashed",)
    )
    js.consumers.add(trashed.consumer_spec())
    sensor = build_stream_observation_sensor(stream=ingest.stream, ingests=[ingest, trashed])

    lags = events_of(tick(sensor, dagster_instance, jetstream_resource), AssetCheckEvaluation)

    assert [lag.metadata["consumer_lag"].value for lag in lags] == [3, 1]


def test_an_unreachable_server_fails_the_tick_naming_the_stream_and_server(
    ingest, dagster_instance
):
    unreachable = JetStreamResource(servers="nats://127.0.0.1:1", connect_timeout=1)
    sensor = build_stream_observation_sensor(stream=ingest.stream, ingests=[ingest])

    with pytest.raises(SensorTickError, match=f"stream {ingest.stream!r}.*127.0.0.1:1"):
        tick(sensor, dagster_instance, unreachable)


def test_the_lag_check_runs_on_its_own_and_reports_the_same(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 3)
    check = build_lag_check(ingest)
    defs = Definitions(
        assets=[AssetSpec(bronze_asset_key(ingest))],
        asset_checks=[check],
        jobs=[define_asset_job("lag_only", selection=AssetSelection.checks(check))],
        resources={"jetstream": jetstream_resource},
    )

    result = defs.resolve_job_def("lag_only").execute_in_process(instance=dagster_instance)

    [evaluation] = result.get_asset_check_evaluations()
    assert evaluation.check_name == LAG_CHECK
    assert evaluation.passed
    assert evaluation.metadata["consumer_lag"].value == 3


def test_ingests_of_another_stream_are_refused(ingest):
    other = dataclasses.replace(ingest, stream="ELSEWHERE")
    with pytest.raises(ValueError, match="do not read stream"):
        build_stream_observation_sensor(stream=ingest.stream, ingests=[other])
