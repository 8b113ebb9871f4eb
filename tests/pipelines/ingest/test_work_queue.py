"""Work-queue and interest streams: acks only after the Delta commit, redeliveries absorbed."""

import time

import pytest
from delta.tables import DeltaTable

from pipelines.ingest.checkpoint import CheckpointStore
from pipelines.ingest.options import IngestRunOptions
from pipelines.ingest.run import ingest
from pipelines.ingest.spec import IngestSpec
from resources.jetstream import Retention, StreamSpec

ACK_WAIT = 1.5  # seconds: the consumer's ack_wait (and the lease's TTL)


class Crash(Exception):
    pass


def crash_at(step):
    def hook(reached):
        if reached == step:
            raise Crash(step)

    return hook


@pytest.fixture(params=[Retention.WORK_QUEUE, Retention.INTEREST])
def queue(request, js, unique_name, table_root):
    js.streams.add(StreamSpec(unique_name, (f"{unique_name}.>",), retention=request.param))
    spec = IngestSpec(
        name=unique_name.lower(),
        stream=unique_name,
        durable="bronze",
        table="bronze/q",
        pull_batch=25,
        lease_ttl=ACK_WAIT,
        ack_wait=ACK_WAIT,
    )
    js.consumers.add(spec.consumer_spec())  # interest streams keep messages only with a consumer
    js.publish_batch([(f"{unique_name}.files.deleted", b"%d" % i, None) for i in range(60)])
    return spec, f"{table_root}/bronze/q", js.create_key_value(spec.checkpoint_bucket_spec())


def test_queue_ingest_lands_everything_once_and_the_stream_lets_it_go(js, spark, queue):
    spec, path, checkpoints = queue

    result = ingest(js, spark, spec, path, checkpoints=checkpoints, run_id="r1")

    table = DeltaTable.forPath(spark, path).toDF()
    assert sorted(r.seq for r in table.select("seq").collect()) == list(range(1, 61))
    assert (result.messages, result.lag) == (60, 0)
    assert js.streams.info(spec.stream).messages == 0  # acknowledged, so removed
    assert CheckpointStore(checkpoints).load(spec.stream, spec.durable).committed_end == 60


def test_crash_after_commit_before_acks_is_absorbed_when_the_messages_come_back(js, spark, queue):
    spec, path, checkpoints = queue

    with pytest.raises(Crash):
        ingest(
            js,
            spark,
            spec,
            path,
            checkpoints=checkpoints,
            run_id="r1",
            options=IngestRunOptions(hook=crash_at("committed")),
        )
    assert js.streams.info(spec.stream).messages == 60  # nothing acknowledged
    time.sleep(ACK_WAIT + 0.5)  # let ack_wait pass so the server redelivers
    ingest(js, spark, spec, path, checkpoints=checkpoints, run_id="r2")

    table = DeltaTable.forPath(spark, path).toDF()
    assert table.count() == table.select("seq").distinct().count() == 60
    assert js.streams.info(spec.stream).messages == 0
