"""Repeats that must land once: the same range committed twice, a publisher's retries."""

from __future__ import annotations

import datetime as dt

from pipelines.ingest.bronze import BRONZE_SCHEMA, commit_idempotently, table_version
from tests.pipelines.ingest.harness import (
    NOW,
    assert_landed_exactly_once,
    bronze_keys,
    make_ingest,
    publish_events,
)


def bronze_frame(spark, stream: str, seqs: range):
    """A small bronze DataFrame of made-up messages `seqs` of `stream`."""
    rows = [
        (
            stream,
            seq,
            f"{stream}.files.deleted",
            NOW,
            NOW.date(),
            {"Nats-Msg-Id": f"m-{seq}"},
            b"{}",
            f"m-{seq}",
            "run",
            NOW + dt.timedelta(minutes=1),
        )
        for seq in seqs
    ]
    return spark.createDataFrame(rows, BRONZE_SCHEMA)


def test_committing_the_same_range_twice_writes_it_once(spark, table_root):
    path = str(table_root / "bronze")
    frame = bronze_frame(spark, "S", range(1, 21))

    first = commit_idempotently(frame, path, app_id="S:bronze", txn_version=20)
    again = commit_idempotently(frame, path, app_id="S:bronze", txn_version=20)

    assert (first.version, first.written) == (0, True)
    assert (again.version, again.written) == (0, False)
    assert table_version(spark, path) == 0
    assert sorted(seq for _, seq in bronze_keys(spark, path)) == list(range(1, 21))


def test_commit_of_an_earlier_range_is_skipped_and_a_later_one_written(spark, table_root):
    path = str(table_root / "bronze")
    commit_idempotently(bronze_frame(spark, "S", range(1, 21)), path, app_id="S:c", txn_version=20)

    earlier = commit_idempotently(
        bronze_frame(spark, "S", range(1, 11)), path, app_id="S:c", txn_version=10
    )
    later = commit_idempotently(
        bronze_frame(spark, "S", range(21, 31)), path, app_id="S:c", txn_version=30
    )
    other_ingest = commit_idempotently(
        bronze_frame(spark, "T", range(1, 21)), path, app_id="T:c", txn_version=20
    )

    assert (earlier.version, earlier.written) == (0, False)
    assert (later.version, later.written) == (1, True)
    assert (other_ingest.version, other_ingest.written) == (2, True)  # its own txnAppId
    keys = bronze_keys(spark, path)
    assert len(keys) == len(set(keys)) == 50


def test_publisher_retries_with_the_same_msg_id_are_stored_once_and_land_once(
    js, spark, unique_name, table_root
):
    ingest = make_ingest(js, unique_name, table_root, stream={"duplicate_window": 120})
    published = publish_events(js, unique_name, 50, seed=31)
    # The publisher lost the acks of the first 20 and sent them again, same events, same ids.
    retries = publish_events(js, unique_name, 20, seed=31)

    assert retries == published[:20]  # the stream answered with the originals' sequences
    assert js.streams.info(unique_name).last_seq == 50

    ingest.run(js, spark, "run-1")

    assert_landed_exactly_once(js, spark, ingest, published)
    msg_ids = spark.read.format("delta").load(ingest.path).select("msg_id")
    assert msg_ids.distinct().count() == 50


def test_losing_both_checkpoint_and_consumer_replans_nothing_already_landed(
    js, spark, unique_name, table_root
):
    ingest = make_ingest(js, unique_name, table_root)
    first = publish_events(js, unique_name, 30, seed=41)
    ingest.run(js, spark, "r1")
    ingest.checkpoints.purge(f"ingest.{unique_name}.{ingest.spec.durable}")
    js.consumers.delete(unique_name, ingest.spec.durable)  # recreated at ack floor 0 by the run
    second = publish_events(js, unique_name, 10, seed=42)

    result = ingest.run(js, spark, "r2")

    assert (result.start, result.end) == (31, 40)  # floor: the table's highest landed seq
    assert_landed_exactly_once(js, spark, ingest, first + second)
