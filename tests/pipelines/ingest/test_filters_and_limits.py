"""What one run takes: only the ingest's subjects, and at most its per-run limit."""

from __future__ import annotations

from pipelines.file_trash.events import FILE_DELETED_SUBJECT, FILE_TRASHED_SUBJECT
from tests.pipelines.ingest.harness import assert_landed_exactly_once, make_ingest, publish_events


def test_filter_subjects_land_only_matching_messages_and_leave_nothing_pending(
    js, spark, unique_name, table_root
):
    deleted = f"{unique_name}.{FILE_DELETED_SUBJECT}"
    ingest = make_ingest(js, unique_name, table_root, filter_subjects=(deleted,))
    wanted = []
    for batch in range(3):
        wanted += publish_events(js, unique_name, 30, seed=50 + batch)
        publish_events(js, unique_name, 20, seed=60 + batch, subject=FILE_TRASHED_SUBJECT)

    result = ingest.run(js, spark, "run-1")

    assert (result.start, result.end, result.messages) == (1, 150, 90)
    assert_landed_exactly_once(js, spark, ingest, wanted)
    subjects = spark.read.format("delta").load(ingest.path).select("subject").distinct()
    assert [row.subject for row in subjects.collect()] == [deleted]


def test_per_run_limit_lands_a_backlog_in_consecutive_ranges(js, spark, unique_name, table_root):
    ingest = make_ingest(js, unique_name, table_root, max_messages=100)
    published = publish_events(js, unique_name, 250, seed=70)

    results = [ingest.run(js, spark, f"run-{n}") for n in range(1, 5)]

    landed = [(r.start, r.end, r.messages, r.delta_version, r.ack_floor, r.lag) for r in results]
    assert landed == [
        (1, 100, 100, 0, 100, 150),
        (101, 200, 100, 1, 200, 50),
        (201, 250, 50, 2, 250, 0),
        (None, None, 0, None, 250, 0),  # caught up: nothing new
    ]
    assert all(r.written for r in results[:3])
    assert all(r.stream_last_seq == 250 for r in results)
    assert_landed_exactly_once(js, spark, ingest, published)
