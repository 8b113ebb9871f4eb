"""`jsl setup`: with the jar cache complete (or local jars given), nothing is resolved or
started; the resolution itself (Ivy, a local[1] session, a Delta round trip) is what
`make setup` runs before every `make demo` and `make test`."""

from __future__ import annotations

import os
import subprocess
import sys

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
    assert said == [f"[setup] {', '.join(settings.packages())}: 1 jars cached in {entry}"]


def test_setup_with_local_jars_resolves_nothing(tmp_path):
    settings = SparkSettings.resolve(
        jars=["/jars/delta-spark.jar"], jars_dir=str(tmp_path), environ={}
    )
    said: list[str] = []

    assert resolve_jars(settings, say=said.append) == ("/jars/delta-spark.jar",)
    assert "nothing to resolve" in said[0]
    assert not any(tmp_path.iterdir())


def test_setup_resolving_the_jars_prints_a_line_per_step_and_logs_ivy_and_spark(tmp_path):
    """A first `jsl setup` (an empty jar cache): Ivy's report and Spark's start-up output go to
    the set-up log, and the terminal gets the `[setup]` lines only."""
    log = tmp_path / "logs" / "setup.log"
    env = {**os.environ, "JSL_SPARK_JARS_DIR": str(tmp_path / "jars")}

    done = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "setup", "--log", str(log)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0].startswith("[setup] Java: ")
    assert all(line.startswith("[setup] ") for line in lines), lines
    assert len(lines) == 5 and lines[-1] == "[setup] ready", lines
    assert str(log) in lines[1]
    assert lines[3].startswith("[setup] SeaweedFS"), lines  # built already, or why not
    written = log.read_text()
    assert "io.delta#delta-spark" in written  # Ivy's resolution report
    assert not (tmp_path / "spark-warehouse").exists()
