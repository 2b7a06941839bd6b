"""The database: engine from a URL, the versioned schema, and the columnar bulk insert.

Tables are declared on `metadata` by each domain's `models.py`; this module owns creating
them, recording the schema version, and the per-dialect fast path for appending events.
"""

from pathlib import Path

import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

metadata = sa.MetaData()

SCHEMA_VERSION = 1

schema_info = sa.Table(
    "schema_info",
    metadata,
    sa.Column("version", sa.Integer, nullable=False),
)


class SchemaVersionError(RuntimeError):
    """The database was written by a newer faultgraph than this one."""


def make_engine(url: str) -> Engine:
    """An engine for `url`; a DuckDB file's parent directory is created first."""
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() == "duckdb" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    return sa.create_engine(parsed)


def init_schema(engine: Engine) -> None:
    """Create missing tables and record the schema version; refuse a newer database."""
    import service.events.models  # noqa: F401  (each registers its tables on `metadata`)
    import service.incidents.models  # noqa: F401
    import service.jobs.models  # noqa: F401
    import service.topology.models  # noqa: F401

    metadata.create_all(engine)
    with engine.begin() as conn:
        version = conn.execute(sa.select(sa.func.max(schema_info.c.version))).scalar()
        if version is None:
            conn.execute(schema_info.insert().values(version=SCHEMA_VERSION))
        elif version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"database schema version {version} is newer than this faultgraph's "
                f"({SCHEMA_VERSION}); upgrade faultgraph"
            )


def insert_ignoring_duplicates(conn: Connection, rows: pa.Table, *, table_name: str) -> list[str]:
    """Append `rows` (an Arrow table with the table's columns and an `id` key); return the
    ids actually inserted. Ids already stored, or repeated within `rows`, are skipped.

    DuckDB reads the Arrow table in place (columnar, no per-row Python), which is what
    makes ingest run at hundreds of thousands of rows a second.
    """
    if conn.dialect.name != "duckdb":
        raise NotImplementedError(f"bulk insert for {conn.dialect.name} is not implemented yet")
    raw = conn.connection.driver_connection
    columns = ", ".join(f'"{name}"' for name in rows.column_names)
    raw.register("_incoming", rows)
    try:
        inserted = raw.execute(
            f"INSERT INTO {table_name} ({columns}) "
            f"SELECT {columns} FROM _incoming "
            "QUALIFY row_number() OVER (PARTITION BY id ORDER BY seq) = 1 "
            "ON CONFLICT DO NOTHING RETURNING id"
        ).fetchall()
    finally:
        raw.unregister("_incoming")
    return [row[0] for row in inserted]


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
