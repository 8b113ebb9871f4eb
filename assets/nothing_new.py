"""A stage's finding of nothing new (`pipelines.lakehouse.nothing_new`) as Dagster metadata."""

from dagster import MetadataValue

from pipelines.lakehouse.nothing_new import NothingNew


def finding_metadata(finding: NothingNew) -> dict[str, MetadataValue]:
    """`nothing_new: true` and the positions the stage compared, each under its own name."""
    metadata = {"nothing_new": MetadataValue.bool(True)}
    for name, value in finding.compared:
        if isinstance(value, bool) or not isinstance(value, int):
            if value is not None:
                metadata[name] = MetadataValue.text(str(value))
        else:
            metadata[name] = MetadataValue.int(value)
    return metadata
