"""What Python 3.11 added to the standard library that this project uses, on Python 3.10 too.

On 3.11 and later each name is the standard library's own; on 3.10 it is the backport:

- `StrEnum`: `enum.StrEnum`; on 3.10, a `str` enum whose `str()` and format give its value;
- `Self`: `typing.Self`; on 3.10, `typing_extensions.Self`;
- `tomllib`: `tomllib`; on 3.10, `tomli` (the same parser, from PyPI);
- `fromisoformat`: `datetime.datetime.fromisoformat`; on 3.10 it also reads a trailing `Z`
  as UTC, as 3.11 does.

`datetime.UTC` is not here: `datetime.timezone.utc` is the same object on every version.
Remove this module, and import the standard names, once Python 3.10 is no longer supported.
"""

from __future__ import annotations

import datetime as dt
import enum
import sys

__all__ = ["Self", "StrEnum", "fromisoformat", "tomllib"]

if sys.version_info >= (3, 11):
    from enum import StrEnum
    from typing import Self

    import tomllib

    def fromisoformat(text: str) -> dt.datetime:
        """`datetime.datetime.fromisoformat(text)`."""
        return dt.datetime.fromisoformat(text)

else:  # pragma: no cover - Python 3.10 only
    import tomli as tomllib
    from typing_extensions import Self

    class StrEnum(str, enum.Enum):
        """`enum.StrEnum` of Python 3.11: members are strings, and `str(member)`,
        `format(member)` and f-strings give the value; `auto()` gives the name in lower case.
        """

        __str__ = str.__str__
        __format__ = str.__format__

        @staticmethod
        def _generate_next_value_(name: str, start: int, count: int, last_values: list) -> str:
            return name.lower()

    def fromisoformat(text: str) -> dt.datetime:
        """`datetime.datetime.fromisoformat(text)`, which on 3.10 reads only what
        `isoformat()` writes: a trailing `Z` (RFC 3339's UTC) is read as `+00:00`, as 3.11 does.
        """
        if text[-1:] in ("Z", "z"):
            text = text[:-1] + "+00:00"
        return dt.datetime.fromisoformat(text)
