"""A class-data-sharing archive for the tests' Spark JVMs (HotSpot's AppCDS, JDK 13+).

Every Spark JVM the suite starts with the tests' `JSL_SPARK_CONF` (the workers' sessions, the
Dagster runs', the children's, the Connect servers `jsl dev` and tests/cluster start) loads and
verifies the same thousands of Spark, Hadoop and Scala classes. An archive dumped once from a
small Delta workload (`-XX:ArchiveClassesAtExit`) lets each later JVM map those classes already
parsed and verified (`-XX:SharedArchiveFile`). The standalone cluster's master and workers and
the drivers of its ingest children (tests/cluster/) leave `JSL_SPARK*` out on purpose, to run
the product's defaults, so they load classes as usual. Measured on this machine (2026-11-26): a
session started and a first Delta write and read, 13.2-13.8 s of JVM CPU without the archive
and 8.4-9.0 s with it.

The archive is HotSpot's own mechanism and changes no result: a JVM whose version or class
path differs from the dumping one ignores it (`-Xshare:auto`, the default) and loads its
classes as usual. It is cached under `~/.cache/jetstream-lakehouse/class-archives/`, one file
per Java version, pyspark version and JVM options, and dumped again when any of them changes.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyspark

CACHE_DIR = Path.home() / ".cache" / "jetstream-lakehouse" / "class-archives"
DUMP_TIMEOUT = 300.0  # seconds: a loaded 2-core machine dumps slowly
# Keep the JVMs quiet about classes they cannot archive or an archive they cannot map.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off -Xlog:class+path=off"

# The workload whose classes are archived: a session, a Delta write, MERGE, read, history,
# an Arrow round trip and the usual SQL functions. Run as `python -c`, with the conf in
# JSL_SPARK_CONF; prints the JVM's pid last, so that the caller can wait for its dump.
WORKLOAD = """
import tempfile
from resources.spark import SparkResource
from pyspark.sql import functions as F
spark = SparkResource(ui_enabled=False, shuffle_partitions=1).get_session()
root = tempfile.mkdtemp()
frame = spark.range(100).select(
    F.col("id"), F.to_json(F.struct(F.col("id").alias("n"))).alias("payload"),
    F.current_timestamp().alias("at"), (F.col("id") % 7).cast("decimal(10,2)").alias("d"))
frame.write.format("delta").save(root + "/t")
spark.sql(f"MERGE INTO delta.`{root}/t` AS t USING (SELECT * FROM delta.`{root}/t`) AS s "
          "ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")
read = spark.read.format("delta").load(root + "/t")
parsed = read.select("id", F.from_json("payload", "n long").alias("p"), "d", "at")
parsed.groupBy((F.col("id") % 3).alias("k")).agg(F.count("*"), F.max("d"), F.min("at")).collect()
parsed.filter(F.col("p.n").isNull() | F.col("payload").rlike("^[0-9]+$")).count()
read.toArrow()
spark.createDataFrame(read.toPandas()).mapInArrow(lambda batches: batches, read.schema).count()
spark.sql(f"DESCRIBE HISTORY delta.`{root}/t`").collect()
pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
spark.stop()
print(pid)
"""


def _key(java_options: str) -> str:
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=True)
    jars = sorted(p.name for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    text = json.dumps([java.stderr, pyspark.__version__, jars, java_options])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def class_archive(spark_conf: dict[str, str]) -> Path | None:
    """The archive for JVMs started with `spark_conf`, dumped first if not cached.

    None when it cannot be dumped (no `java`, or the dump failed): the tests then run
    without one, as before.
    """
    options = spark_conf.get("spark.driver.extraJavaOptions", "")
    try:
        path = CACHE_DIR / f"spark-{_key(options)}.jsa"
    except (OSError, subprocess.CalledProcessError):
        return None
    if path.is_file():
        return path
    try:
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    partial = path.with_suffix(f".{os.getpid()}.partial")
    conf = {
        **spark_conf,
        "spark.driver.extraJavaOptions": f"{options} -XX:ArchiveClassesAtExit={partial} {QUIET}",
    }
    env = {**os.environ, "JSL_SPARK_CONF": json.dumps(conf)}
    env.pop("SPARK_REMOTE", None)
    try:
        done = subprocess.run(
            [sys.executable, "-c", WORKLOAD],
            capture_output=True,
            text=True,
            env=env,
            timeout=DUMP_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return None
    try:
        pid = int(done.stdout.split()[-1]) if done.returncode == 0 else None
    except (IndexError, ValueError):
        pid = None
    if pid is None:
        return None
    deadline = time.monotonic() + DUMP_TIMEOUT
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)  # the JVM writes the archive as it exits, after Python has
    if not partial.is_file() or _alive(pid):
        partial.unlink(missing_ok=True)
        return None
    os.replace(partial, path)
    return path
