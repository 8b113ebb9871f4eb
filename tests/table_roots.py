"""Table roots that tests join with `/`, on the local disk or in object storage.

`UriRoot` is an `s3a://` root that joins like a `Path` (`root / "bronze/orders"`) and is a
`str` everywhere else, so tests written against `tmp_path` run on the S3 server unchanged.
"""

from __future__ import annotations

from pathlib import Path


class UriRoot(str):
    """A URI (`s3a://bucket/prefix`) that `/` joins as a `Path` would."""

    def __truediv__(self, name: str | Path) -> UriRoot:
        return UriRoot(f"{self.rstrip('/')}/{str(name).strip('/')}")


def root_of(text: str) -> Path | UriRoot:
    """`text` as a table root: a `UriRoot` for a URI, else a `Path`."""
    return UriRoot(text) if "://" in text else Path(text)
