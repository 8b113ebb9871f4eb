"""What an asset that stored artifacts shows in the Dagster UI."""

from dagster import MetadataValue

from assets.artifact_metadata import artifact_metadata
from pipelines.lakehouse.artifacts import ARTIFACTS_BUCKET, HTML_TYPE, JSON_TYPE, StoredArtifact

ASSET = "silver/file_deleted"


def test_artifact_metadata_names_each_object_its_size_and_the_fetch_commands():
    artifacts = [
        StoredArtifact(
            ARTIFACTS_BUCKET, f"runs/r1/{ASSET}/manifest.json", 812, "a" * 64, JSON_TYPE
        ),
        StoredArtifact("other", f"runs/r1/{ASSET}/report.html", 90, "b" * 64, HTML_TYPE),
    ]

    metadata = artifact_metadata(artifacts)

    assert metadata["artifact/manifest.json"] == MetadataValue.text(
        f"lakehouse-artifacts/runs/r1/{ASSET}/manifest.json"
    )
    assert metadata["artifact/manifest.json/bytes"] == MetadataValue.int(812)
    assert metadata["artifact/report.html"] == MetadataValue.text(
        f"other/runs/r1/{ASSET}/report.html"
    )
    assert metadata["artifacts_fetch"] == MetadataValue.text(
        f"jsl artifacts get runs/r1/{ASSET}/manifest.json -o manifest.json\n"
        f"jsl artifacts get runs/r1/{ASSET}/report.html --bucket other -o report.html"
    )
    assert artifact_metadata([]) == {}
