"""Stream and consumer state as Dagster metadata."""

from dagster import IntMetadataValue

from resources.jetstream import ConsumerSpec, StreamSpec
from resources.jetstream.metadata import consumer_metadata, stream_metadata


def test_stream_and_consumer_state_become_numeric_metadata(js, unique_name):
    js.streams.add(StreamSpec(unique_name, (f"{unique_name}.>",)))
    js.consumers.add(ConsumerSpec(unique_name, "c"))
    js.publish_batch([(f"{unique_name}.a", b"12345", None)] * 7)
    js.consumers.reset(unique_name, "c", 4)

    stream = stream_metadata(js.streams.info(unique_name))
    consumer = consumer_metadata(js.consumers.info(unique_name, "c"))

    assert stream["stream_first_seq"].value == 1
    assert stream["stream_last_seq"].value == 7
    assert stream["stream_messages"].value == 7
    assert stream["stream_bytes"].value > 35
    assert consumer["consumer_ack_floor"].value == 3
    assert consumer["consumer_lag"].value == 4
    assert all(isinstance(v, IntMetadataValue) for k, v in consumer.items() if k != "consumer")
