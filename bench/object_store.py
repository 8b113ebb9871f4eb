"""Tables in S3 against tables on the local disk (issue 53): the ingest and the silver step,
in one run, as a ratio.

One process starts an embedded nats-server, an embedded S3 server (SeaweedFS, built by
`make setup`) and one SparkSession with S3A pointed at it, publishes `--events`
FileDeletedEvents on `FILE_EVENTS`, and then, per round, for a local table root and an
`s3a://` one in turn (a fresh root, consumer and watermark each time):

- the ingest: `run_ingest` of the whole stream into `<root>/bronze/file_events`;
- silver: `run_contract_silver` as the silver asset runs it (the file trash contract, the
  Great Expectations suites of `DataQualityResource`, `check_mostly` 0.95).

A first round warms the JVM up and is not reported; then `--rounds` rounds alternate the two
roots, and the ratio S3 / local of each step's median is printed. Both servers are on
loopback: the ratio is S3's request model (a PUT per file, a LIST and GETs per log read, no
rename), not a network's latency.

    .venv/bin/python bench/object_store.py --events 20000 --rounds 2
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import secrets
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import pipeline as bench
from ingest import publish

from pipelines.file_trash.events import FILE_DELETED_EVENT, FILE_TRASHED_EVENT
from pipelines.ingest.engine import run_ingest
from pipelines.ingest.spec import IngestSpec
from pipelines.lakehouse.watermarks import WatermarkStore
from pipelines.silver import stage
from resources.jetstream import EmbeddedNatsServer, JetStreamResource, KeyValueSpec, StreamSpec
from resources.object_store.server import EmbeddedS3Server
from resources.quality import DataQualityResource
from resources.spark import SparkResource

STREAM = "FILE_EVENTS"


def one_round(spark, js, root: str, name: str, count: int) -> dict[str, float]:
    """The ingest and the silver step into `root`; their wall seconds."""
    spec = IngestSpec(
        name=name,
        stream=STREAM,
        durable=f"bronze-{name}",
        table="bronze/file_events",
        max_messages=max(count, IngestSpec.max_messages),
        max_bytes=1 << 40,
    )
    js.consumers.add(spec.consumer_spec())
    checkpoints = js.create_key_value(spec.checkpoint_bucket_spec())
    bronze = f"{root}/bronze/file_events"
    started = time.perf_counter()
    result = run_ingest(js, spark, spec, bronze, checkpoints=checkpoints, run_id=name)
    ingest = time.perf_counter() - started
    if (result.start, result.end, result.messages) != (1, count, count):
        raise RuntimeError(f"the ingest into {bronze!r} landed {result}")

    watermarks = WatermarkStore(js.create_key_value(KeyValueSpec(f"silver-{name}")))
    quality = DataQualityResource()
    now = bench.NOW + dt.timedelta(minutes=1)
    started = time.perf_counter()
    outcome = stage.run_contract_silver(
        spark,
        watermarks,
        bench.CONTRACT,
        stream=STREAM,
        bronze_path=bronze,
        table_paths={
            FILE_DELETED_EVENT: f"{root}/silver/file_deleted",
            FILE_TRASHED_EVENT: f"{root}/silver/file_trashed",
        },
        quarantine_path=f"{root}/silver/quarantine",
        stage=bench.SILVER_STAGE,
        run_id=name,
        now=now,
        source_table="bronze/file_events",
        validate=lambda frame, suite: quality.validate_dataframe(
            frame, suite, evaluated_at=now, meta={"run_id": "bench"}, cache=False
        ),
        mostly=0.95,
    )
    silver = time.perf_counter() - started
    landed = spark.read.format("delta").load(f"{root}/silver/file_deleted").count()
    if landed + spark.read.format("delta").load(f"{root}/silver/quarantine").count() != count:
        raise RuntimeError(f"silver in {root!r} does not hold every bronze row once: {outcome}")
    return {"ingest": ingest, "silver": silver}


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="jsl-object-store-"))
    # The credentials, before the JVM starts: S3A reads them from the environment.
    os.environ.update(
        AWS_ACCESS_KEY_ID=f"bench{secrets.token_hex(4)}",
        AWS_SECRET_ACCESS_KEY=secrets.token_hex(16),
    )
    try:
        return measure(args, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def measure(args: argparse.Namespace, scratch: Path) -> dict[str, object]:
    """The rounds, in `scratch`; prints and returns the medians and the ratios."""
    with (
        EmbeddedS3Server(
            data_dir=scratch / "s3",
            access_key=os.environ["AWS_ACCESS_KEY_ID"],
            secret_key=os.environ["AWS_SECRET_ACCESS_KEY"],
        ) as s3,
        EmbeddedNatsServer(store_dir=scratch / "nats") as nats,
        JetStreamResource(servers=nats.url).client() as js,
    ):
        spark = SparkResource(extra_conf=s3.spark_conf()).get_session()
        js.streams.add(StreamSpec(STREAM, ("FILE_EVENTS.>",)))
        publish(js, STREAM, args.events)
        times: dict[str, dict[str, list[float]]] = {"local": {}, "s3": {}}
        for number in range(args.rounds + 1):
            for where, root in (
                ("local", str(scratch / f"local-{number}")),
                ("s3", s3.root(f"round-{number}")),
            ):
                figures = one_round(spark, js, root, f"{where}{number}", args.events)
                print(f"round {number} ({'warm-up' if number == 0 else 'timed'}) {where}: "
                      + ", ".join(f"{k} {v:.1f} s" for k, v in figures.items()))  # fmt: skip
                if number:
                    for step, seconds in figures.items():
                        times[where].setdefault(step, []).append(seconds)
        spark.stop()
    medians = {w: {s: statistics.median(v) for s, v in steps.items()} for w, steps in times.items()}
    ratios = {step: medians["s3"][step] / medians["local"][step] for step in medians["local"]}
    for step, ratio in ratios.items():
        print(
            f"{step}: local {medians['local'][step]:.1f} s, S3 {medians['s3'][step]:.1f} s, "
            f"S3/local {ratio:.2f} ({args.events} events, median of {args.rounds})"
        )
    return {"medians": medians, "ratios": ratios}


if __name__ == "__main__":
    main()
