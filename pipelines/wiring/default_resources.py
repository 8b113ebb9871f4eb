"""The resources every run of this project needs, configured from the environment.

One set per process (`functools.cache`), so that Definitions built separately (the code
location's, each declared stream's component) merge: Dagster merges resources under one key
only when they are the same object.
"""

from __future__ import annotations

import functools
from typing import Any

from pipelines.settings import Settings
from resources.jetstream import JetStreamResource
from resources.lakehouse import LakehouseResource
from resources.quality import DataQualityResource
from resources.spark import SparkResource


@functools.cache
def default_resources() -> dict[str, Any]:
    """`jetstream` (the nats CLI's variables: `NATS_URL`, `NATS_CREDS`, ...), `spark` and
    `lakehouse` (`LAKEHOUSE_ROOT`, `LAKEHOUSE_DATA_DIR`, `JSL_SPARK_*`), and `quality` (Great
    Expectations).

    The data directory (`pipelines.settings`: `.data` in the dg project's root by default)
    holds Spark's warehouse and metastore, and each run's first log line names it, with the
    tables' root and the Dagster home (`LakehouseResource.setup_for_execution`).

    Raises:
        InvalidArgumentError: the environment's NATS variables contradict each other.
        ValueError: a setting of `pipelines.settings` is invalid.
    """
    settings = Settings.from_env()
    return {
        "jetstream": JetStreamResource.from_env(),
        "spark": SparkResource(table_root=settings.lakehouse_root, data_dir=str(settings.data_dir)),
        "lakehouse": LakehouseResource(
            root=settings.lakehouse_root, data_dir=str(settings.data_dir)
        ),
        "quality": DataQualityResource(),
    }
