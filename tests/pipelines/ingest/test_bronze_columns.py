"""BronzeColumns: the one builder of bronze record batches."""

import datetime as dt

from pipelines.ingest.bronze import BRONZE_ARROW_SCHEMA, BronzeColumns
from resources.jetstream import JsMessage

STORED = dt.datetime(2026, 11, 21, 23, 59, 59, 123456, tzinfo=dt.timezone.utc)
LANDED = dt.datetime(2026, 11, 22, 8, 0, tzinfo=dt.timezone.utc)


def message(seq: int, headers: dict[str, str]) -> JsMessage:
    return JsMessage(
        stream="S",
        consumer="c",
        subject="s.files.deleted",
        data=b"\xff raw",
        headers=headers,
        stream_seq=seq,
        consumer_seq=seq,
        timestamp=STORED,
        num_delivered=1,
        num_pending=0,
        _raw=None,
        _client=None,
    )


def test_delivered_messages_become_bronze_rows_with_exact_time_date_and_headers():
    messages = [message(7, {"Nats-Msg-Id": "e-7", "X": "y"}), message(8, {})]

    batch = BronzeColumns.from_messages(messages).to_arrow("S", "run-1", LANDED)

    assert batch.schema == BRONZE_ARROW_SCHEMA
    first, second = batch.to_pylist()
    assert (first["stream"], first["seq"], first["subject"]) == ("S", 7, "s.files.deleted")
    assert first["published"] == STORED
    assert first["published_date"] == dt.date(2026, 11, 21)  # the UTC date of publishing
    assert first["headers"] == [("Nats-Msg-Id", "e-7"), ("X", "y")]
    assert (first["msg_id"], second["msg_id"]) == ("e-7", None)
    assert second["headers"] is None
    assert first["payload"] == b"\xff raw"
    assert (first["ingest_run_id"], first["ingested_at"]) == ("run-1", LANDED)
