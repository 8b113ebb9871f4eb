"""Where a mirror or a sourced stream copies from: `StreamSource`.

A stream either has subjects of its own, or copies another stream's messages: as a mirror
(one upstream, an exact copy, no subjects of its own) or from sources (several upstreams,
merged, possibly with subjects of its own too). `nats stream add MIR --mirror ORDERS` and
`--source ORDERS` make these; `StreamSpec(mirror=...)` and `StreamSpec(sources=...)` declare
them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from resources.jetstream.core.validation import (
    validate_aware_datetime,
    validate_name,
    validate_seq,
    validate_subject,
)


def utc_timestamp(value: dt.datetime) -> str:
    """A time as the server writes it: RFC 3339 in UTC with a trailing 'Z'."""
    return value.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")


def parse_timestamp(value: str | None) -> dt.datetime | None:
    """The server's RFC 3339 time (nanosecond digits allowed) as an aware UTC datetime."""
    if not value or value.startswith("0001-01-01"):
        return None
    head, _, rest = value.rstrip("Z").partition(".")
    digits = "".join(c for c in rest if c.isdigit())[:6]
    parsed = dt.datetime.fromisoformat(head + (f".{digits.ljust(6, '0')}" if digits else ""))
    return parsed.replace(tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class StreamSource:
    """One upstream of a mirror or a sourced stream.

    Examples:
        >>> StreamSource("ORDERS")                                 # everything, from the start
        >>> StreamSource("ORDERS", filter_subject="orders.eu.>")   # one region
        >>> StreamSource("ORDERS", external_api="$JS.hub.API")     # in another domain
    """

    name: str
    opt_start_seq: int | None = None
    opt_start_time: dt.datetime | None = None  # timezone-aware
    filter_subject: str | None = None
    subject_transforms: tuple[tuple[str, str], ...] = ()  # (source filter, destination)
    external_api: str | None = None  # the upstream's JetStream API prefix, e.g. '$JS.hub.API'
    external_deliver: str | None = None  # the upstream's delivery prefix

    def __post_init__(self) -> None:
        validate_name("stream", self.name)
        where = f"source stream {self.name!r}"
        if self.opt_start_seq is not None:
            validate_seq(f"{where}: opt_start_seq", self.opt_start_seq)
        if self.opt_start_time is not None:
            start = validate_aware_datetime(f"{where}: opt_start_time", self.opt_start_time)
            object.__setattr__(self, "opt_start_time", start)
        if self.filter_subject is not None:
            validate_subject(self.filter_subject)
        transforms = tuple((str(src), str(dest)) for src, dest in self.subject_transforms)
        object.__setattr__(self, "subject_transforms", transforms)

    def to_json(self) -> dict[str, Any]:
        """The source as the JetStream API writes it."""
        out: dict[str, Any] = {"name": self.name}
        if self.opt_start_seq is not None:
            out["opt_start_seq"] = self.opt_start_seq
        if self.opt_start_time is not None:
            out["opt_start_time"] = utc_timestamp(self.opt_start_time)
        if self.filter_subject is not None:
            out["filter_subject"] = self.filter_subject
        if self.subject_transforms:
            out["subject_transforms"] = [
                {"src": src, "dest": dest} for src, dest in self.subject_transforms
            ]
        if self.external_api is not None or self.external_deliver is not None:
            out["external"] = {"api": self.external_api or "", "deliver": self.external_deliver}
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> StreamSource:
        """The source the server reports (not validated: the server accepted it)."""
        external = raw.get("external") or {}
        source = object.__new__(cls)
        values = {
            "name": raw.get("name", ""),
            "opt_start_seq": raw.get("opt_start_seq") or None,
            "opt_start_time": parse_timestamp(raw.get("opt_start_time")),
            "filter_subject": raw.get("filter_subject") or None,
            "subject_transforms": tuple(
                (t.get("src", ""), t.get("dest", "")) for t in raw.get("subject_transforms") or ()
            ),
            "external_api": external.get("api") or None,
            "external_deliver": external.get("deliver") or None,
        }
        for name, value in values.items():
            object.__setattr__(source, name, value)
        return source


__all__ = ["StreamSource", "parse_timestamp", "utc_timestamp"]
