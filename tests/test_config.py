"""Settings: one class for every FAULTGRAPH_* variable, flags over environment, clear errors."""


import pytest
from typer.testing import CliRunner

from faultgraph.service.cli import app
from faultgraph.service.config import Settings, settings_table


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
    for name, field in Settings.model_fields.items():
        assert field.description, f"{name} has no description"
    assert table.count("\n| `FAULTGRAPH_") == len(Settings.model_fields)
