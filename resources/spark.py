"""The one SparkSession factory, and `SparkResource` that exposes it to Dagster.

Local defaults are explicit and sized for a small machine (2 cores, 24 GiB): Spark's own
1 GiB driver heap runs out on a few hundred MB of payloads, so the driver gets 4 GiB.
Every setting can be overridden by resource config, and when config leaves it unset, by
an environment variable:

| setting            | env var                      | default                      |
|--------------------|------------------------------|------------------------------|
| master             | `JSL_SPARK_MASTER`           | `local[2]`                   |
| remote (Connect)   | `SPARK_REMOTE`               | unset (no ingest over it yet) |
| driver_memory      | `JSL_SPARK_DRIVER_MEMORY`    | `4g`                         |
| shuffle_partitions | `JSL_SPARK_SHUFFLE_PARTITIONS` | `4`                        |
| ui_enabled         | `JSL_SPARK_UI`               | `false`                      |
| extra_conf         | `JSL_SPARK_CONF` (JSON object) | `{}`                       |
| jars               | `JSL_SPARK_JARS` (comma list) | unset: Delta from Maven Central |

Delta Lake's jars are resolved by Spark from Maven Central (`spark.jars.packages`, cached
under `~/.ivy2.5.2`) unless `jars` lists local jar files, for machines without Maven access.
More packages (e.g. `org.apache.hadoop:hadoop-aws:<version>` for an `s3a://` table root) go in
`spark.jars.packages` of `extra_conf` or `JSL_SPARK_CONF`; they are resolved beside Delta's.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field

from dagster import ConfigurableResource
from pydantic import Field

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"

DEFAULT_MASTER = "local[2]"
DEFAULT_DRIVER_MEMORY = "4g"
DEFAULT_SHUFFLE_PARTITIONS = 4
MAX_CONCURRENT_OUTPUT_WRITERS = 8


def _env_bool(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class SparkSettings:
    """Resolved settings for one SparkSession (config, then environment, then defaults)."""

    app_name: str = "jetstream-lakehouse"
    master: str = DEFAULT_MASTER
    remote: str | None = None
    driver_memory: str = DEFAULT_DRIVER_MEMORY
    shuffle_partitions: int = DEFAULT_SHUFFLE_PARTITIONS
    ui_enabled: bool = False
    extra_conf: dict[str, str] = field(default_factory=dict)
    jars: tuple[str, ...] = ()

    @classmethod
    def resolve(
        cls,
        *,
        app_name: str = "jetstream-lakehouse",
        master: str | None = None,
        remote: str | None = None,
        driver_memory: str | None = None,
        shuffle_partitions: int | None = None,
        ui_enabled: bool | None = None,
        extra_conf: dict[str, str] | None = None,
        jars: list[str] | None = None,
        environ: dict[str, str] | None = None,
    ) -> SparkSettings:
        """Resolves each setting: the explicit value, else its env var, else the default.

        `extra_conf` from config is layered over `JSL_SPARK_CONF`.
        """
        env = os.environ if environ is None else environ
        env_conf = json.loads(env["JSL_SPARK_CONF"]) if env.get("JSL_SPARK_CONF") else {}
        if not isinstance(env_conf, dict):
            raise ValueError("JSL_SPARK_CONF must be a JSON object of Spark conf keys to values")
        env_jars = [j.strip() for j in env.get("JSL_SPARK_JARS", "").split(",") if j.strip()]
        partitions = shuffle_partitions or env.get("JSL_SPARK_SHUFFLE_PARTITIONS")
        ui = ui_enabled if ui_enabled is not None else _env_bool(env.get("JSL_SPARK_UI", "false"))
        return cls(
            app_name=app_name,
            master=master or env.get("JSL_SPARK_MASTER") or DEFAULT_MASTER,
            remote=remote or env.get("SPARK_REMOTE") or None,
            driver_memory=driver_memory
            or env.get("JSL_SPARK_DRIVER_MEMORY")
            or DEFAULT_DRIVER_MEMORY,
            shuffle_partitions=int(partitions or DEFAULT_SHUFFLE_PARTITIONS),
            ui_enabled=ui,
            extra_conf={**{k: str(v) for k, v in env_conf.items()}, **(extra_conf or {})},
            jars=tuple(jars or env_jars),
        )

    def conf(self) -> dict[str, str]:
        """Every Spark conf key this factory sets, before `extra_conf` wins."""
        conf = {
            "spark.driver.memory": self.driver_memory,
            "spark.sql.shuffle.partitions": str(self.shuffle_partitions),
            "spark.default.parallelism": str(self.shuffle_partitions),
            "spark.sql.execution.arrow.pyspark.enabled": "true",
            "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
            "spark.sql.session.timeZone": "UTC",
            "spark.ui.enabled": str(self.ui_enabled).lower(),
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.extensions": DELTA_EXTENSION,
            "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
            "spark.databricks.delta.retentionDurationCheck.enabled": "true",
            # Delta rebuilds a table's state (for every read, and for the txnAppId check of each
            # idempotent commit) in this many tasks; its default of 50 costs seconds per
            # snapshot on a small machine. Scale it with the shuffle partitions.
            "spark.databricks.delta.snapshotPartitions": str(self.shuffle_partitions),
            # A partitioned write keeps up to this many files open per task instead of first
            # sorting its rows by partition (Spark's default, 0, always sorts): a bronze run
            # touches one or two publish dates, and the sort was a third of the JVM's CPU in
            # an ingest (docs/performance.md). Past the limit, Spark sorts the rest.
            "spark.sql.maxConcurrentOutputFileWriters": str(MAX_CONCURRENT_OUTPUT_WRITERS),
        }
        if self.master.startswith("local"):
            # Loopback only: nothing here needs the network, and the host name may not resolve.
            conf["spark.driver.host"] = "127.0.0.1"
            conf["spark.driver.bindAddress"] = "127.0.0.1"
        if self.jars:
            conf["spark.jars"] = ",".join(self.jars)
        return {**conf, **self.extra_conf}


def session_builder(settings: SparkSettings):
    """The configured `SparkSession.Builder` (local or cluster master), before it starts.

    Delta's package is added to `spark.jars.packages` (unless `jars` lists local jars), with
    any packages the settings' `spark.jars.packages` names kept beside it.
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(settings.master).appName(settings.app_name)
    conf = settings.conf()
    for key, value in conf.items():
        builder = builder.config(key, value)
    if not settings.jars:
        from delta import configure_spark_with_delta_pip

        extra = [p.strip() for p in conf.get("spark.jars.packages", "").split(",") if p.strip()]
        builder = configure_spark_with_delta_pip(builder, extra_packages=extra)
    return builder


def build_spark_session(settings: SparkSettings):
    """Returns the process's SparkSession with Delta, creating it on first call.

    Settings such as driver memory only take effect when the JVM starts, so the first call
    in a process decides them; later calls return the same session.
    """
    from pyspark.sql import SparkSession

    if settings.remote:
        return SparkSession.builder.remote(settings.remote).appName(settings.app_name).getOrCreate()
    if settings.master.startswith("local"):
        # Python workers must run this interpreter (the virtualenv), not `python3` on PATH;
        # PySpark reads only this variable when it starts its workers.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = session_builder(settings).getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session


class SparkResource(ConfigurableResource):
    """A SparkSession with Delta Lake, for assets that read and write Delta tables.

    Unset fields fall back to environment variables, then to local defaults (see the
    module docstring), so the same code location runs locally and on a cluster.

    Examples:
        >>> spark = SparkResource(driver_memory="8g", extra_conf={"spark.sql.ansi.enabled": "true"})
        >>> @asset
        ... def rows(spark: SparkResource) -> int:
        ...     return spark.get_session().read.format("delta").load("/data/bronze").count()
    """

    app_name: str = Field(default="jetstream-lakehouse", description="spark.app.name.")
    master: str | None = Field(
        default=None,
        description="spark.master, e.g. 'local[2]' or 'spark://host:7077' "
        "(env JSL_SPARK_MASTER; default local[2]).",
    )
    remote: str | None = Field(
        default=None, description="Spark Connect URL 'sc://host:15002' (env SPARK_REMOTE)."
    )
    driver_memory: str | None = Field(
        default=None, description="spark.driver.memory (env JSL_SPARK_DRIVER_MEMORY; default 4g)."
    )
    shuffle_partitions: int | None = Field(
        default=None,
        description="spark.sql.shuffle.partitions (env JSL_SPARK_SHUFFLE_PARTITIONS; default 4).",
    )
    ui_enabled: bool | None = Field(
        default=None, description="Start the Spark UI (env JSL_SPARK_UI; default false)."
    )
    extra_conf: dict[str, str] = Field(
        default_factory=dict,
        description="Extra Spark conf, over JSL_SPARK_CONF (a JSON object) and the defaults.",
    )
    jars: list[str] = Field(
        default_factory=list,
        description="Local jar paths (Delta's included) instead of resolving Delta from Maven "
        "Central (env JSL_SPARK_JARS, comma-separated).",
    )

    def settings(self) -> SparkSettings:
        """The resolved settings for this resource."""
        return SparkSettings.resolve(
            app_name=self.app_name,
            master=self.master,
            remote=self.remote,
            driver_memory=self.driver_memory,
            shuffle_partitions=self.shuffle_partitions,
            ui_enabled=self.ui_enabled,
            extra_conf=self.extra_conf,
            jars=self.jars,
        )

    def get_session(self):
        """The process's SparkSession with Delta (created on first use)."""
        return build_spark_session(self.settings())
