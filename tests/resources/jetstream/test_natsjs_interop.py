"""Streams and consumers made with nats.js read, list and update through the project, and
what the project changes reads back the same from nats.js.

nats.js runs as a real Node.js process (tests/interop/natsjs.mjs, packages pinned in
tests/interop/package-lock.json, installed by `make test`). Without Node.js or the packages
these tests skip, saying why.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from resources.jetstream import ConsumerSpec, StreamSpec, Topology, reconcile
from resources.jetstream.streams.source import StreamSource
from resources.jetstream.topology.plan import Action

INTEROP = Path(__file__).resolve().parents[2] / "interop"
SECOND = 1_000_000_000

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (INTEROP / "node_modules" / "@nats-io").is_dir(),
    reason="nats.js interop needs node and `npm ci --prefix tests/interop` (make test does it)",
)


def natsjs(server_url: str, *args: str) -> Any:
    """Runs one nats.js call; returns the JSON it printed."""
    done = subprocess.run(
        ["node", str(INTEROP / "natsjs.mjs"), server_url, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def without(config: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k not in keys}


@pytest.fixture
def made(js):
    """Streams to delete after the test (dependants first)."""
    names: list[str] = []
    yield names
    for name in reversed(names):
        if js.streams.exists(name):
            js.streams.delete(name)


def test_a_natsjs_stream_and_consumer_keep_every_setting_through_a_project_update(
    js, nats_server, unique_name, made
):
    made.append(unique_name)
    url = nats_server.url
    natsjs(
        url,
        "add-stream",
        json.dumps(
            {
                "name": unique_name,
                "subjects": [f"{unique_name}.>"],
                "allow_rollup_hdrs": True,
                "compression": "s2",
                "max_age": 7_200 * SECOND,
                "republish": {"src": f"{unique_name}.>", "dest": f"re.{unique_name}.>"},
                "metadata": {"owner": "nats.js"},
            }
        ),
    )
    natsjs(
        url,
        "add-consumer",
        unique_name,
        json.dumps(
            {
                "durable_name": "svc",
                "ack_policy": "explicit",
                "max_batch": 100,
                "max_expires": 5 * SECOND,
                "sample_freq": "50",
                "metadata": {"owner": "nats.js"},
            }
        ),
    )
    stream_before = natsjs(url, "stream-config", unique_name)
    consumer_before = natsjs(url, "consumer-config", unique_name, "svc")

    state = js.streams.info(unique_name)
    js.streams.update(dataclasses.replace(state.spec, max_age=3_600))
    js.consumers.update(ConsumerSpec(unique_name, "svc", max_ack_pending=500))

    stream_after = natsjs(url, "stream-config", unique_name)
    consumer_after = natsjs(url, "consumer-config", unique_name, "svc")
    assert without(stream_after, "max_age") == without(stream_before, "max_age")
    assert stream_after["max_age"] == 3_600 * SECOND
    assert without(consumer_after, "max_ack_pending") == without(consumer_before, "max_ack_pending")
    assert consumer_after["max_ack_pending"] == 500
    assert js.streams.info(unique_name).config == stream_after


def test_a_natsjs_mirror_lists_and_a_project_mirror_reads_in_natsjs(
    js, nats_server, unique_name, made
):
    url = nats_server.url
    made.append(unique_name)
    js.streams.add(StreamSpec(unique_name, (f"{unique_name}.>",)))
    js.publish(f"{unique_name}.a", b"1")
    js_mirror, project_mirror = f"{unique_name}_JS", f"{unique_name}_PY"
    made += [js_mirror, project_mirror]
    natsjs(url, "add-stream", json.dumps({"name": js_mirror, "mirror": {"name": unique_name}}))

    assert js.streams.info(js_mirror).spec.mirror == StreamSource(unique_name)
    assert {unique_name, js_mirror} <= {s.name for s in js.streams.list()}

    topology = Topology(streams=(StreamSpec(project_mirror, mirror=StreamSource(unique_name)),))
    assert [c.action for c in reconcile(js, topology)] == [Action.CREATED]
    assert natsjs(url, "stream-config", project_mirror)["mirror"]["name"] == unique_name
    assert {js_mirror, project_mirror} <= set(natsjs(url, "list-streams"))
