"""Consumer management: `client.consumers` (create, read, list, update, delete).

The declared shape (`ConsumerSpec`) lives in `consumers.spec`, the state read back
(`ConsumerState`) in `consumers.state`; pausing, resuming and resetting in
`consumers.control` (a base of `Consumers`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from resources.jetstream.consumers.control import ConsumerControl
from resources.jetstream.consumers.spec import ConsumerSpec
from resources.jetstream.consumers.state import ConsumerState
from resources.jetstream.core.spec_merge import (
    check_applied,
    declared_changes,
    merged_config,
    refuse_changes,
)
from resources.jetstream.core.validation import validate_name
from resources.jetstream.errors import (
    ConsumerNotFoundError,
    ServerAPIError,
    StreamNotFoundError,
)
from resources.jetstream.streams.manage import fetch_all_pages

if TYPE_CHECKING:
    from resources.jetstream.core.session import Session

CONSUMER_EXISTS = 10148  # "consumer already exists" (with another configuration)
CONSUMER_DOES_NOT_EXIST = 10149  # the answer of an update of a missing consumer


class Consumers(ConsumerControl):
    """Consumer management: `client.consumers`."""

    def __init__(self, client: Session) -> None:
        self._client = client

    def add(self, spec: ConsumerSpec) -> ConsumerState:
        """Creates the durable consumer (or returns it, if it exists with the same config).

        Args:
            spec: the consumer.

        Returns:
            The new (or identical existing) consumer.

        Raises:
            StreamNotFoundError: the stream does not exist.
            ServerAPIError: a consumer of that name exists with another configuration (use
                `update`), or the server refused the configuration.
        """
        return self._create(spec, spec.create_json(), "create")

    def update(self, spec: ConsumerSpec) -> ConsumerState:
        """Changes exactly the settings `spec` declares that differ on the server.

        The server's configuration is read, the differing declared fields are written into
        it, and the whole of it is sent back: every other setting (undeclared, or not
        modelled by `ConsumerSpec`, such as max_batch, sample_freq or priority groups)
        stays as it is. Metadata keys are added or changed, never removed.

        Args:
            spec: the consumer's new configuration (None fields: keep the server's).

        Returns:
            The updated consumer (unchanged, without a write, when nothing differs).

        Raises:
            ConsumerNotFoundError: the consumer does not exist.
            InvalidArgumentError: a declared field cannot change on an existing consumer
                (deliver or ack policy, start, max_waiting, pull <-> push); raised before
                anything is written.
            UpdateNotAppliedError: the server accepted the update but kept a declared
                field as it was (forced by another setting).
            ServerAPIError: the server refused the change.
        """
        where = f"consumer {spec.durable!r} of stream {spec.stream!r}"
        current = self._info_json(spec.stream, spec.durable)
        found = ConsumerSpec.from_json(spec.stream, current["config"])
        changes = declared_changes(found, spec)
        names = {"stream": spec.stream, "consumer": spec.durable}
        refuse_changes(where, found.refused_changes(changes), **names)
        if not changes:
            return ConsumerState.from_json(current)
        config = merged_config(current["config"], spec.to_json(only=changes))
        state = self._create(spec, config, "update")
        check_applied(where, state.spec, spec, **names)
        return state

    def info(self, stream: str, consumer: str) -> ConsumerState:
        """Returns the consumer's position, counters, pause state and configuration.

        Args:
            stream: the stream.
            consumer: the consumer.

        Returns:
            Delivered and ack-floor sequences, pending counts, `paused`, and `.spec`.

        Raises:
            StreamNotFoundError: the stream does not exist.
            ConsumerNotFoundError: the consumer does not exist.
        """
        validate_name("stream", stream)
        validate_name("consumer", consumer)
        return ConsumerState.from_json(self._info_json(stream, consumer))

    def exists(self, stream: str, consumer: str) -> bool:
        """Whether the consumer exists.

        Args:
            stream: the stream.
            consumer: the consumer.

        Returns:
            True if it exists; False also when the stream does not.
        """
        try:
            self.info(stream, consumer)
        except (ConsumerNotFoundError, StreamNotFoundError):
            return False
        return True

    def names(self, stream: str) -> list[str]:
        """The names of every consumer of `stream` (all pages).

        Args:
            stream: the stream.

        Returns:
            The names.

        Raises:
            StreamNotFoundError: the stream does not exist.
        """
        validate_name("stream", stream)
        return fetch_all_pages(
            self._client,
            f"CONSUMER.NAMES.{stream}",
            "consumers",
            what=f"list consumers of stream {stream!r}",
            stream=stream,
        )

    def list(self, stream: str) -> list[ConsumerState]:
        """Every consumer of `stream` with its state (all pages; the API pages at 256).

        Args:
            stream: the stream.

        Returns:
            One state per consumer.

        Raises:
            StreamNotFoundError: the stream does not exist.
        """
        validate_name("stream", stream)
        pages = fetch_all_pages(
            self._client,
            f"CONSUMER.LIST.{stream}",
            "consumers",
            what=f"list consumers of stream {stream!r}",
            stream=stream,
        )
        return [ConsumerState.from_json(page) for page in pages]

    def delete(self, stream: str, consumer: str) -> None:
        """Deletes the consumer and its state.

        Args:
            stream: the stream.
            consumer: the consumer.

        Raises:
            StreamNotFoundError: the stream does not exist.
            ConsumerNotFoundError: the consumer does not exist.
        """
        validate_name("stream", stream)
        validate_name("consumer", consumer)
        self._client.run(
            self._client.jsm.delete_consumer(stream, consumer),
            what=f"delete consumer {consumer!r} of stream {stream!r}",
            stream=stream,
            consumer=consumer,
        )

    def _info_json(self, stream: str, consumer: str) -> dict[str, Any]:
        """The server's `CONSUMER.INFO` answer, as JSON."""
        return self._client.api_request(
            f"CONSUMER.INFO.{stream}.{consumer}",
            what=f"read consumer {consumer!r} of stream {stream!r}",
            stream=stream,
            consumer=consumer,
        )

    def _create(self, spec: ConsumerSpec, config: dict[str, Any], action: str) -> ConsumerState:
        """`CONSUMER.CREATE` with an action: 'create' fails on a different existing consumer,
        'update' on a missing one (nats-py's `add_consumer` sends no action: it upserts)."""
        names = {"stream": spec.stream, "consumer": spec.durable}
        api = f"CONSUMER.CREATE.{spec.stream}.{spec.durable}"
        if config.get("filter_subject") and not config.get("filter_subjects"):
            api += f".{config['filter_subject']}"
        request = {"stream_name": spec.stream, "config": config, "action": action}
        verb = "add consumer" if action == "create" else "update consumer"
        what = f"{verb} {spec.durable!r} of stream {spec.stream!r}"
        try:
            answer = self._client.api_request(api, request, what=what, **names)
        except ServerAPIError as error:
            if error.err_code == CONSUMER_EXISTS:
                raise ServerAPIError(
                    f"cannot {what}: it exists with a different configuration; change it with "
                    "`client.consumers.update(spec)` (or reconcile the topology), or delete it",
                    code=error.code,
                    err_code=error.err_code,
                    **names,
                ) from error
            if error.err_code == CONSUMER_DOES_NOT_EXIST:
                raise ConsumerNotFoundError(
                    f"cannot {what}: stream {spec.stream!r} has no consumer {spec.durable!r}; "
                    "create it with `client.consumers.add(spec)` (or reconcile the topology)",
                    **names,
                ) from error
            raise
        return ConsumerState.from_json(answer)


__all__ = ["Consumers"]
