"""`jsl setup`: check Java, resolve the Delta Lake jars once into the jar cache, and build the
S3 server the tests and `jsl demo --s3` run (SeaweedFS, when Go is installed:
`resources/object_store/weed.py`).

Spark's Ivy resolves Delta's package (and the extra ones named in `spark.jars.packages` of
`JSL_SPARK_CONF`) from Maven Central in a local Spark session (`local[1]`, whatever
`JSL_SPARK_MASTER` says: no executor elsewhere is started, or left fetching jars when the
session stops); the jar files are copied into the cache (`JSL_SPARK_JARS_DIR`, by default
`~/.cache/jetstream-lakehouse/spark-jars`), and a Delta table is written and read back in a
temporary directory with them (Spark's warehouse and Derby's home too: `jsl setup` keeps no
state, in the data directory or the working directory). From then on, sessions load the
cached files (`spark.jars`) and resolve nothing at run time. With the cache already complete,
or local jars given in `JSL_SPARK_JARS`, nothing is started.

The terminal gets one line per step (`[setup] ...`); Ivy's resolution report and Spark's
start-up output go to the set-up log (`<data dir>/logs/setup.log`, where `make setup` also
writes pip's output), which a failure names.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pipelines.cli.commands import output_to
from resources.object_store.errors import S3ServerError
from resources.object_store.weed import install_weed
from resources.spark import SparkSettings, session_builder
from resources.spark_artifacts import cache_entry, cached_jars, store_jars

SETUP_MASTER = "local[1]"


def resolve_jars(
    settings: SparkSettings, say: Callable[[str], None] = print, log: Path | None = None
) -> tuple[str, ...]:
    """Resolves the settings' packages into the jar cache, unless already there.

    Args:
        settings: Spark's settings (the packages, the jar cache).
        say: prints a progress line.
        log: where Ivy's and Spark's output goes while the session lives (None: where this
            process's stdout and stderr go).

    Returns:
        The cached jar files (or the local jars `settings.jars` lists).

    Raises:
        RuntimeError: Spark resolved no jar files (nothing to cache).
    """
    if settings.jars:
        say(f"[setup] local jars (JSL_SPARK_JARS): {', '.join(settings.jars)}; nothing to resolve")
        return settings.jars
    packages = settings.packages()
    cached = cached_jars(settings.jars_dir, packages)
    if cached:
        say(
            f"[setup] {', '.join(packages)}: {len(cached)} jars cached in "
            f"{cache_entry(settings.jars_dir, packages)}"
        )
        return cached
    where = f"; Ivy's and Spark's output: {log}" if log else ""
    say(f"[setup] resolving {', '.join(packages)} from Maven Central (once{where})")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="jsl-setup-") as scratch:
        local = dataclasses.replace(settings, data_dir=scratch)  # warehouse, Derby: scratch
        with output_to(log) if log else contextlib.nullcontext():
            session = session_builder(local).getOrCreate()
            try:
                resolved = [
                    jar
                    for jar in session.sparkContext.getConf().get("spark.jars", "").split(",")
                    if jar.strip()
                ]
                if not resolved:
                    raise RuntimeError(
                        f"Spark resolved no jar files for {', '.join(packages)}; check the "
                        "network access to Maven Central, or give local jars in JSL_SPARK_JARS"
                    )
                # A Delta round trip, and it runs tasks: stopping the session after it leaves
                # nothing fetching jars.
                path = f"{scratch}/delta-check"
                session.range(3).write.format("delta").save(path)
                rows = session.read.format("delta").load(path).count()
                if rows != 3:
                    raise RuntimeError(
                        f"the Delta check table {path!r} read back {rows} rows, not 3"
                    )
                version = session.version
            finally:
                session.stop()
    entry = store_jars(settings.jars_dir, packages, resolved)
    cached = cached_jars(settings.jars_dir, packages) or ()
    say(
        f"[setup] {len(cached)} jars cached in {entry}; Spark {version} wrote and read a Delta "
        f"table with them ({time.monotonic() - started:.1f}s)"
    )
    return cached


def run(log: Path) -> int:
    """`jsl setup` after the Java check: the jar cache for the environment's settings, with
    Ivy's and Spark's output in `log`, then SeaweedFS's build (Go's output in `log` too).

    Returns:
        0, or 1 when the jars could not be resolved or SeaweedFS not built (the line printed
        names the log).
    """
    settings = SparkSettings.resolve(
        master=SETUP_MASTER, driver_memory="1g", ui_enabled=False, shuffle_partitions=1
    )
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        resolve_jars(settings, log=log)
    except Exception as error:  # Ivy's, Spark's or ours: the log has the whole of it
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        print(f"[setup] FAILED: the Delta Lake jars: {first}; the whole output is in {log}")
        return 1
    try:
        install_weed(log=log)
    except S3ServerError as error:
        print(f"[setup] FAILED: SeaweedFS: {error}; Go's output is in {log}")
        return 1
    print("[setup] ready")
    return 0
