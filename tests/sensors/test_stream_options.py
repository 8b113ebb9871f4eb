"""StreamSensorOptions: defaults in one place, and each bad value refused by its field name."""

from __future__ import annotations

import datetime as dt

import pytest

from pipelines.ingest.spec import IngestSpec
from sensors import StreamSensorOptions


@pytest.mark.parametrize(
    "field", ["min_messages", "minimum_interval_seconds", "max_runs_per_tick", "max_retries"]
)
def test_a_count_below_one_is_refused_naming_the_field_and_the_sensor(field):
    with pytest.raises(ValueError, match=rf"StreamSensorOptions\.{field} must be 1 or more.*'s1'"):
        StreamSensorOptions(name="s1", **{field: 0})


@pytest.mark.parametrize("budget", [0, -1, 60, 90])
def test_a_tick_budget_outside_dagsters_tick_is_refused(budget):
    with pytest.raises(ValueError, match="tick_budget must be more than 0 and less than 60"):
        StreamSensorOptions(tick_budget=budget)


def test_the_default_name_follows_the_ingest():
    spec = IngestSpec(
        name="file_events", stream="FILE_EVENTS", durable="lakehouse-bronze", table="bronze/fe"
    )

    assert StreamSensorOptions().sensor_name(spec) == "file_events_stream_sensor"
    assert StreamSensorOptions(name="mine").sensor_name(spec) == "mine"
    assert StreamSensorOptions().max_wait == dt.timedelta(minutes=15)


def test_negative_follow_seconds_are_refused():
    with pytest.raises(ValueError, match="follow_seconds must be 0 \\(off\\) or more, got -1"):
        StreamSensorOptions(follow_seconds=-1)
