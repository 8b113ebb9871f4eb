"""Least-privilege NATS permissions for a pipeline's user, as code.

`pipeline_permissions` lists every subject the pipeline's runtime publishes to or
subscribes on: JetStream account info, reads of its streams, its durable consumers
(create-or-update, fetch, ack, reset, pause), the ephemeral consumers that read ranges in
order, Key-Value and Object Store buckets, its own event subjects and its reply inboxes.
Stream create, update and delete are not in it (nor purge, but of an object store's
chunks), so the pipeline cannot reshape the topology: an admin running `reconcile` does.

A request to a subject outside the lists is dropped by the server, which sends the
client `-ERR 'Permissions Violation for Publish to "<subject>"'`: the request itself gets
no answer, so it ends in `RequestTimeoutError` and the violation shows up as a warning
logged by `resources.jetstream.connection` and in the server's log.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from resources.jetstream.consumers.spec import ConsumerSpec
from resources.jetstream.core.validation import validate_name, validate_subject
from resources.jetstream.errors import InvalidArgumentError
from resources.jetstream.kv.spec import KeyValueSpec
from resources.jetstream.objects.spec import ObjectStoreSpec

DEFAULT_API_PREFIX = "$JS.API"
DEFAULT_INBOX_PREFIX = "_INBOX"  # nats-py's default `inbox_prefix`


@dataclass(frozen=True)
class Permissions:
    """A user's publish and subscribe allow lists; a deny entry wins over an allow entry.

    Examples:
        >>> perms = pipeline_permissions(consumers=FILE_TRASH_TOPOLOGY.consumers)
        >>> print(perms.to_server_config("lakehouse", "$NATS_PIPELINE_PASSWORD"))
    """

    publish: tuple[str, ...]
    subscribe: tuple[str, ...]
    publish_deny: tuple[str, ...] = ()

    def to_user_config(self, user: str, password: str) -> str:
        """Renders one entry of an `authorization { users: [...] }` list.

        Args:
            user: the user name.
            password: the password, a bcrypt hash (`nats server passwd`), or a `$VARIABLE`
                reference (written unquoted, so the server reads it from its environment).

        Returns:
            `{ user: ..., password: ..., permissions: { publish: ..., subscribe: ... } }`.
        """
        lines = [f"{{ user: {_quote(user)}, password: {_secret(password)}, permissions: {{"]
        lines += _direction("publish", self.publish, self.publish_deny)
        lines += _direction("subscribe", self.subscribe, ())
        lines.append("  } }")
        return "\n".join(lines)

    def to_server_config(
        self, user: str, password: str, *, unrestricted_users: Mapping[str, str] | None = None
    ) -> str:
        """Renders an `authorization` block for nats-server with this user in it.

        The users live in the server's global account, where JetStream is enabled by the
        server's `jetstream {}` block, so no `accounts` block is needed.

        Args:
            user: the pipeline's user name.
            password: its password (see `to_user_config`).
            unrestricted_users: more users, name to password, with every permission
                (the operator or admin that provisions streams and buckets).

        Returns:
            The configuration text, to append to a nats-server configuration.
        """
        entries = [self.to_user_config(user, password)]
        for name, secret in (unrestricted_users or {}).items():
            entries.append(f"{{ user: {_quote(name)}, password: {_secret(secret)} }}")
        body = ",\n  ".join(entries)
        return f"authorization {{\n  users: [\n  {body}\n  ]\n}}\n"


def pipeline_permissions(
    *,
    consumers: Sequence[ConsumerSpec],
    kv_buckets: Sequence[str | KeyValueSpec] = (),
    object_buckets: Sequence[str | ObjectStoreSpec] = (),
    publish_subjects: Sequence[str] = (),
    range_reads: bool = True,
    js_api_prefix: str = DEFAULT_API_PREFIX,
    inbox_prefix: str = DEFAULT_INBOX_PREFIX,
) -> Permissions:
    """The subjects a pipeline needs at runtime, and nothing that changes a stream.

    Args:
        consumers: the durable consumers it reads through (and may create or update,
            reset, pause and resume, but never delete); their streams are readable
            (stream info), not writable.
        kv_buckets: Key-Value buckets it reads and writes (get, put, update, delete,
            keys, history, watch). Names or `KeyValueSpec`s.
        object_buckets: Object Store buckets it reads and writes (put, get, list, watch,
            delete). Names or `ObjectStoreSpec`s.
        publish_subjects: subjects (or filters) it publishes its own events to.
        range_reads: also allow the unnamed ephemeral consumers with which
            `client.read_ordered` (the exactly-once ingest's Spark readers) reads a range of
            the consumers' streams. They get random names, so pulling from and deleting any
            consumer of those streams is allowed, except deleting the declared durables
            (denied explicitly).
        js_api_prefix: the JetStream API prefix (`$JS.<domain>.API` with a domain).
        inbox_prefix: the client's inbox prefix; replies and deliveries come there.

    Returns:
        The lists, deduplicated, in a stable order.

    Raises:
        InvalidArgumentError: a bad name, subject or prefix (before anything is rendered).
    """
    api = validate_subject(js_api_prefix, wildcards=False)
    inbox = validate_subject(inbox_prefix, wildcards=False)
    publish, deny = [f"{api}.INFO"], []
    for spec in consumers:
        if not isinstance(spec, ConsumerSpec):
            raise InvalidArgumentError(f"consumers must be ConsumerSpecs, got {spec!r}")
        stream, durable = spec.stream, spec.durable
        publish += [
            f"{api}.STREAM.INFO.{stream}",
            f"{api}.CONSUMER.INFO.{stream}.{durable}",
            f"{api}.CONSUMER.CREATE.{stream}.{durable}",
            *(f"{api}.CONSUMER.CREATE.{stream}.{durable}.{f}" for f in spec.filter_subjects or ()),
            f"{api}.CONSUMER.DURABLE.CREATE.{stream}.{durable}",
            f"{api}.CONSUMER.MSG.NEXT.{stream}.{durable}",
            f"{api}.CONSUMER.RESET.{stream}.{durable}",
            f"{api}.CONSUMER.PAUSE.{stream}.{durable}",  # resume: a pause with no deadline
            f"$JS.ACK.{stream}.{durable}.>",
        ]
        if range_reads:
            publish += [
                f"{api}.CONSUMER.CREATE.{stream}",  # an unnamed ephemeral consumer
                f"{api}.CONSUMER.MSG.NEXT.{stream}.*",
                f"{api}.CONSUMER.DELETE.{stream}.*",  # a reader deletes its consumer when done
            ]
            deny.append(f"{api}.CONSUMER.DELETE.{stream}.{durable}")
    for bucket in _bucket_names(kv_buckets):
        publish += [f"$KV.{bucket}.>", *_bucket_stream(api, f"KV_{bucket}")]
    for bucket in _bucket_names(object_buckets):
        stream = f"OBJ_{bucket}"
        publish += [
            f"$O.{bucket}.>",
            *_bucket_stream(api, stream),
            f"{api}.STREAM.PURGE.{stream}",  # drops a replaced or deleted object's chunks
        ]
    publish += [validate_subject(subject) for subject in publish_subjects]
    return Permissions(
        publish=tuple(dict.fromkeys(publish)),
        subscribe=(f"{inbox}.>",),
        publish_deny=tuple(dict.fromkeys(deny)),
    )


def _bucket_stream(api: str, stream: str) -> list[str]:
    """A bucket's backing stream: info, message gets, and the ordered consumers of
    watch / keys / history / list (flow-controlled)."""
    return [
        f"{api}.STREAM.INFO.{stream}",
        f"{api}.STREAM.MSG.GET.{stream}",
        f"{api}.DIRECT.GET.{stream}",  # by sequence
        f"{api}.DIRECT.GET.{stream}.>",  # the last message of a subject
        f"{api}.CONSUMER.CREATE.{stream}",  # nats-py: unnamed, left to expire
        f"{api}.CONSUMER.CREATE.{stream}.>",  # named and deleted on stop (Go, the CLI)
        f"{api}.CONSUMER.DELETE.{stream}.>",
        f"{api}.CONSUMER.INFO.{stream}.>",  # keys() reads its watcher's pending count
        f"$JS.FC.{stream}.>",  # flow-control replies; without them a large watch stalls
    ]


def _direction(name: str, allow: Sequence[str], deny: Sequence[str]) -> list[str]:
    lines = [f"    {name}: {{", "      allow: ["]
    lines += [f"        {_quote(subject)}," for subject in allow]
    lines.append("      ]")
    if deny:
        lines.append("      deny: [")
        lines += [f"        {_quote(subject)}," for subject in deny]
        lines.append("      ]")
    lines.append("    }")
    return lines


def _bucket_names(buckets: Iterable[str | KeyValueSpec | ObjectStoreSpec]) -> list[str]:
    names = [getattr(bucket, "bucket", bucket) for bucket in buckets]
    return [validate_name("bucket", name) for name in names]


def _quote(value: str) -> str:
    """A double-quoted configuration string ('$' inside quotes is not a variable)."""
    return json.dumps(value)


def _secret(value: str) -> str:
    """A password as a quoted string, or a `$VARIABLE` reference left for the server."""
    if value.startswith("$") and value[1:].replace("_", "").isalnum():
        return value
    return _quote(value)


__all__ = ["Permissions", "pipeline_permissions"]
