from pathlib import Path

from pipelines.settings import DEFAULT_NATS_URL, PROJECT_DIR, Settings


def test_settings_default_to_the_project_data_dir_and_local_nats():
    settings = Settings.from_env({})
    assert settings.data_dir == PROJECT_DIR / ".data"
    assert settings.lakehouse_root == str(PROJECT_DIR / ".data" / "lakehouse")
    assert settings.nats_url == DEFAULT_NATS_URL
    assert settings.nats_store_dir == PROJECT_DIR / ".data" / "nats"


def test_settings_follow_the_environment(tmp_path: Path):
    settings = Settings.from_env(
        {
            "LAKEHOUSE_DATA_DIR": str(tmp_path),
            "LAKEHOUSE_ROOT": "s3a://bucket/lake",
            "NATS_URL": "nats://a:4222,nats://b:4222",
        }
    )
    assert settings.data_dir == tmp_path
    assert settings.lakehouse_root == "s3a://bucket/lake"
    assert settings.nats_url == "nats://a:4222,nats://b:4222"
    assert settings.dagster_home == tmp_path / "dagster_home"
