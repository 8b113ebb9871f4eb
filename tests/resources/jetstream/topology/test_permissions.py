"""Least-privilege permissions, proven against a real nats-server with two users.

Each test starts an `EmbeddedNatsServer` whose `authorization` block comes from
`Permissions.to_server_config`: an unrestricted `admin` provisions the streams and buckets,
and `pipeline` holds exactly `pipeline_permissions(...)` for one ingest, one KV bucket,
one object store and one event subject. The pipeline user then does its real work (an
exactly-once bronze ingest into Delta, whose Spark readers connect as the same user, that
creates its own durable; fetch, ack, reset and pause of the durable; KV and Object Store
use) with no permission violation in the server's log, and is refused what would reshape
the topology or reach beyond its lists.

A refused request is dropped by the server, which tells the client with an asynchronous
`-ERR 'Permissions Violation ...'`; the request itself is never answered, so when the request
timeout (2 s here) runs out the client raises `PermissionDeniedError`, quoting the violation.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipelines.file_trash.events import FILE_DELETED_SUBJECT, generate_file_deleted_events
from pipelines.file_trash.topology import (
    ARTIFACTS,
    BRONZE_FILE_EVENTS,
    CHECKPOINTS,
    FILE_TRASH_TOPOLOGY,
    INGESTS,
    REPLAY_REQUESTS,
)
from pipelines.ingest.engine import ensure_consumer, run_ingest
from pipelines.ingest.spec import IngestSpec
from resources.jetstream import (
    ConsumerSpec,
    EmbeddedNatsServer,
    JetStreamClient,
    JetStreamResource,
    KeyValueSpec,
    ObjectStoreSpec,
    StreamSpec,
)
from resources.jetstream.errors import InvalidArgumentError, PermissionDeniedError
from resources.jetstream.topology.permissions import Permissions, pipeline_permissions

PIPELINE_PASSWORD = "pipeline-s3cret"
ADMIN_PASSWORD = "admin-s3cret"
REQUEST_TIMEOUT = 2.0  # seconds; a refused request ends after this
NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone.utc)
VIOLATION_RE = re.compile(r'(Publish|Subscription) Violation - .*Subject "([^"]+)"')


@dataclass(frozen=True)
class Secured:
    """A server with an admin and a least-privilege pipeline user, and the pipeline's names."""

    server: EmbeddedNatsServer
    ingest: IngestSpec
    kv_bucket: str
    object_bucket: str
    event_subject: str  # the one subject the pipeline publishes its own events to
    other_stream: str  # provisioned by the admin, outside the pipeline's lists
    other_bucket: str

    def resource(self, user: str, password: str) -> JetStreamResource:
        return JetStreamResource(
            servers=self.server.url,
            user=user,
            password=password,
            connect_timeout=5,
            request_timeout=REQUEST_TIMEOUT,
        )

    def violations(self) -> list[str]:
        """The subjects the server refused so far, from its log."""
        return [m.group(2) for m in VIOLATION_RE.finditer(self.server.log_path.read_text())]


def permissions_for(ingest: IngestSpec, stem: str) -> Permissions:
    """Exactly what the pipeline needs: its ingest, `<stem>-kv`, `<stem>-obj`, one subject."""
    return pipeline_permissions(
        consumers=(ingest.consumer_spec(),),
        kv_buckets=(f"{stem}-kv",),
        object_buckets=(ObjectStoreSpec(f"{stem}-obj"),),
        publish_subjects=(f"{ingest.stream}.files.trashed",),
    )


@pytest.fixture
def secured(tmp_path: Path, unique_name: str) -> Iterator[Secured]:
    """A fresh server; the admin created the streams and buckets, not the pipeline's durable."""
    ingest = IngestSpec(
        name=unique_name.lower(),
        stream=unique_name,
        durable="bronze",
        filter_subjects=(f"{unique_name}.files.>",),
        table=f"bronze/{unique_name.lower()}",
        readers=2,
        pull_batch=40,
        checkpoint_bucket=f"{unique_name}-kv",
    )
    config = permissions_for(ingest, unique_name).to_server_config(
        "pipeline", PIPELINE_PASSWORD, unrestricted_users={"admin": ADMIN_PASSWORD}
    )
    with EmbeddedNatsServer(store_dir=tmp_path / "store", extra_config=config) as server:
        names = Secured(
            server=server,
            ingest=ingest,
            kv_bucket=f"{unique_name}-kv",
            object_bucket=f"{unique_name}-obj",
            event_subject=f"{unique_name}.files.trashed",
            other_stream=f"{unique_name}_OTHER",
            other_bucket=f"{unique_name}-other",
        )
        with names.resource("admin", ADMIN_PASSWORD).client() as admin:
            admin.streams.add(StreamSpec(unique_name, (f"{unique_name}.files.>",)))
            admin.streams.add(StreamSpec(names.other_stream, (f"{unique_name}.other.>",)))
            admin.consumers.add(ConsumerSpec(names.other_stream, "bronze"))
            admin.create_key_value(KeyValueSpec(names.kv_bucket, history=64))
            admin.create_key_value(KeyValueSpec(names.other_bucket))
            admin.create_object_store(ObjectStoreSpec(names.object_bucket))
        yield names


@pytest.fixture
def admin(secured: Secured) -> Iterator[JetStreamClient]:
    with secured.resource("admin", ADMIN_PASSWORD).client() as client:
        yield client


@pytest.fixture
def pipeline(secured: Secured) -> Iterator[JetStreamClient]:
    """The pipeline user's client; the test fails if the server refused it anything."""
    with secured.resource("pipeline", PIPELINE_PASSWORD).client() as client:
        yield client


def publish_events(admin: JetStreamClient, stream: str, count: int) -> list[bytes]:
    events = list(generate_file_deleted_events(count, now=NOW, seed=7))
    subject = f"{stream}.{FILE_DELETED_SUBJECT}"
    admin.publish_batch([(subject, e.to_json(), {"Nats-Msg-Id": e.eventId}) for e in events])
    return [e.to_json() for e in events]


# -- what the pipeline may do --------------------------------------------------------------


def test_pipeline_user_runs_an_exactly_once_ingest_creating_its_own_durable(
    secured, admin, pipeline, spark, tmp_path
):
    spec = secured.ingest
    payloads = publish_events(admin, spec.stream, 120)
    assert not admin.consumers.exists(spec.stream, spec.durable)
    path = str(tmp_path / spec.table)
    checkpoints = pipeline.create_key_value(spec.checkpoint_bucket_spec())  # as the asset does

    result = run_ingest(pipeline, spark, spec, path, checkpoints=checkpoints, run_id="perm-1")

    assert (result.start, result.end, result.messages, result.written) == (1, 120, 120, True)
    assert (result.ack_floor, result.lag, result.stream_last_seq) == (120, 0, 120)
    rows = spark.read.format("delta").load(path).select("seq", "payload").collect()
    assert sorted(r.seq for r in rows) == list(range(1, 121))
    assert sorted(bytes(r.payload) for r in rows) == sorted(payloads)
    assert admin.consumers.names(spec.stream) == [spec.durable]  # the readers cleaned up
    assert secured.violations() == []


def test_pipeline_user_fetches_acks_resets_pauses_and_resumes_its_durable(secured, admin, pipeline):
    spec = secured.ingest
    publish_events(admin, spec.stream, 10)
    ensure_consumer(pipeline, spec)
    messages = pipeline.fetch(spec.stream, spec.durable, batch=10)
    for message in messages[:-1]:
        message.ack()
    messages[-1].ack_sync()

    reset = pipeline.consumers.reset(spec.stream, spec.durable, 4)
    until = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)
    paused = pipeline.consumers.pause(spec.stream, spec.durable, until)
    resumed = pipeline.consumers.resume(spec.stream, spec.durable)

    assert [m.stream_seq for m in messages] == list(range(1, 11))
    assert (reset.ack_floor_stream_seq, reset.num_pending) == (3, 7)
    assert paused.paused and not resumed.paused
    assert secured.violations() == []


def test_pipeline_user_reads_account_info_and_its_stream(secured, pipeline):
    account = pipeline.run(pipeline.jsm.account_info(), what="read the account")
    stream = pipeline.streams.info(secured.ingest.stream)

    assert account.streams == 5  # 2 streams, 2 KV and 1 object store
    assert stream.spec.subjects == (f"{secured.ingest.stream}.files.>",)
    assert secured.violations() == []


def test_pipeline_user_reads_and_writes_its_kv_bucket(secured, pipeline):
    kv = pipeline.key_value(secured.kv_bucket)

    first = kv.put("bronze.file_events", b"42")
    second = kv.update("bronze.file_events", b"57", revision=first)
    kv.create("lease.bronze", b"run-1")
    kv.delete("lease.bronze")
    kv.create("lease.bronze", b"run-2")
    kv.purge("lease.bronze")
    watched = [(e.key, e.value) for e in kv.watch("bronze.>", timeout=0.5)]

    assert kv.get("bronze.file_events").value == b"57"
    assert kv.get("bronze.file_events", revision=first).value == b"42"
    assert kv.try_get("lease.bronze") is None
    assert kv.keys() == ["bronze.file_events"]
    assert [e.revision for e in kv.history("bronze.file_events")] == [first, second]
    assert watched == [("bronze.file_events", b"57")]
    assert kv.status().values == 3
    assert secured.violations() == []


def test_pipeline_user_reads_kv_history_long_enough_to_need_flow_control(secured, pipeline):
    kv = pipeline.key_value(secured.kv_bucket)
    value = b"x" * 200_000  # 40 of these are well past the server's flow-control window
    for _ in range(40):
        kv.put("manifest", value)

    history = kv.history("manifest")
    watched = list(kv.watch(">", timeout=1, include_history=True))

    assert len(history) == len(watched) == 40
    assert secured.violations() == []


def test_pipeline_user_puts_gets_lists_and_watches_objects(secured, pipeline, tmp_path):
    bucket = pipeline.object_store(secured.object_bucket)
    big = bytes(range(256)) * 1200  # 300 KiB: three chunks

    bucket.put_bytes("reports/run-1.html", big)
    bucket.put_bytes("reports/run-1.html", b"<html>replaced</html>")  # purges the old chunks
    bucket.put_bytes("manifests/run-1.json", b"{}")
    bucket.add_link("reports/latest.html", "reports/run-1.html")
    bucket.delete("manifests/run-1.json")
    with bucket.watch(timeout=0.5, ignore_deletes=True) as watch:
        watched = sorted(info.name for info in watch)

    assert bucket.get_bytes("reports/latest.html") == b"<html>replaced</html>"
    assert bucket.get_file("reports/run-1.html", tmp_path / "run-1.html").size == 21
    assert [i.name for i in bucket.list()] == ["reports/latest.html", "reports/run-1.html"]
    assert watched == ["reports/latest.html", "reports/run-1.html"]
    assert bucket.status().bytes < len(big)  # the replaced object's chunks are gone
    assert secured.violations() == []


def test_pipeline_user_publishes_its_events(secured, pipeline):
    ack = pipeline.publish(secured.event_subject, b'{"fileId": "f-1"}', msg_id="trash-1")

    assert (ack.stream, ack.seq, ack.duplicate) == (secured.ingest.stream, 1, False)
    assert secured.violations() == []


# -- what it may not do: refused by the server, surfacing as a request timeout ---------------

Refused = Callable[[JetStreamClient, Secured], object]
REFUSED: dict[str, tuple[Refused, str]] = {
    "create a stream": (
        lambda c, s: c.streams.add(StreamSpec(f"{s.ingest.stream}_NEW", ("new.>",))),
        "$JS.API.STREAM.CREATE.{stream}_NEW",
    ),
    "update its stream": (
        lambda c, s: c.streams.update(StreamSpec(s.ingest.stream, ("x.>",))),
        "$JS.API.STREAM.UPDATE.{stream}",
    ),
    "delete its stream": (
        lambda c, s: c.streams.delete(s.ingest.stream),
        "$JS.API.STREAM.DELETE.{stream}",
    ),
    "purge its stream": (
        lambda c, s: c.streams.purge(s.ingest.stream),
        "$JS.API.STREAM.PURGE.{stream}",
    ),
    "read another stream": (
        lambda c, s: c.streams.info(s.other_stream),
        "$JS.API.STREAM.INFO.{stream}_OTHER",
    ),
    "fetch from another stream": (
        lambda c, s: c.fetch(s.other_stream, "bronze", expires=0.5),
        "$JS.API.CONSUMER.MSG.NEXT.{stream}_OTHER.bronze",
    ),
    "delete its durable": (
        lambda c, s: c.consumers.delete(s.ingest.stream, s.ingest.durable),
        "$JS.API.CONSUMER.DELETE.{stream}.bronze",
    ),
    "bind another kv bucket": (
        lambda c, s: c.key_value(s.other_bucket),
        "$JS.API.STREAM.INFO.KV_{stream}-other",
    ),
    "publish to another subject": (
        lambda c, s: c.publish(f"{s.ingest.stream}.files.deleted", b"{}"),
        "{stream}.files.deleted",
    ),
}


@pytest.mark.parametrize("refused", REFUSED, ids=list(REFUSED))
def test_pipeline_user_is_refused(secured, pipeline, caplog, refused):
    operation, subject_template = REFUSED[refused]
    subject = subject_template.format(stream=secured.ingest.stream)

    with (
        caplog.at_level(logging.WARNING, logger="resources.jetstream.connection"),
        pytest.raises(PermissionDeniedError, match="lacks permission") as refusal,
    ):
        operation(pipeline, secured)

    assert subject.lower() in str(refusal.value)
    assert wait_for_violation(secured, subject) == [subject]
    # nats-py lower-cases the server's -ERR text before handing it to the error callback
    assert f'permissions violation for publish to "{subject.lower()}"' in caplog.text


def test_refused_request_leaves_the_connection_usable(secured, pipeline):
    with pytest.raises(PermissionDeniedError):
        pipeline.streams.delete(secured.ingest.stream)

    assert pipeline.streams.info(secured.ingest.stream).name == secured.ingest.stream


def wait_for_violation(secured: Secured, subject: str, within: float = 2.0) -> list[str]:
    """The refused subjects once `subject` shows up in the server's log (or `within` ends)."""
    deadline = time.monotonic() + within
    while subject not in (found := secured.violations()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


# -- the lists themselves ---------------------------------------------------------------------


def file_trash_permissions(**options: bool) -> Permissions:
    """The bronze ingest's permissions (the lists docs/jetstream.md shows)."""
    return pipeline_permissions(
        consumers=(BRONZE_FILE_EVENTS.consumer_spec(),),
        kv_buckets=(CHECKPOINTS,),
        object_buckets=(ARTIFACTS,),
        publish_subjects=("files.trashed",),
        **options,
    )


def test_the_whole_topology_reaches_every_ingest_and_bucket_and_deletes_no_durable():
    perms = pipeline_permissions(
        consumers=FILE_TRASH_TOPOLOGY.consumers,
        kv_buckets=FILE_TRASH_TOPOLOGY.kv_buckets,
        object_buckets=FILE_TRASH_TOPOLOGY.object_buckets,
        publish_subjects=("files.trashed",),
    )

    for ingest in INGESTS:
        assert f"$JS.API.CONSUMER.RESET.FILE_EVENTS.{ingest.durable}" in perms.publish
        assert f"$JS.API.CONSUMER.DELETE.FILE_EVENTS.{ingest.durable}" in perms.publish_deny
    assert f"$KV.{REPLAY_REQUESTS.bucket}.>" in perms.publish
    assert "files.trashed" in perms.publish


def test_permissions_never_allow_changing_a_stream():
    perms = file_trash_permissions()

    changes = ("STREAM.CREATE", "STREAM.UPDATE", "STREAM.DELETE")
    assert [s for s in perms.publish if any(change in s for change in changes)] == []
    assert perms.publish_deny == ("$JS.API.CONSUMER.DELETE.FILE_EVENTS.lakehouse-bronze",)
    assert not {">", "$JS.API.>", "$JS.>", "files.>"} & set(perms.publish)
    assert "$JS.API.STREAM.PURGE.FILE_EVENTS" not in perms.publish
    assert perms.subscribe == ("_INBOX.>",)
    assert len(set(perms.publish)) == len(perms.publish)


def test_file_trash_topology_renders_the_documented_lists():
    perms = file_trash_permissions()

    assert perms.publish == (
        "$JS.API.INFO",
        "$JS.API.STREAM.INFO.FILE_EVENTS",
        "$JS.API.CONSUMER.INFO.FILE_EVENTS.lakehouse-bronze",
        "$JS.API.CONSUMER.CREATE.FILE_EVENTS.lakehouse-bronze",
        "$JS.API.CONSUMER.CREATE.FILE_EVENTS.lakehouse-bronze.files.>",
        "$JS.API.CONSUMER.DURABLE.CREATE.FILE_EVENTS.lakehouse-bronze",
        "$JS.API.CONSUMER.MSG.NEXT.FILE_EVENTS.lakehouse-bronze",
        "$JS.API.CONSUMER.RESET.FILE_EVENTS.lakehouse-bronze",
        "$JS.API.CONSUMER.PAUSE.FILE_EVENTS.lakehouse-bronze",
        "$JS.ACK.FILE_EVENTS.lakehouse-bronze.>",
        "$JS.API.CONSUMER.CREATE.FILE_EVENTS",
        "$JS.API.CONSUMER.MSG.NEXT.FILE_EVENTS.*",
        "$JS.API.CONSUMER.DELETE.FILE_EVENTS.*",
        "$KV.lakehouse-checkpoints.>",
        "$JS.API.STREAM.INFO.KV_lakehouse-checkpoints",
        "$JS.API.STREAM.MSG.GET.KV_lakehouse-checkpoints",
        "$JS.API.DIRECT.GET.KV_lakehouse-checkpoints",
        "$JS.API.DIRECT.GET.KV_lakehouse-checkpoints.>",
        "$JS.API.CONSUMER.CREATE.KV_lakehouse-checkpoints",
        "$JS.API.CONSUMER.CREATE.KV_lakehouse-checkpoints.>",
        "$JS.API.CONSUMER.DELETE.KV_lakehouse-checkpoints.>",
        "$JS.API.CONSUMER.INFO.KV_lakehouse-checkpoints.>",
        "$JS.FC.KV_lakehouse-checkpoints.>",
        "$O.lakehouse-artifacts.>",
        "$JS.API.STREAM.INFO.OBJ_lakehouse-artifacts",
        "$JS.API.STREAM.MSG.GET.OBJ_lakehouse-artifacts",
        "$JS.API.DIRECT.GET.OBJ_lakehouse-artifacts",
        "$JS.API.DIRECT.GET.OBJ_lakehouse-artifacts.>",
        "$JS.API.CONSUMER.CREATE.OBJ_lakehouse-artifacts",
        "$JS.API.CONSUMER.CREATE.OBJ_lakehouse-artifacts.>",
        "$JS.API.CONSUMER.DELETE.OBJ_lakehouse-artifacts.>",
        "$JS.API.CONSUMER.INFO.OBJ_lakehouse-artifacts.>",
        "$JS.FC.OBJ_lakehouse-artifacts.>",
        "$JS.API.STREAM.PURGE.OBJ_lakehouse-artifacts",
        "files.trashed",
    )
    assert perms.publish_deny == ("$JS.API.CONSUMER.DELETE.FILE_EVENTS.lakehouse-bronze",)
    assert perms.subscribe == ("_INBOX.>",)


def test_without_range_reads_no_other_consumer_of_the_stream_is_reachable():
    perms = file_trash_permissions(range_reads=False)

    assert [s for s in perms.publish if ".FILE_EVENTS" in s and "lakehouse-bronze" not in s] == [
        "$JS.API.STREAM.INFO.FILE_EVENTS"
    ]
    assert perms.publish_deny == ()


def test_server_config_quotes_subjects_and_leaves_variable_passwords_to_the_server():
    perms = Permissions(publish=("$JS.API.INFO",), subscribe=("_INBOX.>",))

    config = perms.to_server_config("pipeline", "$PIPELINE_PW", unrestricted_users={"ops": "p"})

    assert '"$JS.API.INFO",' in config
    assert 'user: "pipeline", password: $PIPELINE_PW,' in config
    assert '{ user: "ops", password: "p" }' in config


def test_a_variable_password_is_read_from_the_servers_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PIPELINE_PW", "from-the-environment")
    perms = Permissions(publish=("$JS.API.INFO",), subscribe=("_INBOX.>",))
    config = perms.to_server_config("pipeline", "$PIPELINE_PW")

    with EmbeddedNatsServer(store_dir=tmp_path, extra_config=config) as server:
        resource = JetStreamResource(
            servers=server.url, user="pipeline", password="from-the-environment"
        )
        with resource.client() as client:
            assert client.run(client.jsm.account_info(), what="read the account").streams == 0


@pytest.mark.parametrize(
    "arguments",
    [
        {"kv_buckets": ("bad.name",)},
        {"object_buckets": ("",)},
        {"publish_subjects": ("files..trashed",)},
        {"js_api_prefix": "$JS.*.API"},
        {"consumers": ("FILE_EVENTS",)},
    ],
    ids=["kv bucket", "object bucket", "subject", "api prefix", "consumer"],
)
def test_bad_arguments_are_rejected_before_rendering(arguments):
    with pytest.raises(InvalidArgumentError):
        pipeline_permissions(**{"consumers": (), **arguments})
