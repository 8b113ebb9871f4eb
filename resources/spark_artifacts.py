"""What a Spark session ships besides its settings: Delta's jars and the project's code.

- **Jars, resolved once.** `jsl setup` resolves Delta's Maven packages and S3A's (`hadoop-aws`
  and the AWS SDK modules it uses, for `s3a://` tables), and any extra ones in
  `spark.jars.packages`, with Spark's Ivy, and copies the jar files into a cache
  directory, one subdirectory per package list. Sessions whose package list has a complete
  cache entry get the files through `spark.jars` (the driver serves them to the executors),
  so no session resolves anything from Maven at run time. Without an entry, the session
  falls back to `spark.jars.packages` (Ivy, at start-up).
- **Code, shipped.** `build_code_zip` zips the project's packages (`pipelines`, `resources`,
  `assets`, `sensors`: the `.py` files) into a file named by its content hash; the session
  adds it with `SparkContext.addPyFile` (classic) or `addArtifacts(..., pyfile=True)`
  (Spark Connect), so Python workers on other hosts import the driver's code. The workers
  still need the third-party packages (pyspark, pyarrow, nats-py) in their Python.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[1]
CODE_PACKAGES = ("pipelines", "resources", "assets", "sensors")
DEFAULT_JARS_DIR = Path.home() / ".cache" / "jetstream-lakehouse" / "spark-jars"
PACKAGES_FILE = "packages.txt"  # in each cache entry: the package list it was resolved for


def delta_package() -> str:
    """Delta's Maven coordinate for the installed delta-spark and pyspark, e.g.
    'io.delta:delta-spark_4.2_2.13:4.4.0' (what `configure_spark_with_delta_pip` adds)."""
    import pyspark

    spark_minor = ".".join(pyspark.__version__.split(".")[:2])
    return f"io.delta:delta-spark_{spark_minor}_2.13:{importlib.metadata.version('delta-spark')}"


def packages_with_delta(extra: str | Sequence[str] = ()) -> tuple[str, ...]:
    """Delta's package and S3A's (`s3a://` tables: `resources/object_store/s3.py`), followed
    by `extra` (a comma list or a sequence), without repeats."""
    from resources.object_store.s3 import S3A_PACKAGES

    if isinstance(extra, str):
        extra = extra.split(",")
    found = [delta_package()]
    for package in (p.strip() for p in (*S3A_PACKAGES, *extra)):
        if package and package not in found:
            found.append(package)
    return tuple(found)


def cache_entry(jars_dir: str | Path, packages: Sequence[str]) -> Path:
    """The cache directory for `packages` (named by a hash of the list)."""
    digest = hashlib.sha256(",".join(packages).encode()).hexdigest()[:16]
    return Path(jars_dir) / digest


def cached_jars(jars_dir: str | Path, packages: Sequence[str]) -> tuple[str, ...] | None:
    """The cached jar files resolved for exactly `packages`, or None (not resolved yet)."""
    entry = cache_entry(jars_dir, packages)
    try:
        recorded = (entry / PACKAGES_FILE).read_text().split()
    except OSError:
        return None
    if recorded != list(packages):
        return None
    jars = tuple(sorted(str(p) for p in entry.glob("*.jar")))
    return jars or None


def store_jars(jars_dir: str | Path, packages: Sequence[str], jars: Sequence[str]) -> Path:
    """Copies the resolved `jars` (paths or file: URIs) into the cache entry for `packages`.

    The entry is written in a temporary directory and renamed into place, so a half-copied
    entry is never used. Returns the entry's directory.

    Raises:
        FileNotFoundError: a jar is missing (name it, and the packages it was resolved for).
    """
    entry = cache_entry(jars_dir, packages)
    entry.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{entry.name}-", dir=entry.parent))
    try:
        for jar in jars:
            source = Path(jar.removeprefix("file://").removeprefix("file:"))
            if not source.is_file():
                raise FileNotFoundError(
                    f"resolved jar {str(source)!r} (for {', '.join(packages)}) does not exist; "
                    "run `jsl setup` again"
                )
            shutil.copy2(source, staging / source.name)
        (staging / PACKAGES_FILE).write_text("\n".join(packages) + "\n")
        if entry.exists():
            shutil.rmtree(entry)
        staging.rename(entry)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return entry


def build_code_zip(out_dir: str | Path, project_dir: Path = PROJECT_DIR) -> Path:
    """Zips the project's packages (their `.py` files) for the executors' Python path.

    The file is named by a hash of its content (`jetstream_lakehouse-<hash>.zip`), so a
    changed project gets a new name (Spark refuses to add a different file under a name it
    already serves) and an unchanged one is built once.

    Returns:
        The zip's path in `out_dir`.
    """
    files = sorted(
        path
        for package in CODE_PACKAGES
        for path in (project_dir / package).rglob("*.py")
        if "__pycache__" not in path.parts
    )
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(project_dir)).encode())
        digest.update(path.read_bytes())
    target = Path(out_dir) / f"jetstream_lakehouse-{digest.hexdigest()[:16]}.zip"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, staging = tempfile.mkstemp(suffix=".zip", dir=target.parent)
    os.close(fd)
    with zipfile.ZipFile(staging, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            archive.write(path, str(path.relative_to(project_dir)))
    os.replace(staging, target)
    return target
