"""Settings: one class for every FAULTGRAPH_* variable, flags over environment, clear errors."""


import pytest
from typer.testing import CliRunner

from faultgraph.service import client, store
from faultgraph.service.cli import app
from faultgraph.service.config import ClientSettings, Settings, settings_table
from faultgraph.service.remediation.models import RemediationConfig


def test_environment_names_and_flags(monkeypatch):
    monkeypatch.setenv("FAULTGRAPH_DB", "duckdb:///from-env.duckdb")
    monkeypatch.setenv("FAULTGRAPH_WRITER_QUEUE", "7")
    monkeypatch.setenv("FAULTGRAPH_HEARTBEAT_TIMEOUT", "12.5")
    settings = Settings()
    assert (settings.db_url, settings.writer_queue_batches, settings.heartbeat_timeout_s) == (
        "duckdb:///from-env.duckdb", 7, 12.5)
    assert Settings(db_url="duckdb:///flag.duckdb").db_url == "duckdb:///flag.duckdb"


def test_a_malformed_variable_is_named(monkeypatch):
    monkeypatch.setenv("FAULTGRAPH_MAX_BATCH_EVENTS", "lots")
    with pytest.raises(ValueError, match="FAULTGRAPH_MAX_BATCH_EVENTS"):
        Settings()
    cli = CliRunner().invoke(app, ["serve", "--port", "1"])
    assert cli.exit_code == 2 and "invalid setting: FAULTGRAPH_MAX_BATCH_EVENTS" in cli.stderr, cli.stderr


def test_every_setting_is_documented():
    table = settings_table()
    fields = Settings.model_fields | ClientSettings.model_fields
    for name, field in fields.items():
        assert field.description, f"{name} has no description"
    assert table.count("\n| `FAULTGRAPH_") == len(Settings.model_fields) + len(ClientSettings.model_fields)


def test_duckdb_limits_are_settings_a_real_store_runs_with(monkeypatch, tmp_path):
    monkeypatch.setenv("FAULTGRAPH_DUCKDB_MEMORY", "256MB")
    monkeypatch.setenv("FAULTGRAPH_DUCKDB_THREADS", "1")
    engine = store.make_engine(f"duckdb:///{tmp_path / 'limits.duckdb'}")
    try:
        with engine.connect() as conn:
            threads = conn.exec_driver_sql("SELECT current_setting('threads')").scalar()
            memory = conn.exec_driver_sql("SELECT current_setting('memory_limit')").scalar()
    finally:
        engine.dispose()
    assert int(threads) == 1
    assert memory.replace(" ", "") in ("244.1MiB", "256.0MB", "256MB"), memory
    explicit = Settings(duckdb_threads=3)
    assert store.duckdb_config(explicit) == {"memory_limit": "256MB", "threads": 3}


def test_remediation_variables_are_settings(monkeypatch):
    for name, value in {"REMEDIATE": "slurm, webhook", "REMEDIATE_WEBHOOK": "http://127.0.0.1:9/hook",
                        "REMEDIATE_LIVE": "1", "REMEDIATE_MAX_PERCENT": "5", "REMEDIATE_TOLERANCE_S": "0",
                        "REMEDIATE_K8S_EVICT": "true", "REMEDIATE_PAGE": ""}.items():
        monkeypatch.setenv(f"FAULTGRAPH_{name}", value)
    config = RemediationConfig.from_settings(Settings())
    assert (config.actuators, config.live, config.max_percent_per_hour, config.tolerance_s, config.evict_pods) == (
        ("slurm", "webhook"), True, 5.0, 0.0, True)
    assert (config.webhook_url, config.page_url, config.max_hosts_per_hour, config.every_s) == (
        "http://127.0.0.1:9/hook", None, 2, 10.0)
    assert not RemediationConfig.from_settings(Settings(remediate="")).enabled


@pytest.mark.parametrize(("name", "value"), [("REMEDIATE_MAX_PERCENT", "150"), ("REMEDIATE_LIVE", "maybe"),
                                             ("REMEDIATE_EVERY_S", "-1"), ("DUCKDB_THREADS", "0")])
def test_a_malformed_remediation_or_duckdb_variable_is_named(monkeypatch, name, value):
    monkeypatch.setenv(f"FAULTGRAPH_{name}", value)
    with pytest.raises(ValueError, match=f"FAULTGRAPH_{name}"):
        Settings()


def test_remediation_names_what_its_settings_lack():
    with pytest.raises(ValueError, match="FAULTGRAPH_REMEDIATE: drain not one of"):
        RemediationConfig.from_settings(Settings(remediate="slurm,drain"))
    with pytest.raises(ValueError, match="set FAULTGRAPH_REMEDIATE_WEBHOOK"):
        RemediationConfig.from_settings(Settings(remediate="webhook"))


def test_client_tls_variables_are_the_client_settings(monkeypatch, tmp_path):
    monkeypatch.setenv("FAULTGRAPH_CA_FILE", str(tmp_path / "ca.pem"))
    monkeypatch.setenv("FAULTGRAPH_CERT", "")  # empty counts as unset
    monkeypatch.delenv("FAULTGRAPH_KEY", raising=False)
    assert client.Tls.from_env() == client.Tls(ca_file=tmp_path / "ca.pem")
    assert ClientSettings(cert=tmp_path / "c.pem").cert == tmp_path / "c.pem"
