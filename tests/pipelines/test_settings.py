from pathlib import Path

import pytest

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


def test_nats_replicas_are_undeclared_unless_jsl_nats_replicas_is_set():
    assert Settings.from_env({}).nats_replicas is None
    assert Settings.from_env({"JSL_NATS_REPLICAS": "3"}).nats_replicas == 3


@pytest.mark.parametrize("value", ["0", "6", "three", "-1"])
def test_jsl_nats_replicas_outside_one_to_five_is_refused_naming_the_variable(value):
    with pytest.raises(ValueError, match="JSL_NATS_REPLICAS must be a number from 1 to 5"):
        Settings.from_env({"JSL_NATS_REPLICAS": value})


def test_the_automation_interval_is_five_seconds_unless_jsl_automation_interval_is_set():
    assert Settings.from_env({}).automation_interval_seconds == 5
    assert (
        Settings.from_env({"JSL_AUTOMATION_INTERVAL_SECONDS": "30"}).automation_interval_seconds
        == 30
    )


@pytest.mark.parametrize("value", ["0", "-5", "5s", "2.5"])
def test_a_bad_automation_interval_is_refused_naming_the_variable(value):
    with pytest.raises(ValueError, match="JSL_AUTOMATION_INTERVAL_SECONDS must be a whole number"):
        Settings.from_env({"JSL_AUTOMATION_INTERVAL_SECONDS": value})
