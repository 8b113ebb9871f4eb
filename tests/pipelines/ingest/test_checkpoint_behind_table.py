"""A checkpoint that lost writes: the table, not the stale checkpoint, says what has landed.

nats-server acknowledges KV writes before it fsyncs them (every two minutes by default), so a
power loss can take a checkpoint back to an older revision; a bucket restored from a backup
does the same. These tests put an older checkpoint back by hand and run again with new
messages: without the check, the run would plan from the old end and land part of the table
twice.
"""

from __future__ import annotations

import dataclasses

from pipelines.ingest.checkpoint import CheckpointStore
from tests.pipelines.ingest.harness import assert_landed_exactly_once, make_ingest, publish_events


def test_a_checkpoint_put_back_two_runs_lands_nothing_twice(js, spark, unique_name, table_root):
    ingest = make_ingest(js, unique_name, table_root)
    published = publish_events(js, unique_name, 40, seed=21)
    ingest.run(js, spark, "run-1")
    stale = ingest.checkpoint()  # committed at 40
    published += publish_events(js, unique_name, 30, seed=22)
    ingest.run(js, spark, "run-2")  # committed at 70, consumer at 70

    # The bucket loses run 2's writes: the checkpoint is back at 40, no range planned.
    current = ingest.checkpoint()
    store = CheckpointStore(ingest.checkpoints)
    store.save(dataclasses.replace(stale, revision=current.revision))
    assert (ingest.checkpoint().committed_end, ingest.checkpoint().planned) == (40, None)
    published += publish_events(js, unique_name, 25, seed=23)

    result = ingest.run(js, spark, "run-3")

    assert (result.start, result.end) == (71, 95)
    assert_landed_exactly_once(js, spark, ingest, published)


def test_a_consumer_moved_ahead_by_hand_does_not_skip_what_the_table_lacks(
    js, spark, unique_name, table_root
):
    ingest = make_ingest(js, unique_name, table_root)
    published = publish_events(js, unique_name, 30, seed=24)
    ingest.run(js, spark, "run-1")
    published += publish_events(js, unique_name, 20, seed=25)
    js.consumers.reset(unique_name, "bronze", 46)  # someone skips ahead: ack floor 45

    result = ingest.run(js, spark, "run-2")

    # The table holds up to 30, so the checkpoint (30) stands and 31-50 land.
    assert (result.start, result.end) == (31, 50)
    assert_landed_exactly_once(js, spark, ingest, published)
