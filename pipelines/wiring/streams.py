"""One declared stream, one factory: everything Dagster needs to land a stream in bronze.

`build_stream_defs` turns a stream and its ingests (durable consumers, each into its own bronze
Delta table) into a `dagster.Definitions`: the stream as an observable external asset, one
bronze asset per ingest, one job per ingest, the sensors that launch them as the stream
advances, the `consumer_lag` checks and the sensor that observes the stream and evaluates
them, and, for ingests that ask for it, the replay job with its replay-request sensor. Names
(asset keys, jobs, sensors) are derived from the stream and the ingests: nothing is passed
by hand. The `JetStreamStream` component builds one per declared stream (the file trash's
FILE_EVENTS is declared in `pipelines/defs/file_events/defs.yaml`); `pipelines/definitions.py`
merges them with the domain's assets.

Examples:
    >>> from pipelines.file_trash.topology import AUDIT_LOG, BRONZE_FILE_EVENTS, FILE_EVENTS
    >>> defs = build_stream_defs(
    ...     FILE_EVENTS,
    ...     [BronzeIngest(BRONZE_FILE_EVENTS, replay=True), BronzeIngest(AUDIT_LOG, "audit")],
    ... )
    >>> sorted(job.name for job in defs.jobs)
    ['ingest_audit_log', 'ingest_file_events', 'replay_file_events']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dagster import (
    AssetKey,
    AssetsDefinition,
    AssetSelection,
    AssetSpec,
    Definitions,
    SensorDefinition,
    define_asset_job,
)
from dagster._core.definitions.unresolved_asset_job_definition import (
    UnresolvedAssetJobDefinition,
)

from assets.bronze import build_bronze_asset, build_stream_asset_spec
from assets.lag import build_lag_check
from pipelines.ingest.spec import IngestSpec
from pipelines.wiring.jobs import build_replay_job
from resources.jetstream import StreamSpec
from resources.lakehouse import TABLE_METADATA_KEY
from sensors import StreamSensorOptions, build_replay_request_sensor, build_stream_sensor
from sensors.observe import build_stream_observation_sensor
from sensors.stream import INGEST_TAG

DEFAULT_REPLAY_BUCKET = "lakehouse-replays"
# seconds between a stream sensor's ticks (Dagster's default)
DEFAULT_SENSOR_INTERVAL = StreamSensorOptions.minimum_interval_seconds


@dataclass(frozen=True)
class BronzeIngest:
    """One ingest of a declared stream and how it shows in Dagster.

    Attributes:
        spec: the durable consumer, its filter and its bronze table.
        key_prefix: the first part of the bronze asset's key (`<key_prefix>/<spec.name>`).
        group_name: the asset group; default: the key prefix.
        upstream: assets that publish what this ingest reads, besides the stream (lineage,
            and so that materialising everything runs them first).
        replay: build the replay job and the replay-request sensor for this ingest.
        sensor_interval: seconds between the stream sensor's ticks (docs/automation.md,
            "Freshness and load").
        same_run: assets the ingest's job materialises right after bronze, in the same run
            (the contract's silver: one run per batch instead of two, docs/automation.md).
        follow_seconds: the stream sensor tags its runs of a lone range `jsl/follow` with
            it: a contract's silver in `same_run` then keeps landing and taking new batches,
            starting none after this long (`assets.follow`; another `same_run` asset
            ignores the tag). 0: one batch per run. Needs `same_run`.
    """

    spec: IngestSpec
    key_prefix: str = "bronze"
    group_name: str | None = None
    upstream: tuple[AssetKey, ...] = ()
    replay: bool = False
    sensor_interval: int = DEFAULT_SENSOR_INTERVAL
    same_run: tuple[AssetKey, ...] = ()
    follow_seconds: int = 0


@dataclass(frozen=True)
class StreamDefinitions:
    """What `build_stream_defs` built, by ingest, beside the `Definitions` that hold it.

    Attributes:
        defs: everything for the stream, to merge into the code location.
        bronze_assets: ingest name -> its bronze asset.
        ingest_jobs: ingest name -> the job that materialises its bronze asset.
        observation_sensor: the sensor observing the stream and evaluating the lag checks.
        tables: the Delta tables the ingests write (relative to the lakehouse root), for
            maintenance.
    """

    defs: Definitions
    bronze_assets: dict[str, AssetsDefinition]
    ingest_jobs: dict[str, UnresolvedAssetJobDefinition]
    observation_sensor: SensorDefinition
    tables: tuple[str, ...]


def build_stream(
    stream: StreamSpec,
    ingests: Sequence[BronzeIngest],
    *,
    replay_bucket: str = DEFAULT_REPLAY_BUCKET,
) -> StreamDefinitions:
    """Builds everything for one stream; `build_stream_defs` returns only its `defs`.

    Raises:
        ValueError: an ingest reads another stream, or two ingests share a name or a table.
    """
    _check(stream, ingests)
    bronze = {
        ingest.spec.name: build_bronze_asset(
            ingest.spec,
            key_prefix=ingest.key_prefix,
            group_name=ingest.group_name or ingest.key_prefix,
            upstream=ingest.upstream,
        )
        for ingest in ingests
    }
    # What each ingest's runs materialise: its bronze asset, then `same_run`.
    run_assets = {
        ingest.spec.name: (*bronze[ingest.spec.name].keys, *ingest.same_run) for ingest in ingests
    }
    jobs = {
        ingest.spec.name: _ingest_job(stream, ingest, run_assets[ingest.spec.name])
        for ingest in ingests
    }
    sensors = [
        build_stream_sensor(
            spec=ingest.spec,
            job=jobs[ingest.spec.name],
            options=StreamSensorOptions(
                key_prefix=ingest.key_prefix,
                minimum_interval_seconds=ingest.sensor_interval,
                follow_seconds=ingest.follow_seconds,
            ),
            assets=run_assets[ingest.spec.name],
        )
        for ingest in ingests
    ]
    # The stream as a live node in the UI, and each ingest's consumer_lag check on every tick.
    observation_sensor = build_stream_observation_sensor(
        stream=stream.name,
        ingests=[ingest.spec for ingest in ingests],
        key_prefixes={ingest.spec.name: ingest.key_prefix for ingest in ingests},
    )
    sensors.append(observation_sensor)
    replay_jobs = []
    for ingest in ingests:
        if ingest.replay:
            replay_jobs.append(build_replay_job(ingest.spec))
            sensors.append(
                build_replay_request_sensor(
                    spec=ingest.spec, job=replay_jobs[-1], bucket=replay_bucket
                )
            )
    defs = Definitions(
        assets=[build_stream_asset_spec(stream), *bronze.values()],
        asset_checks=[build_lag_check(ingest.spec, ingest.key_prefix) for ingest in ingests],
        jobs=[*jobs.values(), *replay_jobs],
        sensors=sensors,
    )
    return StreamDefinitions(
        defs=defs,
        bronze_assets=bronze,
        ingest_jobs=jobs,
        observation_sensor=observation_sensor,
        tables=tuple(ingest.spec.table for ingest in ingests),
    )


def _ingest_job(
    stream: StreamSpec, ingest: BronzeIngest, assets: tuple[AssetKey, ...]
) -> UnresolvedAssetJobDefinition:
    """The job the ingest's sensor launches: `assets` (with their checks), its bronze asset
    and then `ingest.same_run`, in one run."""
    description = (
        f"Land {stream.name}'s pending messages for consumer {ingest.spec.durable!r} in "
        f"{ingest.spec.table}"
    )
    if ingest.same_run:
        then = ", ".join(key.to_user_string() for key in ingest.same_run)
        description += f", then materialise {then} in the same run"
    return define_asset_job(
        f"ingest_{ingest.spec.name}",
        selection=AssetSelection.assets(*assets),
        description=description + ".",
        # The run queue runs one at a time per ingest (docs/automation.md).
        tags={INGEST_TAG: ingest.spec.app_id},
    )


def build_stream_defs(
    stream: StreamSpec,
    ingests: Sequence[BronzeIngest],
    *,
    replay_bucket: str = DEFAULT_REPLAY_BUCKET,
) -> Definitions:
    """The `Definitions` for one stream and its ingests (see the module's docstring).

    Args:
        stream: the stream, as provisioned (its subjects and description show in the UI).
        ingests: its ingests, each a durable consumer into its own bronze table.
        replay_bucket: the KV bucket the replay-request sensors watch.

    Raises:
        ValueError: an ingest reads another stream, or two ingests share a name or a table.
    """
    return build_stream(stream, ingests, replay_bucket=replay_bucket).defs


def _check(stream: StreamSpec, ingests: Sequence[BronzeIngest]) -> None:
    if not ingests:
        raise ValueError(f"stream {stream.name!r}: declare at least one ingest")
    for ingest in ingests:
        if ingest.follow_seconds and not ingest.same_run:
            raise ValueError(
                f"ingest {ingest.spec.name!r}: follow_seconds needs an asset materialised in "
                "the same run after bronze (same_run, e.g. the contract's silver), which takes "
                "the further batches"
            )
        if ingest.spec.stream != stream.name:
            raise ValueError(
                f"ingest {ingest.spec.name!r} reads stream {ingest.spec.stream!r}, not "
                f"{stream.name!r}: declare it with its own stream"
            )
    for what, values in (
        ("name", [ingest.spec.name for ingest in ingests]),
        ("table", [ingest.spec.table for ingest in ingests]),
        ("durable consumer", [ingest.spec.durable for ingest in ingests]),
    ):
        repeated = sorted({value for value in values if values.count(value) > 1})
        if repeated:
            raise ValueError(
                f"stream {stream.name!r}: two ingests share the {what} {repeated[0]!r}; "
                f"each ingest needs its own"
            )


def check_one_writer_per_bronze_table(assets: Iterable[AssetsDefinition | AssetSpec]) -> None:
    """Refuses a bronze table that an asset besides its ingest declares: another stream's
    ingest (which `build_stream` cannot see), or any other asset.

    A bronze table's writers (its ingest's runs and replays) are kept to one at a time by
    the ingest's lease (`pipelines.ingest.lease`): a second ingest would bring a lease of its
    own, and on S3 two drivers could commit the same Delta version (docs/deploy.md).
    `pipelines/definitions.py` checks the code location's assets with it.

    Raises:
        ValueError: naming the table and the two assets.
    """
    specs = [spec for a in assets for spec in ([a] if isinstance(a, AssetSpec) else a.specs)]
    declared: dict[str, list[AssetSpec]] = {}
    for spec in specs:
        if TABLE_METADATA_KEY in spec.metadata:
            declared.setdefault(str(spec.metadata[TABLE_METADATA_KEY]), []).append(spec)
    for table, owners in sorted(declared.items()):
        ingests = [spec for spec in owners if "consumer" in spec.metadata]
        if ingests and len(owners) > 1:
            first, other = ingests[0], next(spec for spec in owners if spec is not ingests[0])
            raise ValueError(
                f"table {table!r} is the bronze table of {_writer(first)} and is declared by "
                f"{_writer(other)} too: a bronze table takes one writer, its ingest, whose "
                "lease keeps its runs and replays to one at a time. Give each its own table "
                "(`table:` of the ingest in its defs.yaml)"
            )


def _writer(spec: AssetSpec) -> str:
    """An asset as a table's writer: its key, and its stream and consumer for an ingest's."""
    if "consumer" not in spec.metadata:
        return f"asset {spec.key.to_user_string()!r}"
    stream, consumer = (str(spec.metadata[name]) for name in ("stream", "consumer"))
    return f"asset {spec.key.to_user_string()!r} (stream {stream!r}, consumer {consumer!r})"
