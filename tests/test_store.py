"""The store's bulk insert and schema, on whichever backend FAULTGRAPH_TEST_DB selects."""

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import orjson
import pyarrow as pa
import pytest
import sqlalchemy as sa

from faultgraph.service import store
from faultgraph.service.events import service as events_service
from faultgraph.service.events.models import events

T0 = datetime(2026, 11, 29, 8, 0, 0, 123456, tzinfo=UTC)


def rows_of(items: list[dict], first_seq: int) -> pa.Table:
    rows = events_service.to_rows(items, received=T0)
    return rows.append_column("seq", pa.array(range(first_seq, first_seq + len(items)), pa.int64()))


def item(event_id: str, **fields) -> dict:
    return {"id": event_id, "time": T0, "host": "node0001", "kind": "gpu_xid", "attrs": {"xid": 79}, **fields}


def insert(engine: sa.Engine, rows: pa.Table) -> list[str]:
    with engine.connect() as conn:
        inserted = store.insert_ignoring_duplicates(conn, rows, table_name="events")
        conn.commit()
    return inserted


def test_first_arrival_wins_and_stored_ids_are_skipped(engine):
    first = rows_of([item("a", message="first"), item("b"), item("a", message="second")], 1)
    assert sorted(insert(engine, first)) == ["a", "b"]
    again = rows_of([item("b", message="later"), item("c")], 4)
    assert insert(engine, again) == ["c"]
    with engine.connect() as conn:
        stored = dict(conn.execute(sa.select(events.c.id, events.c.message)).all())
    assert stored == {"a": "first", "b": None, "c": None}


def test_a_retried_batch_spanning_years_is_stored_once(engine):
    """Duplicates are found by id near each span of event-time minutes the batch covers,
    however far apart the spans and whatever the store holds between them."""
    moments = [T0, T0 + timedelta(minutes=59), T0 + timedelta(hours=3), T0 - timedelta(days=700)]
    batch = [item(f"r{i}", time=moment) for i, moment in enumerate(moments)]
    filler = [item(f"f{i}", time=T0 - timedelta(days=i)) for i in range(1, 50)]
    assert len(insert(engine, rows_of(batch + filler, 1))) == len(batch) + len(filler)
    assert insert(engine, rows_of(batch, 100)) == []
    assert insert(engine, rows_of([*batch, item("new", time=T0 + timedelta(days=1))], 200)) == ["new"]
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(events)).scalar_one() == len(batch) + len(filler) + 1


def test_uncommitted_insert_is_not_stored(engine):
    with engine.connect() as conn:
        assert store.insert_ignoring_duplicates(conn, rows_of([item("gone")], 1), table_name="events") == ["gone"]
        conn.rollback()
    assert store.max_value(engine, events.c.seq) == 0


def test_times_round_trip_as_naive_utc(engine):
    moments = [T0, T0 + timedelta(days=400, microseconds=1), datetime(1970, 1, 1, tzinfo=UTC)]
    insert(engine, rows_of([item(f"t{i}", time=moment) for i, moment in enumerate(moments)], 1))
    with engine.connect() as conn:
        stored = dict(conn.execute(sa.select(events.c.id, events.c.time)).all())
    assert stored == {f"t{i}": moment.replace(tzinfo=None) for i, moment in enumerate(moments)}


def test_rows_of_reads_what_the_driver_reads(engine):
    """The engine's window read (Arrow on DuckDB): the driver's rows, in order, across parts,
    with an expanded IN list and bound times; JSON stays text there, as the engine decodes it."""
    items = [item(f"w{i:03d}", time=T0 + timedelta(seconds=i), host=f"node{i % 7:04d}", attrs={"xid": i, "n": [i]})
             for i in range(250)]
    insert(engine, rows_of(items, 1))
    query = (sa.select(events.c.id, events.c.time, events.c.host, events.c.rank, events.c.attrs)
             .where(events.c.host.in_(["node0001", "node0003", "node0006"]), events.c.time >= T0 + timedelta(seconds=10),
                    events.c.seq <= 240)
             .order_by(events.c.time, events.c.id))
    with engine.connect() as conn:
        expected = [tuple(row) for row in conn.execute(query)]
        got = list(store.rows_of(conn, query, part=16))
    decoded = [(*row[:4], orjson.loads(row[4]) if isinstance(row[4], str | bytes) else row[4]) for row in got]
    assert len(expected) == 99 and decoded == expected


def test_text_with_nul_and_quotes_is_stored_not_refused(engine):
    """PostgreSQL cannot hold U+0000; it becomes U+FFFD there and everything else survives."""
    message = 'line "one"\nline two,\x00 three\\'
    attrs = {"xid": 79, "text": "nul\x00inside", "k\x00ey": ["\x00", 'q"uote'], "esc": "\\u0000 literal"}
    insert(engine, rows_of([item("n", message=message, attrs=attrs), item("plain", message="")], 1))
    with engine.connect() as conn:
        stored = {row.id: events_service.row_to_event(row) for row in conn.execute(sa.select(events))}
    nul = "\x00" if engine.dialect.name == "duckdb" else "\ufffd"
    assert stored["n"]["message"] == message.replace("\x00", nul)
    assert stored["n"]["attrs"] == {"xid": 79, "text": f"nul{nul}inside", f"k{nul}ey": [nul, 'q"uote'], "esc": "\\u0000 literal"}
    assert stored["plain"]["message"] == ""


def test_postgres_has_time_range_indexes(engine):
    if engine.dialect.name != "postgresql":
        pytest.skip("DuckDB scans with zone maps; indexes are a PostgreSQL matter")
    indexed = {tuple(index["column_names"]) for index in sa.inspect(engine).get_indexes("events")}
    wanted = {tuple(column.split()[0] for column in columns) for columns in store.POSTGRES_INDEXES["events"]}
    assert wanted <= indexed


def component_query(name: str) -> sa.Select:
    return sa.select(events).where(*events_service.where_clauses(events_service.EventFilter(component=name)))


def test_a_component_query_matches_the_component_and_its_parts_only(engine):
    """`_` and `%` in a name are characters, not LIKE's wildcards (gpu_1 is not gpuX1)."""
    parts = [item("gpu", component="h1/gpu_1"), item("inside", component="h1/gpu_1/nvlink0"),
             item("wildcard", component="h1/gpuX1/nvlink0"), item("sibling", component="h1/gpu_10"),
             item("plain", component="h2/gpu1"), item("plain-inside", component="h2/gpu1/nvlink0")]
    insert(engine, rows_of(parts, 1))
    with engine.connect() as conn:
        assert {row.id for row in conn.execute(component_query("h1/gpu_1"))} == {"gpu", "inside"}
        assert {row.id for row in conn.execute(component_query("h2/gpu1"))} == {"plain", "plain-inside"}


def test_postgres_serves_a_component_query_from_its_index(engine):
    """`component = X OR LIKE 'X/%'` from the index under any collation, or every component
    query scans the whole history (seq scans are priced out so the tiny table cannot hide it)."""
    if engine.dialect.name != "postgresql":
        pytest.skip("DuckDB scans with zone maps; indexes are a PostgreSQL matter")
    insert(engine, rows_of([item(f"c{i}", component=f"h{i % 3}/gpu{'_' * (i % 2)}{i}") for i in range(30)], 1))
    with engine.begin() as conn:
        conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
        for name in ("h1/gpu1", "h1/gpu_1"):  # a plain name, and one whose LIKE pattern is escaped
            query = component_query(name).compile(engine, compile_kwargs={"literal_binds": True})
            plan = "\n".join(conn.execute(sa.text(f"EXPLAIN {query}")).scalars())
            assert "ix_events_component_time" in plan, plan


def test_schema_creation_from_several_processes_at_once(db_url):
    if not db_url.startswith("postgresql"):
        pytest.skip("one DuckDB file has one writer process")
    engines = [store.make_engine(db_url) for _ in range(4)]
    try:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(store.init_schema, engines))
        with engines[0].connect() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(store.schema_info)).scalar_one() == 1
    finally:
        for engine in engines:
            engine.dispose()


def test_plain_postgresql_url_means_psycopg():
    engine = store.make_engine("postgresql://user@127.0.0.1:1/db")
    assert engine.dialect.driver == "psycopg"
    engine.dispose()
