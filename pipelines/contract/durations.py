"""Durations as a contract writes them (`5m`, `30 seconds`, `PT5M`, a number of seconds) and
as its sentences say them (`5 minutes`): the allowed clock skew of `not_in_future`."""

from __future__ import annotations

import datetime as dt
import re

from pipelines.contract.errors import ContractError

_DURATION = re.compile(
    r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?|d|days?)\s*$"
)
_ISO_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value: object) -> dt.timedelta:
    """A duration: seconds as a number, `5m`, `30 seconds`, `2 hours`, or ISO-8601 `PT5M`.

    Raises:
        ContractError: the value is none of those, or negative.
    """
    if isinstance(value, dt.timedelta):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return dt.timedelta(seconds=value)
    if isinstance(value, str):
        match = _DURATION.match(value.lower())
        if match:
            unit = match.group(2)
            scale = _UNITS["ms" if unit == "ms" else "m" if unit.startswith("m") else unit[0]]
            return dt.timedelta(seconds=float(match.group(1)) * scale)
        iso = _ISO_DURATION.match(value.strip().upper())
        if iso and value.strip().upper() not in ("P", "PT"):
            days, hours, minutes, seconds = (float(g) if g else 0.0 for g in iso.groups())
            return dt.timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    raise ContractError(
        f"bad duration {value!r}; write e.g. 5m, 30s, 2 hours, PT5M, or a number of seconds"
    )


def format_duration(delta: dt.timedelta) -> str:
    """`5 minutes`, `30 seconds`, `2 hours`, `1 day`: the largest unit that divides it."""
    seconds = delta.total_seconds()
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds and seconds % size == 0:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    count = int(seconds) if seconds == int(seconds) else seconds
    return f"{count} second{'s' if count != 1 else ''}"
