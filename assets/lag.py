"""`consumer_lag`: an asset check per ingest that fails when its consumer falls behind.

The check is evaluated on every tick of the stream's observation sensor
(`sensors/observe.py`), so it reflects the stream even when no run happens, and can be run by
hand from the UI or the CLI. Its bounds are the ingest's `max_lag_messages` and `max_lag_age`.
"""

import datetime as dt

from dagster import (
    AssetCheckEvaluation,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    MetadataValue,
    asset_check,
)

from assets.bronze import bronze_asset_key
from pipelines.ingest.lag import LagOutcome, judge_lag, read_lag
from pipelines.ingest.spec import IngestSpec
from resources.jetstream import JetStreamResource

LAG_CHECK = "consumer_lag"


def lag_metadata(outcome: LagOutcome) -> dict[str, MetadataValue]:
    """The lag as check metadata (`consumer_lag` and `oldest_pending_age_s` plot well)."""
    lag = outcome.lag
    metadata = {
        "consumer_lag": MetadataValue.int(lag.pending),
        "oldest_pending_age_s": MetadataValue.float(round(outcome.age, 3)),
        "consumer_ack_floor": MetadataValue.int(lag.ack_floor),
        "stream_last_seq": MetadataValue.int(lag.last_seq),
    }
    if lag.oldest_pending_at is not None:
        metadata["oldest_pending_at"] = MetadataValue.timestamp(lag.oldest_pending_at)
    return metadata


def lag_evaluation(spec: IngestSpec, outcome: LagOutcome, key_prefix: str = "bronze"):
    """The check's evaluation as an event a sensor reports (`SensorResult.asset_events`)."""
    return AssetCheckEvaluation(
        asset_key=bronze_asset_key(spec, key_prefix),
        check_name=LAG_CHECK,
        passed=outcome.passed,
        metadata=lag_metadata(outcome),
        severity=AssetCheckSeverity.ERROR,
        description=outcome.description,
    )


def build_lag_check(spec: IngestSpec, key_prefix: str = "bronze") -> AssetChecksDefinition:
    """The `consumer_lag` check of `spec`'s bronze asset, runnable on its own."""
    bounds = []
    if spec.max_lag_messages is not None:
        bounds.append(f"more than {spec.max_lag_messages} messages wait")
    if spec.max_lag_age is not None:
        bounds.append(f"the oldest waiting message is older than {spec.max_lag_age:.0f} s")

    @asset_check(
        asset=bronze_asset_key(spec, key_prefix),
        name=LAG_CHECK,
        description=f"Fails when consumer {spec.durable!r} of stream {spec.stream!r} is behind: "
        + (" or ".join(bounds) or "never (no bound declared)")
        + ". Evaluated on each tick of the stream's observation sensor.",
    )
    def consumer_lag(jetstream: JetStreamResource) -> AssetCheckResult:
        """Reads the consumer's lag now and judges it against the ingest's bounds."""
        outcome = judge_lag(
            read_lag(jetstream.get_client(), spec), spec, dt.datetime.now(dt.timezone.utc)
        )
        return AssetCheckResult(
            passed=outcome.passed,
            metadata=lag_metadata(outcome),
            severity=AssetCheckSeverity.ERROR,
            description=outcome.description,
        )

    return consumer_lag


__all__ = ["LAG_CHECK", "build_lag_check", "lag_evaluation", "lag_metadata"]
