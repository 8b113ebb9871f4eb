"""Stream management: `client.streams` (create, read, list, find, update, delete).

The declared shape (`StreamSpec`) lives in `streams.spec`, the state read back
(`StreamState`) in `streams.state`, and stored messages (get, delete, purge) in
`streams.stored`, which `Streams` inherits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from resources.jetstream.core.spec_merge import (
    check_applied,
    declared_changes,
    merged_config,
    refuse_changes,
)
from resources.jetstream.core.validation import validate_name, validate_subject
from resources.jetstream.errors import (
    NoStreamForSubjectError,
    ServerAPIError,
    StreamNotFoundError,
)
from resources.jetstream.streams.spec import StreamSpec
from resources.jetstream.streams.state import StreamState
from resources.jetstream.streams.stored import StreamMessages

if TYPE_CHECKING:
    from resources.jetstream.core.session import Session

REPLICAS_NOT_SUPPORTED = 10074  # "replicas > 1 not supported in non-clustered mode"
STREAM_NAME_IN_USE = 10058  # "stream name already in use with a different configuration"


def fetch_all_pages(
    client: Session, subject: str, key: str, *, what: str, body: dict | None = None, **names
) -> list[Any]:
    """Every item of a paged JetStream list API (`STREAM.LIST` pages at 256).

    Asks for the next page at `offset=len(items so far)` until the server's `total` is
    reached or a page comes back empty. Objects added or removed between pages may shift
    the offsets: each page is a snapshot.

    Args:
        client: the client that runs the requests.
        subject: the API endpoint, e.g. 'STREAM.LIST'.
        key: the answer's list field ('streams', 'consumers').
        what: the operation, for error messages.
        body: more request fields (e.g. a subject filter); `offset` is added.
        **names: stream / consumer, attached to errors.

    Returns:
        The items of every page, in order.
    """
    items: list[Any] = []
    while True:
        page = client.api_request(
            subject, {**(body or {}), "offset": len(items)}, what=what, **names
        )
        batch = page.get(key) or []
        items.extend(batch)
        if not batch or len(items) >= page.get("total", 0):
            return items


class Streams(StreamMessages):
    """Stream management: `client.streams`."""

    def __init__(self, client: Session) -> None:
        self._client = client

    def add(self, spec: StreamSpec) -> StreamState:
        """Creates the stream; if it exists with the same config, returns it unchanged.

        Settings the spec leaves None take the server's defaults (`allow_direct` is True).

        Args:
            spec: the stream.

        Returns:
            The new (or identical existing) stream.

        Raises:
            ServerAPIError: the name is taken by a stream with another configuration, the
                subjects overlap another stream's, or replicas exceed the cluster.
        """
        return self._write("add", "CREATE", spec, spec.create_json())

    def update(self, spec: StreamSpec) -> StreamState:
        """Changes exactly the settings `spec` declares that differ on the server.

        The server's configuration is read, the differing declared fields are written into
        it, and the whole of it is sent back: every other setting (undeclared, or not
        modelled by `StreamSpec` at all, such as republish or subject transforms) stays as
        it is. Metadata keys are added or changed, never removed. A spec read back from the
        server and changed with `dataclasses.replace` changes just the replaced field.

        Args:
            spec: the stream's new configuration (None fields: keep the server's).

        Returns:
            The updated stream (unchanged, without a write, when nothing differs).

        Raises:
            StreamNotFoundError: the stream does not exist.
            InvalidArgumentError: a declared field cannot change on this stream (storage,
                retention to or from work queue, deny_delete/deny_purge off, a mirror's
                upstream); raised before anything is written.
            UpdateNotAppliedError: the server accepted the update but kept a declared
                field as it was (forced by another setting).
            ServerAPIError: the server refused the change.
        """
        what = f"update stream {spec.name!r}"
        current = self._info_json(spec.name, what)
        found = StreamSpec.from_json(current["config"])
        changes = declared_changes(found, spec)
        where = f"stream {spec.name!r}"
        refuse_changes(where, found.refused_changes(changes), stream=spec.name)
        if not changes:
            return StreamState.from_json(current)
        config = merged_config(current["config"], spec.to_json(only=changes))
        state = self._write("update", "UPDATE", spec, config)
        check_applied(where, state.spec, spec, stream=spec.name)
        return state

    def info(self, name: str) -> StreamState:
        """Returns the stream's configuration and state.

        Args:
            name: the stream.

        Returns:
            Its configuration (`.spec`, and `.config` as the server's JSON) and counters.

        Raises:
            StreamNotFoundError: the stream does not exist.
        """
        validate_name("stream", name)
        return StreamState.from_json(self._info_json(name, f"read stream {name!r}"))

    def exists(self, name: str) -> bool:
        """Whether the stream exists.

        Args:
            name: the stream.

        Returns:
            True if the server has it.
        """
        try:
            self.info(name)
        except StreamNotFoundError:
            return False
        return True

    def list(self, subject: str | None = None) -> list[StreamState]:
        """Every stream (all pages), or those whose subjects overlap `subject`.

        Args:
            subject: a subject or wildcard filter; None lists every stream.

        Returns:
            The streams, in the server's order.
        """
        body = {"subject": validate_subject(subject)} if subject is not None else None
        pages = fetch_all_pages(
            self._client,
            "STREAM.LIST",
            "streams",
            what="list streams",
            body=body,
        )
        return [StreamState.from_json(page) for page in pages]

    def names(self, subject: str | None = None) -> list[str]:
        """The names of every stream (all pages), or of those overlapping `subject`.

        Args:
            subject: a subject or wildcard filter; None names every stream.

        Returns:
            The names.
        """
        body = {"subject": validate_subject(subject)} if subject is not None else None
        return fetch_all_pages(
            self._client,
            "STREAM.NAMES",
            "streams",
            what="list stream names",
            body=body,
        )

    def find(self, subject: str) -> str:
        """The name of the stream that captures `subject`.

        Args:
            subject: a literal subject (no wildcards), e.g. 'files.deleted'.

        Returns:
            The stream's name.

        Raises:
            InvalidArgumentError: `subject` is not a literal subject.
            NoStreamForSubjectError: no stream captures it.
        """
        validate_subject(subject, wildcards=False)
        names = self.names(subject)
        if not names:
            raise NoStreamForSubjectError(
                f"no stream captures subject {subject!r}; add it to a stream's subjects "
                "(see the topology) or check the subject"
            )
        return names[0]

    def delete(self, name: str) -> None:
        """Deletes the stream, its messages and its consumers.

        Args:
            name: the stream.

        Raises:
            StreamNotFoundError: the stream does not exist.
        """
        validate_name("stream", name)
        self._client.run(self._jsm.delete_stream(name), what=f"delete stream {name!r}", stream=name)

    def _info_json(self, name: str, what: str) -> dict[str, Any]:
        """The server's `STREAM.INFO` answer for `name`, as JSON."""
        return self._client.api_request(f"STREAM.INFO.{name}", what=what, stream=name)

    def _write(self, verb: str, api_verb: str, spec: StreamSpec, config: dict) -> StreamState:
        what = f"{verb} stream {spec.name!r}"
        try:
            answer = self._client.api_request(
                f"STREAM.{api_verb}.{spec.name}", config, what=what, stream=spec.name
            )
        except ServerAPIError as error:
            explained = _explained(error, what, spec)
            if explained is None:
                raise
            raise explained from error
        return StreamState.from_json(answer)

    @property
    def _jsm(self):
        return self._client.jsm


def _explained(error: ServerAPIError, what: str, spec: StreamSpec) -> ServerAPIError | None:
    """The server's error on add/update with what to do, for the causes we recognise."""
    description = getattr(error.__cause__, "description", None) or str(error)
    if error.err_code == REPLICAS_NOT_SUPPORTED:
        hint = (
            f"stream {spec.name!r} asks for {spec.replicas} replicas but the server is not "
            f"clustered ({description}); set replicas=1 or run a JetStream cluster of at least "
            f"{spec.replicas} servers"
        )
    elif error.err_code == STREAM_NAME_IN_USE:
        hint = (
            f"stream {spec.name!r} exists with a different configuration ({description}); "
            "change it with `client.streams.update(spec)` (or reconcile the topology)"
        )
    else:
        return None
    return ServerAPIError(
        f"cannot {what}: {hint}", code=error.code, err_code=error.err_code, stream=spec.name
    )


__all__ = ["Streams", "fetch_all_pages"]
