"""The one SparkSession factory, and `SparkResource` that exposes it to Dagster.

Local defaults are explicit and sized for a small machine (2 cores, 24 GiB): Spark's own
1 GiB driver heap runs out on a few hundred MB of payloads, so the driver gets 4 GiB.
Every setting can be overridden by resource config, and when config leaves it unset, by
an environment variable:

| setting            | env var                        | default                          |
|--------------------|--------------------------------|----------------------------------|
| master             | `JSL_SPARK_MASTER`             | `local[2]`                       |
| remote (Connect)   | `SPARK_REMOTE`                 | unset                            |
| driver_memory      | `JSL_SPARK_DRIVER_MEMORY`      | `4g`                             |
| shuffle_partitions | `JSL_SPARK_SHUFFLE_PARTITIONS` | `4`                              |
| ui_enabled         | `JSL_SPARK_UI`                 | `false`                          |
| extra_conf         | `JSL_SPARK_CONF` (JSON object) | `{}`                             |
| jars               | `JSL_SPARK_JARS` (comma list)  | Delta's: jar cache, else Maven   |
| jars_dir           | `JSL_SPARK_JARS_DIR`           | `~/.cache/jetstream-lakehouse/spark-jars` |
| python             | `JSL_SPARK_PYTHON`, `PYSPARK_PYTHON` | this interpreter           |
| driver_host        | `JSL_SPARK_DRIVER_HOST`        | `127.0.0.1` for local, loopback masters |
| ship_code          | `JSL_SPARK_SHIP_CODE`          | `false`                          |
| table_root         | `LAKEHOUSE_ROOT`               | unset (not checked)              |
| shared_filesystem  | `JSL_SPARK_SHARED_FS`          | `false`                          |
| data_dir           | `LAKEHOUSE_DATA_DIR`           | `.data` in the dg project's root |

Spark's own local state goes to the data directory, never the working directory: the
warehouse of managed tables (`spark.sql.warehouse.dir` = `<data_dir>/spark-warehouse`) and
Derby's home, where a Hive metastore keeps `metastore_db/` and `derby.log`
(`-Dderby.system.home=<data_dir>/spark-metastore`, added to the driver's
`spark.driver.extraJavaOptions`: those of `extra_conf`, else of `spark-defaults.conf`, are
kept). A warehouse set in `extra_conf` or `spark-defaults.conf`, or a Derby home in the
options, wins. The Spark Connect server of `jsl dev` is started with the same settings.

Delta Lake's jars: `jsl setup` resolves Delta's package and S3A's (`hadoop-aws` and the AWS
SDK modules it uses, for `s3a://` tables: `resources/object_store/s3.py`), and any extra ones
in `spark.jars.packages` of `extra_conf` / `JSL_SPARK_CONF`, once into `jars_dir`; sessions
whose package list is in that cache load the files (`spark.jars`, served by the driver to the
executors) and resolve nothing at run time. Otherwise Spark resolves them from Maven Central
at start-up (`spark.jars.packages` less `spark.jars.excludes`, cached by Ivy under
`~/.ivy2.5.2`), unless `jars` lists local jar files. See `resources/spark_artifacts.py`.

On a cluster master (`spark://host:7077`, ...), the executors' Python workers run `python`
(the same path must exist on every worker: a virtualenv at the same place, or an image), and
connect back to the driver at `driver_host`. They import the project's code: install it there,
or set `ship_code` to send a zip of it with the session. A table root on the driver's local
disk is refused on a cluster master, since executors on other hosts write elsewhere; set
`shared_filesystem` when every worker sees the same directory (NFS, or all on one host).

Over Spark Connect (`remote`), the server has its own master, jars and Python: the session
only checks the table root against the server's master and ships the code if asked.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from dagster import ConfigurableResource
from pydantic import Field

from resources.data_dir import default_data_dir
from resources.object_store.s3 import S3A_EXCLUDES
from resources.spark_artifacts import (
    DEFAULT_JARS_DIR,
    build_code_zip,
    cached_jars,
    packages_with_delta,
)

log = logging.getLogger(__name__)

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"

DEFAULT_MASTER = "local[2]"
DEFAULT_DRIVER_MEMORY = "4g"
DEFAULT_SHUFFLE_PARTITIONS = 4
MAX_CONCURRENT_OUTPUT_WRITERS = 8
CODEGEN_CACHE_ENTRIES = 2000
LOOPBACK = "127.0.0.1"
CODE_DIR = Path.home() / ".cache" / "jetstream-lakehouse" / "code"
WAREHOUSE_DIR = "spark-warehouse"  # under the data directory
METASTORE_DIR = "spark-metastore"  # Derby's home under the data directory
WAREHOUSE_KEY = "spark.sql.warehouse.dir"
JARS_EXCLUDES = "spark.jars.excludes"
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
LISTING_PARALLELISM = "spark.sql.sources.parallelPartitionDiscovery.parallelism"
DERBY_HOME = "-Dderby.system.home="
# A line of a Java properties file such as spark-defaults.conf: `key value`, `key=value`.
PROPERTY = re.compile(r"(?P<key>[^\s=:]+)\s*[=:]?\s*(?P<value>.*)")


class TableRootNotSharedError(ValueError):
    """The table root is a directory on this host, but the session's executors run elsewhere."""

    def __init__(self, message: str, *, root: str, master: str) -> None:
        super().__init__(message)
        self.root = root
        self.master = master


def _env_bool(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


def is_local_master(master: str) -> bool:
    """Whether `master` runs the executors inside the driver's JVM (`local`, `local[N]`, ...)."""
    return master.startswith("local")


def local_cores(master: str) -> int | None:
    """The task slots of a local master (`local` 1, `local[N]` and `local[N,F]` N, `local[*]`
    and `local[*,F]` this machine's cores); None for any other master."""
    found = re.fullmatch(r"local(?:\[\s*(\*|\d+)\s*(?:,\s*\d+\s*)?\])?", master.strip())
    if found is None:
        return None
    slots = found.group(1) or "1"
    return (os.cpu_count() or 1) if slots == "*" else int(slots)


def is_local_path(root: str) -> bool:
    """Whether `root` is a path on this host's filesystem (no scheme, or `file:`)."""
    return urlparse(root).scheme in ("", "file")


def default_conf_dir(environ: Mapping[str, str]) -> str | None:
    """The folder whose `spark-defaults.conf` `spark-submit` reads: `$SPARK_CONF_DIR`, else
    `$SPARK_HOME/conf`, else the pyspark package's `conf` (None without pyspark)."""
    if environ.get("SPARK_CONF_DIR"):
        return environ["SPARK_CONF_DIR"]
    if environ.get("SPARK_HOME"):
        return str(Path(environ["SPARK_HOME"]) / "conf")
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(Path(next(iter(spec.submodule_search_locations))) / "conf")


def spark_defaults(conf_dir: str | None) -> dict[str, str]:
    """The properties of `<conf_dir>/spark-defaults.conf` ({} without one), read as
    `spark-submit` reads them: `key value` or `key=value` a line, `#` comments."""
    if conf_dir is None:
        return {}
    path = Path(conf_dir) / "spark-defaults.conf"
    if not path.is_file():
        return {}
    properties = {}
    for line in path.read_text(errors="replace").splitlines():
        match = PROPERTY.match(line.strip())
        if match and not line.strip().startswith(("#", "!")):
            properties[match["key"]] = match["value"].strip()
    return properties


def with_derby_home(options: str, home: Path) -> str:
    """Java options `options` with `-Dderby.system.home=<home>` added, unless they set one."""
    if DERBY_HOME in options:
        return options
    option = f"{DERBY_HOME}{home}"
    if any(char.isspace() or char in "\"'" for char in str(home)):
        option = '"' + option.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"{options} {option}".strip()


def default_driver_host(master: str) -> str | None:
    """`127.0.0.1` for local masters and masters on loopback; None (Spark's choice, the
    host's address) for any other master."""
    if is_local_master(master):
        return LOOPBACK
    hosts = {urlparse(f"spark://{part}").hostname for part in master.split("://", 1)[-1].split(",")}
    if hosts and hosts <= {"127.0.0.1", "localhost", "::1"}:
        return LOOPBACK
    return None


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
    jars_dir: str = str(DEFAULT_JARS_DIR)
    python: str = sys.executable
    driver_host: str | None = LOOPBACK
    ship_code: bool = False
    table_root: str | None = None
    shared_filesystem: bool = False
    data_dir: str = ""  # "": the default data directory, found when the conf is built
    conf_dir: str | None = None  # the folder of the spark-defaults.conf spark-submit reads

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
        jars_dir: str | None = None,
        python: str | None = None,
        driver_host: str | None = None,
        ship_code: bool | None = None,
        table_root: str | None = None,
        shared_filesystem: bool | None = None,
        data_dir: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> SparkSettings:
        """Resolves each setting: the explicit value, else its env var, else the default.

        `extra_conf` from config is layered over `JSL_SPARK_CONF`. The data directory's
        default is `LAKEHOUSE_DATA_DIR`, else `.data` in the root of the dg project of the
        working directory, else in the working directory (`resources.lakehouse`).

        Raises:
            ValueError: `JSL_SPARK_CONF` is not a JSON object.
        """
        env = os.environ if environ is None else environ
        env_conf = json.loads(env["JSL_SPARK_CONF"]) if env.get("JSL_SPARK_CONF") else {}
        if not isinstance(env_conf, dict):
            raise ValueError("JSL_SPARK_CONF must be a JSON object of Spark conf keys to values")
        env_jars = [j.strip() for j in env.get("JSL_SPARK_JARS", "").split(",") if j.strip()]
        partitions = shuffle_partitions or env.get("JSL_SPARK_SHUFFLE_PARTITIONS")
        ui = ui_enabled if ui_enabled is not None else _env_bool(env.get("JSL_SPARK_UI", "false"))
        resolved_master = master or env.get("JSL_SPARK_MASTER") or DEFAULT_MASTER
        ship = ship_code if ship_code is not None else _env_bool(env.get("JSL_SPARK_SHIP_CODE", ""))
        shared = (
            shared_filesystem
            if shared_filesystem is not None
            else _env_bool(env.get("JSL_SPARK_SHARED_FS", ""))
        )
        return cls(
            app_name=app_name,
            master=resolved_master,
            remote=remote or env.get("SPARK_REMOTE") or None,
            driver_memory=driver_memory
            or env.get("JSL_SPARK_DRIVER_MEMORY")
            or DEFAULT_DRIVER_MEMORY,
            shuffle_partitions=int(partitions or DEFAULT_SHUFFLE_PARTITIONS),
            ui_enabled=ui,
            extra_conf={**{k: str(v) for k, v in env_conf.items()}, **(extra_conf or {})},
            jars=tuple(jars or env_jars),
            jars_dir=jars_dir or env.get("JSL_SPARK_JARS_DIR") or str(DEFAULT_JARS_DIR),
            python=python
            or env.get("JSL_SPARK_PYTHON")
            or env.get("PYSPARK_PYTHON")
            or sys.executable,
            driver_host=driver_host
            or env.get("JSL_SPARK_DRIVER_HOST")
            or default_driver_host(resolved_master),
            ship_code=ship,
            table_root=table_root or env.get("LAKEHOUSE_ROOT") or None,
            shared_filesystem=shared,
            data_dir=str(Path(data_dir).resolve() if data_dir else default_data_dir(env)),
            conf_dir=default_conf_dir(env),
        )

    def packages(self) -> tuple[str, ...]:
        """The Maven packages the session needs: Delta's and S3A's, then those `extra_conf`
        names."""
        return packages_with_delta(self.extra_conf.get("spark.jars.packages", ""))

    def excludes(self) -> tuple[str, ...]:
        """What Ivy leaves out of the packages' dependencies: the AWS SDK's bundle and what
        Spark's jars already hold (`S3A_EXCLUDES`), then those `extra_conf` names."""
        extra = self.extra_conf.get(JARS_EXCLUDES, "").split(",")
        return tuple(dict.fromkeys([*S3A_EXCLUDES, *(e.strip() for e in extra if e.strip())]))

    @property
    def snapshot_partitions(self) -> int:
        """The tasks Delta rebuilds a table's state in: the shuffle partitions, at most the
        task slots of a local master."""
        slots = local_cores(self.master)
        return self.shuffle_partitions if slots is None else min(self.shuffle_partitions, slots)

    def conf(self) -> dict[str, str]:
        """Every Spark conf key this factory sets, `extra_conf` included (it wins).

        Jars: `spark.jars` when `jars` lists local files, else `spark.jars.packages` with
        Delta's package and the extra ones (`session_builder` swaps these for cached jars).
        """
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
            # Delta rebuilds a table's state in this many partitions, and plans each read of a
            # version the session has not seen yet (every read after a commit, a MERGE's read
            # of its target, the txnAppId check of an idempotent commit) with jobs over it; its
            # default of 50 costs seconds per snapshot on a small machine. The shuffle
            # partitions, but on a local master no more than its task slots (one wave): a warm
            # silver batch of 3,000 rows took a median 10.0 s with 4 on `local[2]`, 7.0 s with
            # 2 and with 1 (docs/performance.md).
            "spark.databricks.delta.snapshotPartitions": str(self.snapshot_partitions),
            # VACUUM lists the table's directories in this many tasks, then pulls them to the
            # driver one partition per job; Spark's default of 10,000 made VACUUM of a
            # five-file table take 40-60 s on two cores, 3-5 s with 8 tasks (Delta's maintainers
            # advise lowering it on small clusters: delta-io/delta#220, #395). Scale it with
            # the shuffle partitions.
            LISTING_PARALLELISM: str(self.shuffle_partitions),
            # A partitioned write keeps up to this many files open per task instead of first
            # sorting its rows by partition (Spark's default, 0, always sorts): a bronze run
            # touches one or two publish dates, and the sort was a third of the JVM's CPU in
            # an ingest (bench/HISTORY.md, runs R7-R10). Past the limit, Spark sorts the rest.
            "spark.sql.maxConcurrentOutputFileWriters": str(MAX_CONCURRENT_OUTPUT_WRITERS),
            # The classes Spark generates and compiles for operators and expressions, kept
            # for reuse by every later query of the JVM (Spark's default keeps 100). A
            # silver run makes about ninety small queries, several classes each: with 2,000
            # the JVM spent 7.4% of its samples compiling instead of 11.5%, and warm silver
            # runs were ~15% shorter, most telling on a long-lived Spark Connect server,
            # whose JVM serves run after run (bench/HISTORY.md, change 7).
            "spark.sql.codegen.cache.maxEntries": str(CODEGEN_CACHE_ENTRIES),
            # A contract of thousands of JSON paths builds silver's plan with tens of thousands
            # of Column calls (15,480 for two GitHub webhook schemas). PySpark's DataFrame
            # debugging records the Python call site of each call in the JVM (ten more round
            # trips and a stack walk per call), so that Spark's error messages can name the
            # Python line of a failing expression (a run's Spark failure is one line naming
            # the stage and the log file: resources/spark_errors.py); and the optimizer's
            # constraint propagation compares each of the plan's predicates with every
            # other. Both off: the silver step on those two schemas (722 paths) took 30-37 s
            # instead of 63-71 s; a small contract's step got no slower (docs/performance.md,
            # "Large schemas"). The query results are the same.
            "spark.python.sql.dataFrameDebugging.enabled": "false",
            "spark.sql.constraintPropagation.enabled": "false",
            # The executors' Python workers (any master): this virtualenv's interpreter, not
            # `python3` from PATH, which lacks the project and its packages.
            "spark.pyspark.python": self.python,
        }
        if self.driver_host:
            conf["spark.driver.host"] = self.driver_host
            if self.driver_host == LOOPBACK:
                # Loopback only: nothing here needs the network, and the host name may not
                # resolve.
                conf["spark.driver.bindAddress"] = LOOPBACK
        conf = {**conf, **self.extra_conf}
        conf.update(self.local_state_conf(conf))
        if self.jars:
            conf["spark.jars"] = ",".join(self.jars)
            conf.pop("spark.jars.packages", None)
        else:
            conf["spark.jars.packages"] = ",".join(self.packages())
            conf[JARS_EXCLUDES] = ",".join(self.excludes())
        return conf

    def local_state_conf(self, conf: Mapping[str, str]) -> dict[str, str]:
        """The warehouse and Derby's home under the data directory, so that no
        `spark-warehouse/`, `metastore_db/` or `derby.log` lands in the working directory.

        A warehouse in `conf` (`extra_conf`) or `spark-defaults.conf` is left alone; the Derby
        option is added to the driver's Java options of `conf`, else of `spark-defaults.conf`
        (a `--conf` replaces the file's value, so they are carried over), unless they set one.
        """
        data_dir = Path(self.data_dir or default_data_dir())
        defaults = spark_defaults(self.conf_dir)
        local = {}
        if WAREHOUSE_KEY not in conf and WAREHOUSE_KEY not in defaults:
            # file: (not a bare path, which a cluster's default filesystem, e.g. HDFS, would
            # take), unencoded: Hadoop's Path parses the string itself.
            local[WAREHOUSE_KEY] = f"file:{data_dir / WAREHOUSE_DIR}"
        options = conf.get(DRIVER_JAVA_OPTIONS, defaults.get(DRIVER_JAVA_OPTIONS, ""))
        local[DRIVER_JAVA_OPTIONS] = with_derby_home(options, data_dir / METASTORE_DIR)
        return local

    def check_table_root(self, master: str) -> None:
        """Refuses a table root on this host's disk when `master`'s executors run elsewhere.

        Raises:
            TableRootNotSharedError: `table_root` is a local path, `master` is not local, and
                `shared_filesystem` is off.
        """
        root = self.table_root
        if root is None or self.shared_filesystem or is_local_master(master):
            return
        if is_local_path(root):
            raise TableRootNotSharedError(
                f"the Delta tables' root {root!r} is a directory on this host, but Spark master "
                f"{master!r} runs executors that may be on other hosts, where the tables would "
                "be written to their own disks. Set LAKEHOUSE_ROOT to a URI every worker can "
                "reach (s3a://, abfss://, hdfs://), or, if every worker sees this directory "
                "at the same path (NFS, or all workers on this host), set JSL_SPARK_SHARED_FS=1 "
                "(SparkResource.shared_filesystem=True)",
                root=root,
                master=master,
            )


def resolved_conf(settings: SparkSettings) -> dict[str, str]:
    """`settings.conf()` with Delta's package swapped for the cached jars when `jsl setup`
    resolved exactly that list (no `jars` given), so nothing is resolved at start-up."""
    conf = settings.conf()
    if not settings.jars:
        cached = cached_jars(settings.jars_dir, settings.packages())
        if cached:
            conf.pop("spark.jars.packages")
            conf.pop(JARS_EXCLUDES)
            conf["spark.jars"] = ",".join(cached)
        else:
            log.info(
                "no jars cached in %s for %s: Spark resolves them from Maven Central "
                "(run `jsl setup` to resolve them once)",
                settings.jars_dir,
                ", ".join(settings.packages()),
            )
    return conf


def session_builder(settings: SparkSettings):
    """The configured classic `SparkSession.Builder`, before it starts.

    With no `jars` given, Delta's package and the extra ones come from the jar cache when
    `jsl setup` resolved exactly that list (`spark.jars`, nothing resolved at start-up), else
    from Maven Central (`spark.jars.packages`).
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(settings.master).appName(settings.app_name)
    for key, value in resolved_conf(settings).items():
        builder = builder.config(key, value)
    return builder


_shipped: set[tuple[int, str]] = set()  # (id of the session, zip name) already added


def ship_code(session, out_dir: Path = CODE_DIR) -> Path:
    """Adds a zip of the project's packages to `session` for its executors' Python workers.

    Classic sessions use `SparkContext.addPyFile`; Spark Connect sessions
    `addArtifacts(..., pyfile=True)`. Each zip (named by its content's hash) is added once
    per session. Returns the zip's path.
    """
    code = build_code_zip(out_dir)
    key = (id(session), code.name)
    if key in _shipped:
        return code
    if type(session).__module__.startswith("pyspark.sql.connect"):
        session.addArtifacts(str(code), pyfile=True)
    else:
        session.sparkContext.addPyFile(str(code))
    _shipped.add(key)
    return code


def build_spark_session(settings: SparkSettings):
    """Returns the process's SparkSession with Delta, creating it on first call.

    Settings such as driver memory only take effect when the JVM starts, so the first call
    in a process decides them; later calls return the same session.

    Raises:
        TableRootNotSharedError: the table root is local and the executors may not see it
            (checked before a classic session starts; over Connect, against the server's
            master).
    """
    from pyspark.sql import SparkSession

    if settings.remote:
        # Delta's commit conflicts (ConcurrentAppendException, ...) arrive as Delta's
        # exception classes over Connect only once these are registered.
        import delta.connect.exceptions  # noqa: F401

        session = (
            SparkSession.builder.remote(settings.remote).appName(settings.app_name).getOrCreate()
        )
        settings.check_table_root(session.conf.get("spark.master", "unknown"))
    else:
        settings.check_table_root(settings.master)
        # PySpark hands this variable to the executors as their Python (any master).
        os.environ["PYSPARK_PYTHON"] = settings.python
        session = session_builder(settings).getOrCreate()
        session.sparkContext.setLogLevel("WARN")
    if settings.ship_code:
        ship_code(session)
    return session


class SparkResource(ConfigurableResource):
    """A SparkSession with Delta Lake, for assets that read and write Delta tables.

    Unset fields fall back to environment variables, then to local defaults (see the
    module docstring), so the same code location runs locally, on a cluster master
    (`spark://...`) and over Spark Connect (`remote`, or `SPARK_REMOTE`).

    Examples:
        >>> spark = SparkResource(driver_memory="8g", extra_conf={"spark.sql.ansi.enabled": "true"})
        >>> on_cluster = SparkResource(master="spark://10.0.0.5:7077", ship_code=True,
        ...                            table_root="s3a://lake/tables")
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
        description="Local jar paths (Delta's included) instead of Delta's package from the jar "
        "cache or Maven Central (env JSL_SPARK_JARS, comma-separated).",
    )
    jars_dir: str | None = Field(
        default=None,
        description="Where `jsl setup` caches the resolved jars (env JSL_SPARK_JARS_DIR; "
        "default ~/.cache/jetstream-lakehouse/spark-jars).",
    )
    python: str | None = Field(
        default=None,
        description="The executors' Python, spark.pyspark.python, for any master (env "
        "JSL_SPARK_PYTHON, then PYSPARK_PYTHON; default this interpreter). Must exist at this "
        "path on every worker.",
    )
    driver_host: str | None = Field(
        default=None,
        description="spark.driver.host, the address executors reach the driver at (env "
        "JSL_SPARK_DRIVER_HOST; default 127.0.0.1 for local and loopback masters, else Spark's).",
    )
    ship_code: bool | None = Field(
        default=None,
        description="Send a zip of the project's packages to the executors with the session "
        "(addPyFile / Connect addArtifacts), for workers without the project installed (env "
        "JSL_SPARK_SHIP_CODE; default false).",
    )
    table_root: str | None = Field(
        default=None,
        description="The Delta tables' root (env LAKEHOUSE_ROOT), checked against the master: a "
        "local directory is refused on a cluster master unless shared_filesystem is set.",
    )
    shared_filesystem: bool | None = Field(
        default=None,
        description="Every worker sees the local table root at the same path (NFS, or all "
        "workers on this host) (env JSL_SPARK_SHARED_FS; default false).",
    )
    data_dir: str | None = Field(
        default=None,
        description="The local state's folder, which holds Spark's warehouse and Derby's home "
        "(env LAKEHOUSE_DATA_DIR; default .data in the dg project's root, else in the working "
        "directory).",
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
            jars_dir=self.jars_dir,
            python=self.python,
            driver_host=self.driver_host,
            ship_code=self.ship_code,
            table_root=self.table_root,
            shared_filesystem=self.shared_filesystem,
            data_dir=self.data_dir,
        )

    def get_session(self):
        """The process's SparkSession with Delta (created on first use)."""
        return build_spark_session(self.settings())
