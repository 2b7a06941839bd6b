"""A store written by release 0.1.0 opens in this release: tables an older release made are
migrated (alembic), its events, incidents, notes, jobs, topology and tokens all still there;
a store from a newer release is refused."""

import logging
import shutil
import subprocess
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
import sqlalchemy as sa
from conftest import InProcessServer, chosen_backend, fresh_postgres_database, serve_in_process
from typer.testing import CliRunner

from faultgraph.service import migrations, store
from faultgraph.service.cli import app

RELEASE_1 = Path(__file__).resolve().parent / "data" / "release-0.1.0"


def _load_duckdb(path: Path) -> str:
    """The DuckDB export of the 0.1.0 store, loaded into a new file."""
    con = duckdb.connect(str(path))
    con.execute((RELEASE_1 / "duckdb" / "schema.sql").read_text())
    con.execute((RELEASE_1 / "duckdb" / "load.sql").read_text().replace("{dir}", str(RELEASE_1 / "duckdb")))
    con.close()
    return f"duckdb:///{path}"


def _load_postgres(url: str) -> None:
    """The pg_dump of the 0.1.0 store, restored by psql into an empty database."""
    psql = shutil.which("psql") or next(Path("/usr/lib/postgresql").glob("*/bin/psql"))
    dsn = sa.engine.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    subprocess.run([str(psql), "-q", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-f", str(RELEASE_1 / "postgresql.sql")],
                   check=True, capture_output=True, timeout=120)


@pytest.fixture
def release_1_store(tmp_path: Path) -> Iterator[str]:
    backend = chosen_backend()
    if backend == "duckdb":
        yield _load_duckdb(tmp_path / "release-0.1.0.duckdb")
        return
    with fresh_postgres_database(backend) as url:
        _load_postgres(url)
        yield url


def _admin_token(db_url: str) -> str:
    made = CliRunner().invoke(app, ["token", "create", "--role", "admin", "--name", "upgrade-test", "--db", db_url])
    assert made.exit_code == 0, made.stderr
    return made.stdout.strip()


def test_a_release_0_1_0_store_opens_with_everything_in_it(release_1_store: str, caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.INFO):
        token = _admin_token(release_1_store)  # the CLI opens (and migrates) the store first
    # one line says the store was migrated; alembic's own context lines are not logged
    assert [r.getMessage() for r in caplog.records if "migrat" in r.getMessage()] == [
        f"store schema migrated from revision {migrations.FIRST} to {migrations.head()}"]
    assert not [r for r in caplog.records if r.name.startswith("alembic")]
    server: InProcessServer = serve_in_process(release_1_store)
    try:
        server.client.headers["Authorization"] = f"Bearer {token}"
        incidents = server.client.get("/v1/incidents").json()["incidents"]
        assert [(i["root_cause"]["component"], i["type"]) for i in incidents] == [("node0003/gpu3", "interruption")]
        detail = server.client.get(f"/v1/incidents/{incidents[0]['id']}").json()
        assert [note["text"] for note in detail["notes"]] == ["written by release 0.1.0"]
        stored = server.client.get("/v1/events", params={"limit": 1000}).json()["events"]
        assert sum(1 for e in stored if e["kind"] != "audit") == 67
        assert [e["attrs"]["action"] for e in stored if e["kind"] == "audit"] == ["token.create"]
        assert server.client.get("/v1/jobs/llama-small").json()["id"] == "llama-small"
        assert server.client.get("/v1/topology/versions").json()["versions"][0]["version"] == 1
        names = {t["name"] for t in server.client.get("/v1/tokens").json()["tokens"]}
        assert {"r1-reader", "upgrade-test"} <= names
        # the store keeps working: new events land after the old ones
        answer = server.client.post("/v1/events", json=[{"time": "2026-11-30T00:00:00Z", "host": "node0001",
                                                          "kind": "gpu_ecc", "attrs": {"type": "sbe", "count": 1}}])
        assert answer.json()["accepted"] == 1
    finally:
        server.stop()
    engine = store.make_engine(release_1_store)
    try:
        with engine.connect() as conn:
            assert migrations.current(conn) is not None
            assert conn.execute(sa.select(store.schema_info.c.version)).scalar_one() == store.SCHEMA_VERSION
    finally:
        engine.dispose()


def test_a_store_from_a_newer_release_is_refused(db_url: str):
    engine = store.make_engine(db_url)
    try:
        store.init_schema(engine)
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE alembic_version SET version_num = 'f00d'"))
        with pytest.raises(store.SchemaVersionError, match="newer"):
            store.init_schema(engine)
    finally:
        engine.dispose()


def _component_compression(path: Path) -> set[str]:
    con = duckdb.connect(str(path))
    try:
        con.execute("CHECKPOINT")
        return {row[0] for row in con.execute("SELECT compression FROM pragma_storage_info('events') "
                                              "WHERE column_name = 'component' AND segment_type = 'VARCHAR'").fetchall()}
    finally:
        con.close()


def _add_repetitive_events(path: Path) -> None:
    """5,000 events over 40 component names: DuckDB's own choice for such a column is
    dictionary compression."""
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO events (id, seq, time, received, host, kind, component, severity) "
                "SELECT 'bulk' || i, 1000000 + i, TIMESTAMP '2026-11-01' + to_seconds(i), TIMESTAMP '2026-11-01', "
                "'node' || (i % 10), 'gpu_ecc', 'node' || (i % 10) || '/gpu' || (i % 8), 'warning' FROM range(5000) t(i)")
    con.close()


def _rows(path: Path) -> list[tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute("SELECT * FROM events ORDER BY rowid").fetchall()
    finally:
        con.close()


@pytest.mark.skipif(chosen_backend() != "duckdb", reason="a DuckDB storage detail")
def test_duckdb_stores_event_components_uncompressed_in_new_and_migrated_stores(tmp_path: Path):
    old = tmp_path / "release-0.1.0.duckdb"
    _load_duckdb(old)
    _add_repetitive_events(old)
    assert _component_compression(old) != {"Uncompressed"}  # what the migration has to change
    before = _rows(old)
    engine = store.make_engine(f"duckdb:///{old}")
    store.init_schema(engine)
    engine.dispose()
    assert _component_compression(old) == {"Uncompressed"}
    assert _rows(old) == before  # every row, in its stored order

    new = tmp_path / "new.duckdb"
    engine = store.make_engine(f"duckdb:///{new}")
    store.init_schema(engine)
    engine.dispose()
    _add_repetitive_events(new)
    assert _component_compression(new) == {"Uncompressed"}


def test_train_progress_rows_of_a_0005_store_are_merged_per_step_under_the_fold_cursor(db_url: str):
    """A store at revision 0005 held partial series rows with nothing to tell them apart:
    each step's become one row keyed by the fold cursor, and the series is unchanged."""
    engine = store.make_engine(db_url)
    try:
        store.init_schema(engine)
        with engine.begin() as conn:
            conn.execute(sa.text("DROP TABLE train_progress"))  # as this release made it until 0006
            conn.execute(sa.text("CREATE TABLE train_progress (job VARCHAR NOT NULL, step BIGINT NOT NULL, "
                                 "time TIMESTAMP NOT NULL, reports INTEGER NOT NULL, duration_ms DOUBLE PRECISION NOT NULL)"))
            conn.execute(sa.text("CREATE INDEX ix_train_progress_job ON train_progress (job)"))
            conn.execute(sa.text("UPDATE alembic_version SET version_num = '0005'"))
            conn.execute(sa.text("INSERT INTO engine_state (name, last_seq) VALUES ('degradations', 40)"))
            conn.execute(sa.text(
                "INSERT INTO train_progress (job, step, time, reports, duration_ms) VALUES "
                "('llama', 7, '2026-11-29 08:00:01', 3, 3000.0), ('llama', 7, '2026-11-29 08:00:02', 1, 1400.0), "
                "('llama', 8, '2026-11-29 08:00:03', 4, 4000.0)"))
        store.init_schema(engine)
        with engine.connect() as conn:
            assert migrations.current(conn) == migrations.head()
            rows = conn.execute(sa.text("SELECT job, step, time, reports, duration_ms, through_seq FROM train_progress "
                                        "ORDER BY step")).all()
    finally:
        engine.dispose()
    assert [tuple(row) for row in rows] == [
        ("llama", 7, datetime(2026, 11, 29, 8, 0, 2), 4, 4400.0, 40),
        ("llama", 8, datetime(2026, 11, 29, 8, 0, 3), 4, 4000.0, 40),
    ]
