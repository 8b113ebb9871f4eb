"""`build_stream_observation_sensor`: the stream as a live asset, and its ingests' lag checks.

Each tick reads the stream and reports an `AssetObservation` of its external asset
(`jetstream/<STREAM>`: last sequence, messages, bytes, first and last time) when the stream
changed since the last one, so the UI shows the stream's state and history; and evaluates the
`consumer_lag` check of every ingest of the stream (`assets/lag.py`), so a consumer falling
behind fails its check even when no run happens. It requests no runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from dagster import (
    AssetObservation,
    DefaultSensorStatus,
    MetadataValue,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from assets.bronze import stream_asset_key
from assets.lag import lag_evaluation
from pipelines.ingest.lag import judge_lag, read_lag
from pipelines.ingest.lease import Clock, utc_now
from pipelines.ingest.spec import IngestSpec
from resources.jetstream import JetStreamResource, StreamState
from resources.jetstream.errors import JetStreamError
from resources.jetstream.metadata import stream_metadata
from sensors.stream import SensorTickError, tick_client


def observation(state: StreamState) -> AssetObservation:
    """The stream's state as an observation of its external asset."""
    metadata = dict(stream_metadata(state))
    if state.first_time is not None:
        metadata["stream_first_time"] = MetadataValue.timestamp(state.first_time)
    if state.last_time is not None:
        metadata["stream_last_time"] = MetadataValue.timestamp(state.last_time)
    return AssetObservation(asset_key=stream_asset_key(state.name), metadata=metadata)


def build_stream_observation_sensor(
    *,
    stream: str,
    ingests: Sequence[IngestSpec],
    minimum_interval_seconds: int = 30,
    tick_budget: float = 20.0,
    default_status: DefaultSensorStatus = DefaultSensorStatus.RUNNING,
    name: str | None = None,
    key_prefixes: Mapping[str, str] | None = None,
    clock: Clock = utc_now,
) -> SensorDefinition:
    """Builds the sensor that observes `stream` and evaluates its ingests' lag checks.

    Args:
        stream: the stream's name.
        ingests: the ingests of `stream` whose `consumer_lag` checks it evaluates.
        minimum_interval_seconds: seconds between ticks.
        tick_budget: seconds a tick may spend on NATS (well under Dagster's 60 s).
        default_status: whether the sensor runs once deployed (by default it does: it only
            reads, and launches nothing).
        name: the sensor's name; default `observe_<stream>`.
        key_prefixes: ingest name -> its bronze asset's key prefix, where not 'bronze'.
        clock: the current time (UTC).

    Returns:
        The sensor; it needs the `jetstream` resource.
    """
    sensor_name = name or f"observe_{stream}"
    others = [spec.name for spec in ingests if spec.stream != stream]
    if others:
        raise ValueError(f"sensor {sensor_name!r}: ingests {others} do not read stream {stream!r}")

    @sensor(
        name=sensor_name,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=f"Observes stream {stream} (last sequence, messages, bytes) and evaluates "
        f"the consumer_lag checks of {', '.join(s.name for s in ingests) or 'no ingest'}.",
    )
    def observation_sensor(context: SensorEvaluationContext, jetstream: JetStreamResource):
        try:
            with tick_client(jetstream, tick_budget) as client:
                state = client.streams.info(stream)
                lags = [(spec, read_lag(client, spec)) for spec in ingests]
        except JetStreamError as error:
            raise SensorTickError(
                f"sensor {sensor_name!r} cannot read stream {stream!r} on NATS "
                f"{jetstream.servers!r}: {error}",
                sensor=sensor_name,
                stream=stream,
                server=jetstream.servers,
            ) from error
        now = clock()
        prefixes = key_prefixes or {}
        events = [
            lag_evaluation(spec, judge_lag(lag, spec, now), prefixes.get(spec.name, "bronze"))
            for spec, lag in lags
        ]
        seen = (state.last_seq, state.messages, state.bytes)
        cursor = json.dumps({"v": 1, "seen": list(seen)})
        if context.cursor != cursor:
            events.insert(0, observation(state))
        if not events:
            return SensorResult(skip_reason=SkipReason("nothing to report"), cursor=cursor)
        return SensorResult(asset_events=events, cursor=cursor)

    return observation_sensor


__all__ = ["build_stream_observation_sensor", "observation"]
