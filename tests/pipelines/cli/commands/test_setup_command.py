"""`jsl setup`: with the jar cache complete (or local jars given), nothing is resolved or
started; the resolution itself (Ivy, a local[1] session, a Delta round trip) is what
`make setup` runs before every `make demo` and `make test`."""

from __future__ import annotations

from pipelines.cli.commands.setup import resolve_jars
from resources.spark import SparkSettings
from resources.spark_artifacts import cache_entry, store_jars


def test_setup_with_a_complete_jar_cache_reports_it_and_starts_no_spark(tmp_path):
    settings = SparkSettings.resolve(jars_dir=str(tmp_path / "jars"), environ={})
    jar = tmp_path / "io.delta_delta-spark.jar"
    jar.write_bytes(b"jar")
    store_jars(settings.jars_dir, settings.packages(), [str(jar)])
    said: list[str] = []

    jars = resolve_jars(settings, say=said.append)

    entry = cache_entry(settings.jars_dir, settings.packages())
    assert jars == (str(entry / "io.delta_delta-spark.jar"),)
    assert said == [f"[setup] {settings.packages()[0]}: 1 jars cached in {entry}"]


def test_setup_with_local_jars_resolves_nothing(tmp_path):
    settings = SparkSettings.resolve(
        jars=["/jars/delta-spark.jar"], jars_dir=str(tmp_path), environ={}
    )
    said: list[str] = []

    assert resolve_jars(settings, say=said.append) == ("/jars/delta-spark.jar",)
    assert "nothing to resolve" in said[0]
    assert not any(tmp_path.iterdir())
