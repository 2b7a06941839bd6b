"""`faultgraph export` / `faultgraph import`: every table through Parquet, between backends."""

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa
from click.testing import Result
from conftest import empty_store, serve_in_process
from typer.testing import CliRunner

from faultgraph.service import store, transfer
from faultgraph.service.cli import app
from faultgraph.service.events import service as events_service
from faultgraph.service.events.models import EventList, events
from faultgraph.service.progress import service as progress
from faultgraph.service.progress.models import train_progress

T0 = "2026-11-29T08:00:00.123456Z"


def batch() -> list[dict]:
    """Events exercising every column: nulls, unicode, nested attrs, far-apart times."""
    return [
        {"id": "a", "time": T0, "host": "node0001", "kind": "gpu_xid", "attrs": {"xid": 79, "pci": "0000:3b:00"},
         "message": "GPU has fallen off the bus — «ü»", "job": "llama", "rank": 7, "component": "node0001/gpu3"},
        {"id": "b", "time": "1970-01-01T00:00:00Z", "host": "node0002", "kind": "job_end"},
        {"id": "c", "time": "2099-12-31T23:59:59.999999Z", "host": "node0003", "kind": "nccl_timeout",
         "attrs": {"rank": 5, "nested": {"list": [1, 2.5, None, "x"], "flag": True}}, "message": 'q"u,o\nte'},
    ]


def cli(*args: str) -> Result:
    """The `faultgraph` command in this process (stdout and stderr apart, as a shell sees them)."""
    return CliRunner().invoke(app, list(args))


def read_back(db_url: str) -> dict[str, list[dict]]:
    """What a client sees: every event and every incident."""
    server = serve_in_process(db_url)
    try:
        return {name: server.client.get(f"/v1/{name}").json()[name] for name in ("events", "incidents")}
    finally:
        server.stop()


def fill_directly(db_url: str, events_: list[dict], first_seq: int = 1) -> None:
    """Store validated events without a server (the tests that only need rows in place)."""
    valid = EventList.validate_python(events_)
    rows = events_service.to_rows(valid, received=datetime.now(UTC))
    rows = rows.append_column("seq", pa.array(range(first_seq, first_seq + len(valid)), pa.int64()))
    engine = store.make_engine(db_url)
    try:
        store.init_schema(engine)
        with engine.connect() as conn:
            store.insert_ignoring_duplicates(conn, rows, table_name="events")
            conn.commit()
    finally:
        engine.dispose()


def fill(db_url: str, events_: list[dict]) -> dict[str, list[dict]]:
    server = serve_in_process(db_url)
    try:
        assert server.client.post("/v1/events", json=events_).json()["accepted"] == len(events_)
        server.client.post("/v1/analyze").raise_for_status()  # incidents exist before the export
    finally:
        server.stop()
    return read_back(db_url)


@pytest.fixture
def other_db_url(tmp_path: Path) -> Iterator[str]:
    """A second, empty store on the backend under test."""
    yield from empty_store(tmp_path, "other")


def test_round_trip_to_duckdb_keeps_every_event_and_incident(db_url, tmp_path):
    original = fill(db_url, batch())
    assert original["incidents"], "the batch should have opened incidents (XID 79, an NCCL timeout)"
    exported = cli("export", str(tmp_path / "dump"), "--db", db_url)
    assert exported.exit_code == 0, exported.stderr
    manifest = json.loads((tmp_path / "dump" / "manifest.json").read_text())
    assert manifest["tables"]["events"]["rows"] == 3
    target = f"duckdb:///{tmp_path / 'target.duckdb'}"
    imported = cli("import", str(tmp_path / "dump"), "--db", target)
    assert imported.exit_code == 0, imported.stderr
    assert "events                              3 rows" in imported.stdout
    assert read_back(target) == original


def test_duckdb_export_imports_into_the_backend_under_test(other_db_url, tmp_path):
    source = f"duckdb:///{tmp_path / 'source.duckdb'}"
    original = fill(source, batch())
    assert cli("export", str(tmp_path / "dump"), "--db", source).exit_code == 0
    assert cli("import", str(tmp_path / "dump"), "--db", other_db_url).exit_code == 0
    assert read_back(other_db_url) == original


def test_every_data_table_is_exported(db_url, tmp_path):
    engine = store.make_engine(db_url)
    try:
        store.init_schema(engine)
        counts = transfer.export_all(engine, tmp_path / "dump")
    finally:
        engine.dispose()
    expected = {table.name for table in store.metadata.sorted_tables} - {store.schema_info.name}
    assert set(counts) == expected
    for name in expected:
        assert pq.read_schema(tmp_path / "dump" / f"{name}.parquet").names == list(store.metadata.tables[name].c.keys())


def exported(db_url: str, directory: Path) -> Path:
    """`directory`, holding an export of the store at `db_url`."""
    engine = store.make_engine(db_url)
    try:
        transfer.export_all(engine, directory)
    finally:
        engine.dispose()
    return directory


def imported_twice(db_url: str, directory: Path) -> tuple[dict[str, int], dict[str, int]]:
    """The rows each table gained from importing the same export twice into `db_url`."""
    target = store.make_engine(db_url)
    try:
        return transfer.import_all(target, directory), transfer.import_all(target, directory)
    finally:
        target.dispose()


def test_import_is_idempotent_and_lands_after_existing_events(db_url, other_db_url, tmp_path):
    fill_directly(db_url, batch())
    fill_directly(other_db_url, [{"id": f"own{i}", "time": T0, "host": "h", "kind": "job_start"} for i in range(5)])
    first, again = imported_twice(other_db_url, exported(db_url, tmp_path / "dump"))
    assert first["events"] == 3
    assert set(again) == set(first) and not any(again.values())
    engine = store.make_engine(other_db_url)
    try:
        with engine.connect() as conn:
            seq = dict(conn.execute(sa.select(events.c.id, events.c.seq)).all())
    finally:
        engine.dispose()
    assert len(seq) == 8
    assert min(seq[i] for i in "abc") > max(seq[f"own{i}"] for i in range(5))


def timelines(db_url: str) -> dict[str, list[str]]:
    """Each incident's timeline as its event ids, as a client reads it."""
    server = serve_in_process(db_url)
    try:
        listed = server.client.get("/v1/incidents").json()["incidents"]
        return {item["id"]: [event["id"] for event in server.client.get(f"/v1/incidents/{item['id']}/timeline").json()["events"]]
                for item in listed}
    finally:
        server.stop()


def test_importing_twice_adds_no_incident_event_and_no_timeline_entry(db_url, other_db_url, tmp_path):
    fill(db_url, batch())
    assert cli("export", str(tmp_path / "dump"), "--db", db_url).exit_code == 0
    assert pq.read_metadata(tmp_path / "dump" / "incident_events.parquet").num_rows
    first = cli("import", str(tmp_path / "dump"), "--db", other_db_url)
    again = cli("import", str(tmp_path / "dump"), "--db", other_db_url)
    assert first.exit_code == again.exit_code == 0, again.stderr
    assert timelines(other_db_url) == timelines(db_url)
    assert "imported 0 rows" in again.stdout, again.stdout


@pytest.fixture
def held_store(tmp_path: Path) -> Iterator[str]:
    """A DuckDB store another process holds open, as a running `faultgraph serve` does."""
    path = tmp_path / "held.duckdb"
    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, sys; c = duckdb.connect({str(path)!r}); "
                               "print('held', flush=True); sys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield f"duckdb:///{path}"
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("command", ["export", "import", "prune"])
def test_store_commands_explain_a_database_held_by_another_process(held_store, tmp_path, command):
    dump = tmp_path / "dump"
    assert cli("export", str(dump), "--db", f"duckdb:///{tmp_path / 'empty.duckdb'}").exit_code == 0
    done = cli(*([command] if command == "prune" else [command, str(dump)]), "--db", held_store)
    assert done.exit_code == 1 and not isinstance(done.exception, Exception), done.exception
    assert done.stderr.startswith(f"the database {held_store} is held by another process"), done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.output


def test_a_failed_import_leaves_the_store_untouched(db_url, other_db_url, tmp_path):
    fill_directly(db_url, batch())
    exported(db_url, tmp_path / "dump")
    table = pq.read_table(tmp_path / "dump" / "events.parquet")
    pq.write_table(table.drop_columns(["host"]), tmp_path / "dump" / "events.parquet")
    target = store.make_engine(other_db_url)
    try:
        with pytest.raises(ValueError, match="required column host"):
            transfer.import_all(target, tmp_path / "dump")
        (tmp_path / "dump" / "events.parquet").write_bytes(b"not parquet at all")
        with pytest.raises(ValueError, match="not a readable Parquet file"):
            transfer.import_all(target, tmp_path / "dump")
        assert store.max_value(target, events.c.seq) == 0
    finally:
        target.dispose()


@pytest.mark.parametrize(
    "manifest, words",
    [
        (None, "no manifest.json"),
        ("{broken", "unreadable manifest"),
        ({"format": "something else", "tables": {}}, "not a faultgraph export"),
        ({"format": "faultgraph-export", "schema_version": 999, "tables": {}}, "newer than this faultgraph"),
        ({"format": "faultgraph-export", "schema_version": 1, "tables": {"nonsense": {"file": "x.parquet"}}}, "does not know: nonsense"),
        ({"format": "faultgraph-export", "schema_version": 1, "tables": {"events": {"file": "../events.parquet"}}}, "outside the export"),
    ],
)
def test_bad_exports_are_refused_with_the_reason(tmp_path, manifest, words):
    dump = tmp_path / "dump"
    dump.mkdir()
    if manifest is not None:
        (dump / "manifest.json").write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    answer = cli("import", str(dump), "--db", f"duckdb:///{tmp_path / 'target.duckdb'}")
    assert answer.exit_code == 2 and words in answer.stderr, answer.stderr


def test_a_column_type_without_a_parquet_mapping_is_named():
    column = sa.Column("points", sa.ARRAY(sa.Integer))
    sa.Table("unmapped", sa.MetaData(), column)
    with pytest.raises(ValueError, match="unmapped.points"):
        transfer.arrow_type(column)


def steps(job: str, ranks: int, step_range: range) -> list[dict]:
    """Each rank's report of each step, as a trainer's hook posts them."""
    return [{"id": f"{job}-{step}-{rank}", "time": f"2026-11-29T08:{step // 60:02d}:{step % 60:02d}Z",
             "host": f"node{rank:04d}", "kind": "train_step", "job": job, "rank": rank,
             "attrs": {"step": step, "duration_ms": 1000.0 + rank}}
            for step in step_range for rank in range(ranks)]


def analysed(db_url: str, events_: list[dict]) -> None:
    """Post `events_` in two batches with an engine pass after each (two partial series rows
    per step where the batches split one), as a live service folds them."""
    server = serve_in_process(db_url)
    try:
        half = len(events_) // 2 + 1
        for part in (events_[:half], events_[half:]):
            if part:
                assert server.client.post("/v1/events", json=part).json()["accepted"] == len(part)
            server.client.post("/v1/analyze").raise_for_status()
    finally:
        server.stop()


def series_of(db_url: str, job: str) -> tuple[list[tuple[int, float]], int]:
    """A job's step series (step, mean duration) and how many partial rows hold it."""
    engine = store.make_engine(db_url)
    try:
        with engine.connect() as conn:
            samples = progress.series(conn, job=job)
            rows = conn.execute(sa.select(sa.func.count()).select_from(train_progress)).scalar_one()
    finally:
        engine.dispose()
    return [(sample.step, sample.ms) for sample in samples], rows


def test_importing_the_same_export_twice_keeps_each_step_series_row_once(db_url, other_db_url, tmp_path):
    analysed(db_url, steps("llama", 3, range(10)))  # 30 reports: step 5's split over two passes
    source = series_of(db_url, "llama")
    assert source[0] == [(step, 1001.0) for step in range(10)] and source[1] == 11
    first, again = imported_twice(other_db_url, exported(db_url, tmp_path / "dump"))
    assert (first["train_progress"], again["train_progress"]) == (11, 0)
    assert series_of(other_db_url, "llama") == source


def test_a_series_imported_beside_a_store_s_own_events_is_folded_once(db_url, other_db_url, tmp_path):
    analysed(db_url, steps("llama", 2, range(6)))
    engine = store.make_engine(db_url)
    try:
        with engine.begin() as conn:  # retention pruned steps 0-1's reports after they were folded
            conn.execute(events.delete().where(events.c.time < datetime(2026, 11, 29, 8, 0, 2)))
    finally:
        engine.dispose()
    exported(db_url, tmp_path / "dump")
    analysed(other_db_url, steps("own", 2, range(3)))
    target = store.make_engine(other_db_url)
    try:
        transfer.import_all(target, tmp_path / "dump")
    finally:
        target.dispose()
    analysed(other_db_url, [])  # the engine reads the imported events as new
    assert series_of(other_db_url, "llama")[0] == series_of(db_url, "llama")[0] == [(step, 1000.5) for step in range(6)]
    assert reports_by_step(other_db_url, "llama") == {step: 2 for step in range(6)}  # each rank's report once


def reports_by_step(db_url: str, job: str) -> dict[int, int]:
    """How many rank reports a job's series counts for each step."""
    engine = store.make_engine(db_url)
    try:
        with engine.connect() as conn:
            return dict(conn.execute(sa.select(train_progress.c.step, sa.func.sum(train_progress.c.reports))
                                     .where(train_progress.c.job == job).group_by(train_progress.c.step)).all())
    finally:
        engine.dispose()


def test_an_export_made_before_series_rows_had_their_fold_imports_once(db_url, other_db_url, tmp_path):
    analysed(db_url, steps("llama", 3, range(10)))
    progress_file = exported(db_url, tmp_path / "dump") / "train_progress.parquet"
    pq.write_table(pq.read_table(progress_file).drop_columns(["through_seq"]), progress_file)
    first, again = imported_twice(other_db_url, tmp_path / "dump")
    assert (first["train_progress"], again["train_progress"]) == (11, 0)
    assert series_of(other_db_url, "llama") == series_of(db_url, "llama")
