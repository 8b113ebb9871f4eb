"""Argument checks that run before any I/O: names, subjects, sequences and times."""

from __future__ import annotations

import datetime as dt
import re

from resources.jetstream.errors import InvalidArgumentError

_FORBIDDEN_IN_NAMES = frozenset(" \t\r\n.*>/\\")
BUCKET_NAME_RE = re.compile(r"[a-zA-Z0-9_-]+")  # what the KV and Object Store protocols allow


def validate_bucket(bucket: str) -> str:
    """Checks a Key-Value or Object Store bucket name before any I/O."""
    if not isinstance(bucket, str) or not BUCKET_NAME_RE.fullmatch(bucket):
        raise InvalidArgumentError(
            f"invalid bucket name {bucket!r}: use only letters, digits, '-' and '_'"
        )
    return bucket


def validate_name(kind: str, name: str) -> str:
    """Checks a stream, consumer or bucket name before any I/O.

    Args:
        kind: what the name is for ("stream", "consumer", ...), for the message.
        name: the name.

    Returns:
        The name, unchanged.

    Raises:
        InvalidArgumentError: if the name is empty or holds whitespace, '.', '*', '>' or a
            path separator.
    """
    if not isinstance(name, str) or not name or _FORBIDDEN_IN_NAMES & set(name):
        raise InvalidArgumentError(
            f"invalid {kind} name {name!r}: use letters, digits, '-' and '_' "
            "(no spaces, '.', '*', '>' or path separators)"
        )
    return name


def validate_subject(subject: str, *, wildcards: bool = True) -> str:
    """Checks a subject (or a subject filter when `wildcards`) before any I/O.

    Args:
        subject: dot-separated tokens, e.g. 'files.deleted'.
        wildcards: allow '*' (one token) and a final '>' (the rest).

    Returns:
        The subject, unchanged.

    Raises:
        InvalidArgumentError: on an empty subject or token, whitespace, a '>' before the
            last token, or a wildcard where none is allowed.
    """
    tokens = subject.split(".") if isinstance(subject, str) else [""]
    bad = not subject or any(not t or any(c.isspace() for c in t) for t in tokens)
    if not wildcards:
        bad = bad or any(t in ("*", ">") for t in tokens)
    bad = bad or any(t == ">" for t in tokens[:-1])
    if bad:
        raise InvalidArgumentError(
            f"invalid subject {subject!r}: use dot-separated tokens like 'files.deleted'"
            + (", with '*' for one token and a final '>' for the rest" if wildcards else "")
        )
    return subject


def validate_seq(what: str, seq: int, *, minimum: int = 1) -> int:
    """Checks a stream sequence (or a count) before any I/O.

    Args:
        what: the argument, for the message ("seq", "keep", ...).
        seq: the value.
        minimum: the smallest value allowed.

    Returns:
        The value, unchanged.

    Raises:
        InvalidArgumentError: if `seq` is not an integer or is below `minimum`.
    """
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < minimum:
        raise InvalidArgumentError(f"{what} must be an integer >= {minimum}, got {seq!r}")
    return seq


def validate_aware_datetime(what: str, value: dt.datetime) -> dt.datetime:
    """Checks that `value` is a timezone-aware datetime and returns it in UTC.

    Raises:
        InvalidArgumentError: if `value` is not a datetime or has no timezone.
    """
    if not isinstance(value, dt.datetime) or value.tzinfo is None:
        raise InvalidArgumentError(
            f"{what} must be a timezone-aware datetime (e.g. datetime.now(timezone.utc)), "
            f"got {value!r}"
        )
    return value.astimezone(dt.timezone.utc)


__all__ = [
    "validate_aware_datetime",
    "validate_bucket",
    "validate_name",
    "validate_seq",
    "validate_subject",
]
