"""Key-Value argument checks: bucket names, keys and watch patterns, values and revisions.

Each raises `InvalidArgumentError` before any I/O, with the rule the argument broke.
"""

from __future__ import annotations

import re

from nats.js.kv import VALID_KEY_RE

from resources.jetstream.core.validation import validate_name
from resources.jetstream.errors import InvalidArgumentError

VALID_BUCKET_RE = re.compile(r"^[a-zA-Z0-9_-]+$")  # nats-py's VALID_BUCKET_RE
_NO_VALUE = object()


def check_bucket(bucket: str) -> None:
    """Checks a bucket name the way nats-py would."""
    validate_name("bucket", bucket)
    if not VALID_BUCKET_RE.fullmatch(bucket):
        raise InvalidArgumentError(
            f"invalid kv bucket name {bucket!r}: use ASCII letters, digits, '-' and '_'"
        )


def check_key(key: str, *, wildcards=False, value=_NO_VALUE, revision=None) -> None:
    """Checks a key (or a watch pattern), and the value and revision given with it."""
    tokens = key.split(".") if isinstance(key, str) and key else [""]
    allowed = {"*", ">"} if wildcards else set()
    bad = any(t not in allowed and not VALID_KEY_RE.fullmatch(t) for t in tokens)
    if bad or ">" in tokens[:-1]:
        raise InvalidArgumentError(
            f"invalid kv key {key!r}: use dot-separated tokens of letters, digits, '-', '_', "
            "'/' and '='" + (", with '*' for one token and a final '>'" if wildcards else ""),
            key=key if isinstance(key, str) else None,
        )
    if value is not _NO_VALUE and not isinstance(value, bytes | bytearray | memoryview):
        raise InvalidArgumentError(
            f"value for kv key {key!r} must be bytes, got {type(value).__name__} {value!r:.40}",
            key=key,
        )
    if revision is not None:
        check_revision(key, revision)


def check_revision(key: str, revision: int) -> None:
    """Checks an expected revision: an int >= 1 (0 would mean "must not exist")."""
    if isinstance(revision, bool) or not isinstance(revision, int) or revision < 1:
        raise InvalidArgumentError(
            f"revision for kv key {key!r} must be an int >= 1, got {revision!r}"
            " (use create() for a key that must not exist)",
            key=key,
        )
