"""IngestRunOptions: a plain run by default, and `until` only as a stream sequence."""

from __future__ import annotations

import pytest

from pipelines.ingest.options import DEFAULT_RUN_OPTIONS, IngestRunOptions


def test_the_default_is_a_plain_run():
    assert (DEFAULT_RUN_OPTIONS.hook, DEFAULT_RUN_OPTIONS.until) == (None, None)
    assert IngestRunOptions(until=1).until == 1


@pytest.mark.parametrize("until", [0, -5])
def test_until_below_one_is_refused_naming_the_field(until):
    with pytest.raises(ValueError, match=r"IngestRunOptions\.until must be a stream sequence >= 1"):
        IngestRunOptions(until=until)
