"""One S3 endpoint's settings, as Spark's S3A connector and pyarrow read them.

Spark reaches `s3a://` tables through Hadoop's S3A connector (`hadoop-aws`, its jars are
among the session's packages: `S3A_PACKAGES`). Where the store is not AWS itself (SeaweedFS,
MinIO, Ceph...), S3A is told the endpoint in Hadoop's keys, which a session takes from Spark
conf prefixed `spark.hadoop.` (`JSL_SPARK_CONF`); `s3a_spark_conf` writes them. The paths
that read a table's `_delta_log` without a JVM (`pipelines/lakehouse/delta_log.py`) open the
same store with pyarrow's `S3FileSystem`, built by `s3_filesystem` from those same keys, so
one setting serves both. Credentials are never in either: both read the AWS chain
(`AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` in the environment, a profile, a role).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlparse

# hadoop-aws matches the Hadoop of the pyspark wheel (3.5.0); it depends on the AWS SDK v2's
# whole `bundle` (686 MB), of which S3A uses the S3 client, its transfer manager and their
# modules (18 MB with what Spark already ships excluded): `S3A_EXCLUDES`.
AWS_SDK_VERSION = "2.35.4"
S3A_PACKAGES = (
    "org.apache.hadoop:hadoop-aws:3.5.0",
    f"software.amazon.awssdk:s3:{AWS_SDK_VERSION}",
    f"software.amazon.awssdk:s3-transfer-manager:{AWS_SDK_VERSION}",
)
# Left out of the resolution: the SDK's bundle, and the libraries Spark's own jars already
# hold in newer versions (netty, Apache HttpClient, commons-codec and -logging, slf4j).
S3A_EXCLUDES = (
    "software.amazon.awssdk:bundle",
    "io.netty:*",
    "org.apache.httpcomponents:*",
    "commons-codec:commons-codec",
    "commons-logging:commons-logging",
    "org.slf4j:slf4j-api",
)
HADOOP_PREFIX = "spark.hadoop."
ENDPOINT = "fs.s3a.endpoint"
REGION = "fs.s3a.endpoint.region"
PATH_STYLE = "fs.s3a.path.style.access"
SSL = "fs.s3a.connection.ssl.enabled"
CREDENTIALS = "fs.s3a.aws.credentials.provider"
ENV_CREDENTIALS = "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider"
DEFAULT_REGION = "us-east-1"


@dataclass(frozen=True)
class S3Endpoint:
    """An S3 API's address, as the S3A connector and pyarrow need it.

    Args:
        url: `http://host:port` or `https://host:port`.
        region: the region requests are signed for (any, for a server that ignores it).
        path_style: buckets in the path (`host/bucket/key`), not the host name: what a
            server on an IP address or loopback serves.
    """

    url: str
    region: str = DEFAULT_REGION
    path_style: bool = True

    @classmethod
    def from_spark_conf(cls, conf: Mapping[str, str]) -> S3Endpoint | None:
        """The endpoint Spark conf sets (`spark.hadoop.fs.s3a.*`, e.g. `JSL_SPARK_CONF`), or
        None when it sets none (AWS's own, found from the region)."""
        url = conf.get(HADOOP_PREFIX + ENDPOINT)
        if not url:
            return None
        if "://" not in url:  # S3A's form `host:port`: TLS unless switched off
            ssl = conf.get(HADOOP_PREFIX + SSL, "true").strip().lower() != "false"
            url = f"{'https' if ssl else 'http'}://{url}"
        return cls(
            url=url,
            region=conf.get(HADOOP_PREFIX + REGION) or DEFAULT_REGION,
            path_style=conf.get(HADOOP_PREFIX + PATH_STYLE, "false").strip().lower() == "true",
        )


def s3a_spark_conf(endpoint: S3Endpoint) -> dict[str, str]:
    """The Spark conf that points S3A at `endpoint`, credentials from the environment.

    Examples:
        >>> s3a_spark_conf(S3Endpoint("http://127.0.0.1:8333"))["spark.hadoop.fs.s3a.endpoint"]
        'http://127.0.0.1:8333'
    """
    secure = urlparse(endpoint.url).scheme == "https"
    return {
        HADOOP_PREFIX + ENDPOINT: endpoint.url,
        HADOOP_PREFIX + REGION: endpoint.region,
        HADOOP_PREFIX + PATH_STYLE: str(endpoint.path_style).lower(),
        HADOOP_PREFIX + SSL: str(secure).lower(),
        # The environment only: without the variables a request fails naming them, instead
        # of waiting on an instance-metadata service that is not there.
        HADOOP_PREFIX + CREDENTIALS: ENV_CREDENTIALS,
    }


def s3_filesystem(endpoint: S3Endpoint | None):
    """A pyarrow `S3FileSystem` on `endpoint` (None: AWS), credentials from the AWS chain."""
    from pyarrow import fs

    if endpoint is None:
        return fs.S3FileSystem()
    parsed = urlparse(endpoint.url)
    return fs.S3FileSystem(
        endpoint_override=parsed.netloc,
        scheme=parsed.scheme or "https",
        region=endpoint.region,
        force_virtual_addressing=not endpoint.path_style,
    )
