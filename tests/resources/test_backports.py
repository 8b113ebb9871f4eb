"""The backports of resources/backports.py behave as Python 3.11's standard library does, on
the Python this runs on (the suite runs on 3.11; tests/test_install.py runs this file on the
lowest and the highest supported Python)."""

from __future__ import annotations

import datetime as dt
import enum

import pytest

from resources.backports import StrEnum, fromisoformat, tomllib


class Color(StrEnum):
    RED = "red"
    DARK_BLUE = enum.auto()


def test_a_str_enum_member_is_its_value_as_text():
    assert Color.RED == "red"
    assert isinstance(Color.RED, str)
    assert str(Color.RED) == "red"
    assert f"{Color.RED}" == "red"
    assert f"{Color.RED:>5}" == "  red"
    assert "-".join([Color.RED, Color.DARK_BLUE]) == "red-dark_blue"
    assert Color("red") is Color.RED
    assert repr(Color.RED) == "<Color.RED: 'red'>"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-21T00:00:00Z", dt.datetime(2026, 11, 21, tzinfo=dt.timezone.utc)),
        ("2026-11-21T00:00:00.123Z", dt.datetime(2026, 11, 21, 0, 0, 0, 123000, dt.timezone.utc)),
        ("2026-11-21T02:00:00+02:00", dt.datetime(2026, 11, 21, tzinfo=dt.timezone.utc)),
        ("2026-11-21T00:00:00", dt.datetime(2026, 11, 21)),
    ],
)
def test_fromisoformat_reads_a_trailing_z_as_utc(text, expected):
    assert fromisoformat(text) == expected
    assert (fromisoformat(text).tzinfo is None) == (expected.tzinfo is None)


def test_fromisoformat_rejects_what_is_not_iso_8601():
    with pytest.raises(ValueError):
        fromisoformat("21/11/2026")


def test_tomllib_reads_toml():
    assert tomllib.loads('[project]\nname = "x"\n') == {"project": {"name": "x"}}
