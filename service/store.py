"""The database: engine from a URL, the versioned schema, and the columnar bulk insert.

Tables are declared on `metadata` by each domain's `models.py`; this module owns creating
them, recording the schema version, and the per-dialect fast path for appending events.
"""

import importlib
import importlib.util
import io
import pkgutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, overload

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.schema import CreateColumn
from sqlalchemy.sql.compiler import DDLCompiler

from faultgraph.service.config import Settings

metadata = sa.MetaData()

# JSON columns: JSONB on PostgreSQL, DuckDB's JSON elsewhere.
JSON = sa.JSON().with_variant(JSONB(), "postgresql")

# A column's compression on DuckDB, where DuckDB's own choice makes a query's cost grow with
# the history: `sa.Column(..., info={DUCKDB_COMPRESSION: "uncompressed"})`.
DUCKDB_COMPRESSION = "duckdb_compression"


@compiles(CreateColumn, "duckdb")
def _duckdb_column(create: CreateColumn, compiler: DDLCompiler, **kw: Any) -> str:
    text = compiler.visit_create_column(create, **kw)
    compression = create.element.info.get(DUCKDB_COMPRESSION)
    return f"{text} USING COMPRESSION {compression}" if text and compression else text


def to_db_time(value: datetime) -> datetime:
    """Times are stored as naive UTC on every backend."""
    return value.astimezone(UTC).replace(tzinfo=None)


@overload
def from_db_time(value: datetime) -> datetime: ...
@overload
def from_db_time(value: None) -> None: ...
def from_db_time(value: datetime | None) -> datetime | None:
    """A stored naive-UTC time back to an aware one."""
    return None if value is None else value.replace(tzinfo=UTC)


def json_value(value: Any) -> Any:
    """A JSON column's value: some drivers hand back the text, others the parsed value."""
    return orjson.loads(value) if isinstance(value, str | bytes) else value

# Release 0.1.0 wrote 1 and refuses a store whose version is higher; revisions since are
# alembic's (service/migrations), and this number only keeps older releases out.
SCHEMA_VERSION = 2

schema_info = sa.Table(
    "schema_info",
    metadata,
    sa.Column("version", sa.Integer, nullable=False),
)


class SchemaVersionError(RuntimeError):
    """The database was written by a newer faultgraph than this one."""


# PostgreSQL only: DuckDB scans its columnar blocks with zone maps, and indexes there slow
# ingest; a row store needs them for time-window reads. (time) and not (time, id): the
# API pages by (time, id), which PostgreSQL serves from (time) by incremental sort, and the
# narrower index is cheaper to maintain at ingest. (seq): the incident engine reads "every
# event after seq N" after each commit, which is a full scan without it. (component, time)
# with `text_pattern_ops`: a component query is `component = X OR component LIKE 'X/%'`,
# and only that operator class serves a prefix LIKE under a non-C collation; without it
# the query scans everything the store ever held. A column may name its operator class.
POSTGRES_INDEXES: dict[str, tuple[tuple[str, ...], ...]] = {
    "events": (("time",), ("host", "time"), ("job", "time"), ("seq",), ("component text_pattern_ops", "time")),
}

# Any two faultgraph processes creating the schema at once on one PostgreSQL take turns.
_SCHEMA_LOCK = 0x6661756C74  # "fault"

# PostgreSQL only: replicas number events from one database sequence, and take turns
# (a transaction-level advisory lock held from drawing numbers until commit) so that seq
# order is commit order. The incident engine reads "everything after seq N": were two
# replicas to commit out of seq order, a pass between the two commits would see the higher
# numbers, advance past the lower ones, and never analyse them. Only the final
# INSERT … SELECT and the commit are serialised; the COPY into the staging table, the
# costly part, runs in parallel. (The alternative, a watermark below which every drawn
# number is known committed, needs in-flight bookkeeping that gaps from duplicates and
# rollbacks make fragile; a lag window re-scan can still miss a commit slower than it.)
SEQUENCES = {"events": ("seq", "events_arrival")}
_INGEST_LOCK = 0x6667_696E_6773  # "fgings"


def make_engine(url: str, settings: Settings | None = None) -> Engine:
    """An engine for `url`; a DuckDB file's parent directory is created first. A DuckDB
    store's limits are `settings`' (default: the environment's).

    `postgresql://` (no driver named) means psycopg 3, the driver faultgraph ships with.
    PostgreSQL connections check liveness when borrowed (a restarted server or a failover
    does not surface as one failed request) and run in UTC. JSON columns are read with
    orjson: the engine reads every event's attrs on each pass.
    """
    parsed = sa.engine.make_url(url)
    backend = parsed.get_backend_name()
    if backend == "duckdb" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    if backend == "postgresql":
        if parsed.drivername in ("postgresql", "postgres"):
            parsed = parsed.set(drivername="postgresql+psycopg")
        return sa.create_engine(
            parsed,
            pool_pre_ping=True,
            pool_size=8,
            max_overflow=16,
            pool_recycle=1800,
            connect_args={"application_name": "faultgraph", "options": "-c timezone=UTC"},
            json_deserializer=orjson.loads,
        )
    if backend == "duckdb":
        return sa.create_engine(parsed, connect_args={"config": duckdb_config(settings or Settings())},
                                json_deserializer=orjson.loads)
    return sa.create_engine(parsed)


def rows_of(conn: Connection, query: sa.Select, *, part: int = 10_000) -> Iterator[tuple]:
    """`query`'s rows as tuples, `part` at a time. On DuckDB through Arrow: the driver's own
    rows cost half again as much to build, and the engine reads a window of a hundred
    thousand events on every step of a pass. There the values skip SQLAlchemy's result
    processing (naive UTC times, JSON as text); elsewhere they are the driver's rows, JSON
    decoded."""
    if conn.dialect.name != "duckdb":
        for rows in conn.execute(query).partitions(part):
            yield from rows
        return
    compiled = query.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
    values = [compiled.params[name] for name in compiled.positiontup or ()]
    reader = conn.connection.driver_connection.sql(str(compiled), params=values).to_arrow_reader(part)
    for batch in reader:
        yield from zip(*(column.to_pylist() for column in batch.columns), strict=True)


def libpq_dsn(url: str | sa.URL) -> str:
    """A PostgreSQL URL as psycopg's own connection string, for a connection kept apart from
    the engine's pool (the leader lease, commit notices)."""
    return sa.engine.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def duckdb_config(settings: Settings) -> dict[str, str | int]:
    """DuckDB's memory and threads, set rather than left to its defaults (80 % of the
    machine's RAM, one thread per core): the store then costs the same whatever it holds,
    and ingest, queries and the engine share the cores with the web server. Past the limit
    DuckDB spills to a temporary directory beside the file instead of growing."""
    return {"memory_limit": settings.duckdb_memory, "threads": settings.duckdb_threads}


def register_tables() -> None:
    """Import every domain's `models.py` (service/<domain>/models.py): each declares its
    tables on `metadata`, and schema creation and export/import see them all."""
    from faultgraph import service

    for module in pkgutil.iter_modules(service.__path__):
        name = f"faultgraph.service.{module.name}.models"
        if module.ispkg and importlib.util.find_spec(name) is not None:
            importlib.import_module(name)


def init_schema(engine: Engine) -> None:
    """Create missing tables, migrate tables an older release made, record the version;
    refuse a database written by a newer faultgraph."""
    from faultgraph.service import migrations

    register_tables()
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_SCHEMA_LOCK})")
        revision = migrations.current(conn)
        if revision is not None and not migrations.known(revision):
            raise SchemaVersionError(f"database schema revision {revision} is newer than this faultgraph's; "
                                     "upgrade faultgraph")
        created = not sa.inspect(conn).has_table(schema_info.name)
        metadata.create_all(conn)
        if created:
            migrations.stamp_head(conn)
        else:
            migrations.upgrade(conn, from_revision=migrations.FIRST if revision is None else None)
        if conn.dialect.name == "postgresql":
            _create_postgres_indexes(conn)
            _create_postgres_sequences(conn)
        conn.execute(schema_info.delete())
        conn.execute(schema_info.insert().values(version=SCHEMA_VERSION))


# Tables whose rows are unique by a key that is not a primary key constraint. `events`: on
# DuckDB a primary key is an ART index held whole in memory and probed by every insert, so
# RSS and insert cost would grow with the history; instead an insert looks for its ids among
# the stored events whose time lies within DUPLICATE_WINDOW of the batch's own event times,
# which the `time` zone maps (events arrive roughly in time order) narrow to a few row
# groups whatever the store holds. A retried batch (same ids, same or nearby times: a line
# without a timestamp takes its receive time) is stored once at any age; an id posted again
# with a time further than the window from the first is a new event. PostgreSQL keeps a
# unique B-tree index on `id` (no window).
DUPLICATE_WINDOW = timedelta(minutes=10)
UNIQUE_KEYS: dict[str, tuple[str, ...]] = {"events": ("id",)}


def table_key(table: sa.Table) -> list[str]:
    """The columns that identify a row: the primary key, else the table's UNIQUE_KEYS, else
    the key its declaration names in `info` (one no constraint enforces: see `_unenforced`)."""
    return ([column.name for column in table.primary_key.columns] or list(UNIQUE_KEYS.get(table.name, ()))
            or list(_unenforced(table)))


def _unenforced(table: sa.Table) -> tuple[str, ...]:
    """The key a table declares in `info` without a constraint (adding one would need a
    migration, and a store may already hold repeats): a bulk append checks the stored rows."""
    return tuple(table.info.get("key", ()))


def insert_ignoring_duplicates(conn: Connection, rows: pa.Table, *, table_name: str) -> list[str]:
    """Append `rows` (an Arrow table with the table's columns and an `id` key); return the
    ids actually inserted. Ids already stored, or repeated within `rows`, are skipped.

    DuckDB reads the Arrow table in place (columnar, no per-row Python), which is what
    makes ingest run at hundreds of thousands of rows a second. PostgreSQL gets the batch
    by COPY (Arrow's C++ CSV writer, PostgreSQL's CSV reader: no per-row Python either).
    """
    if not conn.in_transaction():
        # Driver-level statements below are invisible to SQLAlchemy: without this, the
        # caller's commit()/rollback() would not govern them.
        conn.begin()
    if conn.dialect.name == "postgresql":
        return _copy_insert_postgres(conn, rows, table_name=table_name, returning=True)[0]
    if conn.dialect.name != "duckdb":
        raise NotImplementedError(f"bulk insert for {conn.dialect.name} is not implemented yet")
    return _insert_new_duckdb(conn, rows, metadata.tables[table_name], returning=True)[0]


def _insert_new_duckdb(conn: Connection, rows: pa.Table, table: sa.Table, *, returning: bool) -> tuple[list, int]:
    """DuckDB: insert the rows whose key is new, the first of each key within `rows` (lowest
    `seq` when there is one); returns the inserted keys' first column (when `returning`) and
    their count. A table in UNIQUE_KEYS with a `time` column is checked by time span.

    One statement: the stored keys are anti-joined inside the insert rather than looked up
    and filtered out first (a storm's group commit paid ~4 ms for the extra round)."""
    raw = conn.connection.driver_connection
    key = table_key(table)
    columns = ", ".join(f'"{name}"' for name in rows.column_names)
    source = "_incoming i"
    match = " AND ".join(f'i."{name}" = s."{name}"' for name in key)
    stored = ", ".join(f'"{name}"' for name in key)
    if table.name in UNIQUE_KEYS and "time" in rows.column_names and rows.num_rows:
        source += f' ANTI JOIN (SELECT {stored} FROM "{table.name}" WHERE {_near_in_time(rows)}) s ON {match}'
    elif _unenforced(table):
        source += f' ANTI JOIN (SELECT {stored} FROM "{table.name}") s ON {match}'
    quoted = ", ".join(f'i."{name}"' for name in key)
    order = ' ORDER BY i."seq"' if "seq" in rows.column_names else ""
    # The window that keeps a key's first row doubles the insert's cost: only when one repeats.
    once = f"QUALIFY row_number() OVER (PARTITION BY {quoted}{order}) = 1" if key and _repeats(rows, key) else ""
    # A store created before `events` lost its primary key still has it: let it refuse quietly.
    conflict = "ON CONFLICT DO NOTHING" if table.primary_key.columns or _has_primary_key(conn, table.name) else ""
    back = f' RETURNING "{key[0]}"' if returning and key else ""
    selected = ", ".join(f'i."{name}"' for name in rows.column_names)
    raw.register("_incoming", rows)
    try:
        result = raw.execute(f'INSERT INTO "{table.name}" ({columns}) SELECT {selected} FROM {source} {once} {conflict}{back}')
        inserted = [row[0] for row in result.fetchall()] if back else []
        return inserted, (len(inserted) if back else result.fetchall()[0][0])
    finally:
        raw.unregister("_incoming")


def _repeats(rows: pa.Table, key: list[str]) -> bool:
    """Whether some key occurs more than once within `rows` (counted by Arrow)."""
    if len(key) == 1:
        return pc.count_distinct(rows.column(key[0])).as_py() < rows.num_rows
    return rows.select(key).group_by(key).aggregate([]).num_rows < rows.num_rows


def _near_in_time(rows: pa.Table) -> str:
    """The stored rows a key of `rows` may repeat: those within DUPLICATE_WINDOW of the
    rows' event-time minutes, as literal spans (so DuckDB skips row groups and column
    segments by zone map: a live batch's minutes, however large the store)."""
    minutes = sorted(pc.unique(pc.floor_temporal(rows.column("time"), unit="minute")).to_pylist())
    spans: list[list] = []
    for minute in minutes:
        if spans and minute - spans[-1][1] <= 2 * DUPLICATE_WINDOW:
            spans[-1][1] = minute
        else:
            spans.append([minute, minute])
    return " OR ".join(
        f"(time >= TIMESTAMP '{(low - DUPLICATE_WINDOW).isoformat()}' "
        f"AND time < TIMESTAMP '{(high + timedelta(minutes=1) + DUPLICATE_WINDOW).isoformat()}')"
        for low, high in spans)


_PRIMARY_KEYS: dict[tuple[str, str], bool] = {}  # (database, table) → has one; asked once per process


def _has_primary_key(conn: Connection, table_name: str) -> bool:
    place = (str(conn.engine.url), table_name)
    if place not in _PRIMARY_KEYS:
        _PRIMARY_KEYS[place] = bool(conn.connection.driver_connection.execute(
            "SELECT count(*) FROM duckdb_constraints() WHERE table_name = ? AND constraint_type = 'PRIMARY KEY'",
            [table_name]).fetchall()[0][0])
    return _PRIMARY_KEYS[place]


def bulk_append(conn: Connection, rows: pa.Table, *, table_name: str) -> int:
    """Append `rows` (Arrow, a subset of the table's columns) to any table, skipping rows whose
    key is already stored or repeated in `rows`: the bulk load of an import. Returns how
    many rows were new.

    Runs inside the caller's transaction, so a failed import leaves nothing behind.
    """
    if not conn.in_transaction():
        conn.begin()
    if conn.dialect.name == "postgresql":
        return _copy_insert_postgres(conn, rows, table_name=table_name)[1]
    if conn.dialect.name != "duckdb":
        raise NotImplementedError(f"bulk insert for {conn.dialect.name} is not implemented yet")
    return _insert_new_duckdb(conn, rows, metadata.tables[table_name], returning=False)[1]


def advance_sequences(conn: Connection) -> None:
    """After rows arrive with their own integer keys (an import), PostgreSQL's sequences
    behind autoincrement keys must move past them or the next insert collides."""
    if conn.dialect.name != "postgresql":
        return  # DuckDB tables here carry no sequences
    for table in metadata.sorted_tables:
        column = table.autoincrement_column
        if column is None:
            continue
        conn.exec_driver_sql(
            f"SELECT setval(pg_get_serial_sequence('\"{table.name}\"', '{column.name}'), "
            f'coalesce(max("{column.name}"), 0) + 1, false) FROM "{table.name}"'
        )


def max_value(engine: Engine, column: sa.Column) -> int:
    """The largest value of an integer column, 0 for an empty table."""
    with engine.connect() as conn:
        return conn.execute(sa.select(sa.func.coalesce(sa.func.max(column), 0))).scalar_one()


def append(conn: Connection, table: sa.Table, rows: pa.Table) -> None:
    """Append Arrow rows to a table: columnar on DuckDB, a multi-row insert elsewhere."""
    if rows.num_rows == 0:
        return
    if conn.dialect.name == "duckdb":
        raw = conn.connection.driver_connection
        columns = ", ".join(f'"{name}"' for name in rows.column_names)
        raw.register("_append", rows)
        try:
            raw.execute(f"INSERT INTO {table.name} ({columns}) SELECT {columns} FROM _append")
        finally:
            raw.unregister("_append")
    else:
        conn.execute(table.insert(), rows.to_pylist())


def upsert(conn: Connection, table: sa.Table, rows: pa.Table, *, newer: str) -> None:
    """Insert `rows` (one per primary key), or update the stored row where this one's `newer`
    column is later: state tables (the latest of something per key), not history."""
    if rows.num_rows == 0:
        return
    key = ", ".join(f'"{column.name}"' for column in table.primary_key.columns)
    columns = ", ".join(f'"{name}"' for name in rows.column_names)
    updates = ", ".join(f'"{name}" = excluded."{name}"' for name in rows.column_names if name not in table.primary_key.columns)
    conflict = f'ON CONFLICT ({key}) DO UPDATE SET {updates} WHERE excluded."{newer}" > "{table.name}"."{newer}"'
    if conn.dialect.name == "duckdb":
        if not conn.in_transaction():
            conn.begin()
        raw = conn.connection.driver_connection
        raw.register("_upsert", rows)
        try:
            raw.execute(f'INSERT INTO "{table.name}" ({columns}) SELECT {columns} FROM _upsert {conflict}')
        finally:
            raw.unregister("_upsert")
        return
    # One array parameter per column, not one parameter per value: a VALUES list of 2,048
    # hosts × 4 columns spent most of the writer's time compiling and binding the statement.
    arrays = ", ".join(f"CAST(:{name} AS {table.c[name].type.compile(dialect=conn.dialect)}[])" for name in rows.column_names)
    params = {name: rows.column(name).to_pylist() for name in rows.column_names}
    conn.execute(sa.text(f'INSERT INTO "{table.name}" ({columns}) SELECT * FROM unnest({arrays}) {conflict}'), params)


def _create_postgres_indexes(conn: Connection) -> None:
    for table_name, columns in UNIQUE_KEYS.items():
        if not metadata.tables[table_name].primary_key.columns:
            quoted = ", ".join(f'"{column}"' for column in columns)
            conn.exec_driver_sql(f'CREATE UNIQUE INDEX IF NOT EXISTS "ux_{table_name}_{"_".join(columns)}" '
                                 f'ON "{table_name}" ({quoted})')
    for table_name, indexes in POSTGRES_INDEXES.items():
        for columns in indexes:
            parts = [column.split() for column in columns]  # a column, then perhaps its operator class
            name = f"ix_{table_name}_{'_'.join(part[0] for part in parts)}"
            quoted = ", ".join(" ".join([f'"{part[0]}"', *part[1:]]) for part in parts)
            conn.exec_driver_sql(f'CREATE INDEX IF NOT EXISTS "{name}" ON "{table_name}" ({quoted})')


def _create_postgres_sequences(conn: Connection) -> None:
    """Each sequence exists and is past every stored number (a store written before it
    existed, or by an import, keeps its numbers)."""
    for table_name, (column, sequence) in SEQUENCES.items():
        conn.exec_driver_sql(f'CREATE SEQUENCE IF NOT EXISTS "{sequence}"')
        conn.exec_driver_sql(
            f"SELECT setval('\"{sequence}\"', stored) FROM "
            f'(SELECT max("{column}") AS stored FROM "{table_name}") AS top '
            f'WHERE stored >= (SELECT last_value FROM "{sequence}")'
        )


def _copy_insert_postgres(
    conn: Connection, rows: pa.Table, *, table_name: str, returning: bool = False
) -> tuple[list, int]:
    """COPY `rows` into a per-connection temp table, then move the rows whose primary key is
    new into `table_name` in one statement. One row per key survives: the lowest `seq`
    when the table has one (the first to arrive), otherwise any. A table in `SEQUENCES`
    has that column renumbered from its database sequence, in commit order (see there).

    Returns the first key column of the inserted rows (when `returning`) and their count.
    """
    table = metadata.tables[table_name]
    key = table_key(table)
    rows = _naive_utc(_without_nul(rows, table))
    staging = f"_incoming_{table_name}"
    columns = ", ".join(f'"{name}"' for name in rows.column_names)
    conn.exec_driver_sql(
        f'CREATE TEMP TABLE IF NOT EXISTS "{staging}" (LIKE "{table_name}") ON COMMIT DELETE ROWS'
    )
    buffer = io.BytesIO()
    pa_csv.write_csv(rows, buffer, pa_csv.WriteOptions(include_header=False))
    raw = conn.connection.driver_connection
    with raw.cursor() as cursor:
        with cursor.copy(f'COPY "{staging}" ({columns}) FROM STDIN (FORMAT csv)') as copy:
            copy.write(buffer.getbuffer())
    if key:
        keys = ", ".join(f'"{name}"' for name in key)
        order = keys + (', "seq"' if "seq" in rows.column_names else "")
        stored = " AND ".join(f'"{table_name}"."{name}" = i."{name}"' for name in key)
        new = f'WHERE NOT EXISTS (SELECT FROM "{table_name}" WHERE {stored})' if _unenforced(table) else ""
        select = f'SELECT DISTINCT ON ({keys}) {columns} FROM "{staging}" i {new} ORDER BY {order}'
        conflict = " ON CONFLICT DO NOTHING"
    else:
        select, conflict = f'SELECT {columns} FROM "{staging}"', ""
    numbered = SEQUENCES.get(table_name)
    if numbered is not None and numbered[0] in rows.column_names:
        column, sequence = numbered
        renumbered = ", ".join(f"nextval('\"{sequence}\"')" if name == column else f'"{name}"'
                               for name in rows.column_names)
        select = f'SELECT {renumbered} FROM ({select}) AS first ORDER BY "{column}"'
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_INGEST_LOCK})")
    back = f' RETURNING "{key[0]}"' if returning and key else ""
    result = conn.exec_driver_sql(f'INSERT INTO "{table_name}" ({columns}) {select}{conflict}{back}')
    inserted = [row[0] for row in result] if back else []
    count = len(inserted) if back else result.rowcount
    conn.exec_driver_sql(f'TRUNCATE "{staging}"')  # a later COPY in this transaction starts empty
    return inserted, count


def _naive_utc(rows: pa.Table) -> pa.Table:
    """Zoned Arrow timestamps hold UTC instants: drop the zone, the store keeps naive UTC."""
    for index, field in enumerate(rows.schema):
        if pa.types.is_timestamp(field.type) and field.type.tz is not None:
            naive = rows.column(index).cast(pa.timestamp(field.type.unit))
            rows = rows.set_column(index, field.name, naive)
    return rows


def _without_nul(rows: pa.Table, table: sa.Table) -> pa.Table:
    """PostgreSQL text and jsonb cannot hold U+0000: store U+FFFD (the replacement
    character) in its place rather than fail the whole group commit."""
    for index, name in enumerate(rows.column_names):
        column = rows.column(index)
        if not pa.types.is_string(column.type) or name not in table.c:
            continue
        is_json = isinstance(table.c[name].type, sa.JSON)
        needle = "\\u0000" if is_json else "\x00"
        if not pc.any(pc.match_substring(column, needle)).as_py():
            continue
        if is_json:
            fixed = [None if text is None else orjson.dumps(_replace_nul(orjson.loads(text))).decode()
                     for text in column.to_pylist()]
            rows = rows.set_column(index, name, pa.array(fixed, pa.string()))
        else:
            rows = rows.set_column(index, name, pc.replace_substring(column, "\x00", "\ufffd"))
    return rows


def _replace_nul(value):
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [_replace_nul(item) for item in value]
    if isinstance(value, dict):
        return {_replace_nul(k): _replace_nul(v) for k, v in value.items()}
    return value
