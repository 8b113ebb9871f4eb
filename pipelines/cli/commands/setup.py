"""`jsl setup`: check Java, and resolve the Delta Lake jars once into the jar cache.

Spark's Ivy resolves Delta's package (and the extra ones named in `spark.jars.packages` of
`JSL_SPARK_CONF`) from Maven Central in a local Spark session (`local[1]`, whatever
`JSL_SPARK_MASTER` says: no executor elsewhere is started, or left fetching jars when the
session stops); the jar files are copied into the cache (`JSL_SPARK_JARS_DIR`, by default
`~/.cache/jetstream-lakehouse/spark-jars`), and a Delta table is written and read back in a
temporary directory with them (Spark's warehouse and Derby's home too: `jsl setup` keeps no
state, in the data directory or the working directory). From then on, sessions load the
cached files (`spark.jars`) and resolve nothing at run time. With the cache already complete,
or local jars given in `JSL_SPARK_JARS`, nothing is started.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable

from resources.spark import SparkSettings, session_builder
from resources.spark_artifacts import cache_entry, cached_jars, store_jars

SETUP_MASTER = "local[1]"


def resolve_jars(settings: SparkSettings, say: Callable[[str], None] = print) -> tuple[str, ...]:
    """Resolves the settings' packages into the jar cache, unless already there.

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
    say(f"[setup] resolving {', '.join(packages)} from Maven Central (Ivy, once)")
    with tempfile.TemporaryDirectory(prefix="jsl-setup-") as scratch:
        local = dataclasses.replace(settings, data_dir=scratch)  # warehouse, Derby: scratch
        session = session_builder(local).getOrCreate()
        try:
            resolved = [
                jar
                for jar in session.sparkContext.getConf().get("spark.jars", "").split(",")
                if jar.strip()
            ]
            if not resolved:
                raise RuntimeError(
                    f"Spark resolved no jar files for {', '.join(packages)}; check the network "
                    "access to Maven Central, or give local jars in JSL_SPARK_JARS"
                )
            # A Delta round trip, and it runs tasks: stopping the session after it leaves
            # nothing fetching jars.
            path = f"{scratch}/delta-check"
            session.range(3).write.format("delta").save(path)
            rows = session.read.format("delta").load(path).count()
            if rows != 3:
                raise RuntimeError(f"the Delta check table {path!r} read back {rows} rows, not 3")
            say(f"[setup] Spark {session.version} with Delta: a table written and read back")
        finally:
            session.stop()
    entry = store_jars(settings.jars_dir, packages, resolved)
    cached = cached_jars(settings.jars_dir, packages) or ()
    say(f"[setup] {len(cached)} jars cached in {entry}; sessions load them from there")
    return cached


def run() -> int:
    """`jsl setup` after the Java check: the jar cache for the environment's settings."""
    settings = SparkSettings.resolve(
        master=SETUP_MASTER, driver_memory="1g", ui_enabled=False, shuffle_partitions=1
    )
    resolve_jars(settings)
    print("[setup] ready")
    return 0
