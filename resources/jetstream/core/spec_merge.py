"""What a declared spec changes, and updates that change only that.

A stream or consumer spec field left None is *not declared*: on create the server's default
applies, and on update (or `reconcile`) the server's current value is kept. A spec read back
from the server has every field filled in.

An update reads the server's configuration as JSON, writes into it only the declared fields
that differ, and sends it back whole. Settings the specs do not model (republish, subject
transforms, priority groups, ...) and settings the spec leaves undeclared therefore stay as
they are, however the stream or consumer was made (the nats CLI, nats.js, Terraform).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypeVar

from resources.jetstream.errors import InvalidArgumentError, UpdateNotAppliedError

T = TypeVar("T")

RESERVED_METADATA = "_nats."  # keys the server writes itself (API level, server version)


def user_metadata(raw: Mapping[str, str] | None) -> dict[str, str]:
    """Metadata as users see it: without the keys the server reserves for itself."""
    return {k: v for k, v in (raw or {}).items() if not k.startswith(RESERVED_METADATA)}


def check_metadata(where: str, metadata: Mapping[str, str] | None) -> dict[str, str] | None:
    """Declared metadata as a plain dict of strings, or None when not declared."""
    if metadata is None:
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise InvalidArgumentError(f"{where}: metadata keys and values must be strings")
    reserved = sorted(k for k in metadata if k.startswith(RESERVED_METADATA))
    if reserved:
        raise InvalidArgumentError(
            f"{where}: metadata keys starting with {RESERVED_METADATA!r} are the server's "
            f"own ({', '.join(reserved)}); choose other names"
        )
    return dict(metadata)


def unchecked(cls: type[T], **values: Any) -> T:
    """A frozen spec built from values the server reported, without the declaration checks.

    The server accepted these values, so they must read back even where a declaration
    would be refused (a mirror has no subjects, a CLI-made stream may have settings the
    checks do not foresee).
    """
    spec = object.__new__(cls)
    for name, value in values.items():
        object.__setattr__(spec, name, value)
    return spec


def declared_changes(found: Any, declared: Any) -> dict[str, tuple[Any, Any]]:
    """The declared fields whose value differs from `found` (the spec the server reports).

    Fields left None are not declared and not compared. Metadata is compared key by key,
    for the declared keys only: other keys on the server are kept, never removed.

    Returns:
        Field name -> (value found, value declared).
    """
    changes: dict[str, tuple[Any, Any]] = {}
    for f in fields(declared):
        want, have = getattr(declared, f.name), getattr(found, f.name)
        if want is None:
            continue
        if f.name == "metadata":
            have = {k: (have or {}).get(k) for k in want}
        if want != have:
            changes[f.name] = (have, want)
    return changes


def merged_config(current: Mapping[str, Any], changed: Mapping[str, Any]) -> dict[str, Any]:
    """The server's configuration with the changed wire fields written into it.

    Args:
        current: the configuration JSON the server reported.
        changed: wire field -> new value, for the fields that change; `metadata` holds only
            the keys to set, which are added to the server's.

    Returns:
        The whole configuration to send back.
    """
    merged = dict(current)
    for key, value in changed.items():
        if key == "metadata":
            value = {**(current.get("metadata") or {}), **value}
        merged[key] = value
    return merged


def refuse_changes(where: str, refusals: list[str], **names: Any) -> None:
    """Raises before any write when a declared field cannot change on the server."""
    if refusals:
        raise InvalidArgumentError(
            f"cannot update {where}: " + "; ".join(refusals) + ". Nothing was changed.", **names
        )


def check_applied(where: str, result: Any, declared: Any, **names: Any) -> None:
    """Raises when the spec the server reports after an update still differs from `declared`.

    Args:
        where: the object, e.g. "stream 'ORDERS'".
        result: the spec read back from the server's answer to the update.
        declared: the spec that was sent.
    """
    kept = declared_changes(result, declared)
    if kept:
        details = ", ".join(f"{k}={old!r} (declared {new!r})" for k, (old, new) in kept.items())
        raise UpdateNotAppliedError(
            f"updated {where}, but the server kept {details}: it forces these from other "
            "settings (see the state's `config`); the other declared changes were made. "
            "Declare the value the server keeps, or leave the field undeclared",
            kept=kept,
            **names,
        )


__all__ = [
    "RESERVED_METADATA",
    "check_applied",
    "check_metadata",
    "declared_changes",
    "merged_config",
    "refuse_changes",
    "unchecked",
    "user_metadata",
]
