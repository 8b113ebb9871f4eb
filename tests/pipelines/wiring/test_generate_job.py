"""The `generate_file_events` job, executed by Dagster against a real nats-server."""

from pathlib import Path

from dagster import DagsterEventType

from pipelines.file_trash.generator import BAD_KINDS, GOOD
from pipelines.file_trash.topology import FILE_TRASH_TOPOLOGY
from pipelines.wiring.generate_job import build_generate_job, generate_file_events_job
from resources.jetstream import EmbeddedNatsServer, JetStreamResource, StreamSpec, reconcile
from resources.jetstream.core.messages import MSG_ID_HEADER


def op_config(**config) -> dict:
    return {"ops": {"publish_file_events": {"config": config}}}


def output_metadata(result) -> dict:
    [output] = [e for e in result.all_events if e.event_type == DagsterEventType.STEP_OUTPUT]
    return {key: value.value for key, value in output.event_specific_data.metadata.items()}


def test_the_job_publishes_the_configured_mix_and_records_it(
    js, unique_name, jetstream_resource, dagster_instance
):
    js.streams.add(StreamSpec(unique_name, (f"{unique_name}.>",), duplicate_window=120))
    job = build_generate_job(stream=unique_name, subject=f"{unique_name}.files.deleted")

    result = job.execute_in_process(
        run_config=op_config(count=50, bad_share=0.14, seed=9),
        resources={"jetstream": jetstream_resource},
        instance=dagster_instance,
    )

    assert result.success
    assert js.streams.info(unique_name).messages == 50
    assert js.streams.get_message(unique_name, 1).headers[MSG_ID_HEADER]
    metadata = output_metadata(result)
    assert {k: metadata[k] for k in ("published", "duplicates", "first_seq", "last_seq")} == {
        "published": 50,
        "duplicates": 0,
        "first_seq": 1,
        "last_seq": 50,
    }
    assert metadata["kinds"] == {GOOD: 43, **dict.fromkeys(BAD_KINDS, 1)}
    logs = [entry.user_message for entry in dagster_instance.all_logs(result.run_id)]
    progress = [message for message in logs if f"published to {unique_name}:" in message]
    assert len(progress) == 10 and progress[-1].endswith("50/50 (100%)")


def test_a_rerun_with_the_same_seed_and_a_rate_stores_nothing_new(
    js, unique_name, jetstream_resource, dagster_instance
):
    js.streams.add(StreamSpec(unique_name, (f"{unique_name}.>",), duplicate_window=120))
    job = build_generate_job(stream=unique_name, subject=f"{unique_name}.files.deleted")
    config = op_config(count=20, seed=5, rate=1000.0)
    resources = {"jetstream": jetstream_resource}
    job.execute_in_process(run_config=config, resources=resources, instance=dagster_instance)

    again = job.execute_in_process(
        run_config=config, resources=resources, instance=dagster_instance
    )

    assert again.success
    assert output_metadata(again)["duplicates"] == 20
    assert js.streams.info(unique_name).messages == 20


def test_the_default_job_publishes_to_file_events_and_fails_clearly_without_it(
    tmp_path: Path, dagster_instance
):
    with EmbeddedNatsServer(store_dir=tmp_path / "nats") as server:
        resources = {"jetstream": JetStreamResource(servers=server.url)}

        missing = generate_file_events_job.execute_in_process(
            run_config=op_config(count=10),
            resources=resources,
            instance=dagster_instance,
            raise_on_error=False,
        )
        with JetStreamResource(servers=server.url).client() as js:
            reconcile(js, FILE_TRASH_TOPOLOGY)
            ok = generate_file_events_job.execute_in_process(
                run_config=op_config(count=10),
                resources=resources,
                instance=dagster_instance,
            )
            stored = js.streams.info("FILE_EVENTS").messages

    assert not missing.success
    [failure] = [e for e in missing.all_events if e.event_type == DagsterEventType.STEP_FAILURE]
    error = failure.event_specific_data.error.cause
    assert error.cls_name == "StreamNotFoundError"
    assert "stream 'FILE_EVENTS' does not exist" in error.message
    assert ok.success and stored == 10
    assert generate_file_events_job.name == "generate_file_events"
