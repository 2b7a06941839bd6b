"""Export every table to Parquet files and import them into any backend: the way from an
embedded DuckDB file to a shared PostgreSQL (or back, or into a fresh machine).

An export directory holds `<table>.parquet` per table and `manifest.json` (the schema
version and row counts). Tables are whatever the domains registered on `store.metadata`,
so new tables travel without changes here.
"""

import json
from collections.abc import Iterator
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from faultgraph.service import store

FORMAT = "faultgraph-export"
MANIFEST = "manifest.json"
CHUNK_ROWS = 50_000
# One Parquet format for the export and the archive of pruned days (service/events/archive.py):
# the table's columns as `arrow_schema` types, JSON as its text, this compression.
COMPRESSION = "zstd"

# Tables that describe the database rather than hold data: recorded in the manifest instead.
_SKIPPED = {store.schema_info.name}


def arrow_type(column: sa.Column) -> pa.DataType:
    """The Parquet column type of a table column; JSON travels as its text."""
    kind = column.type
    if isinstance(kind, sa.JSON):
        return pa.string()
    if isinstance(kind, sa.Boolean):
        return pa.bool_()
    if isinstance(kind, sa.SmallInteger):
        return pa.int16()
    if isinstance(kind, sa.BigInteger):
        return pa.int64()
    if isinstance(kind, sa.Integer):
        return pa.int32() if type(kind) is sa.Integer else pa.int64()
    if isinstance(kind, sa.Float):
        return pa.float64()
    if isinstance(kind, sa.Numeric):
        return pa.float64()
    if isinstance(kind, sa.DateTime):
        return pa.timestamp("us", tz="UTC") if kind.timezone else pa.timestamp("us")
    if isinstance(kind, sa.Date):
        return pa.date32()
    if isinstance(kind, sa.LargeBinary):
        return pa.binary()
    if isinstance(kind, sa.String | sa.Enum):
        return pa.string()
    raise ValueError(f"{column.table.name}.{column.name}: no Parquet mapping for column type {kind!r}")


def arrow_schema(table: sa.Table) -> pa.Schema:
    return pa.schema([pa.field(column.name, arrow_type(column), nullable=column.nullable) for column in table.columns])


def arrow_rows(table: sa.Table, records: list[dict]) -> pa.Table:
    """Rows of `table` (dicts from a select) as an Arrow table of its Parquet schema: JSON
    columns become their text, as both the export and the archive store them."""
    json_columns = [c.name for c in table.columns if isinstance(c.type, sa.JSON)]
    for record in records:
        for name in json_columns:
            value = record[name]
            if value is not None and not isinstance(value, str):
                record[name] = orjson.dumps(value).decode()
    return pa.Table.from_pylist(records, schema=arrow_schema(table))


def data_tables() -> list[sa.Table]:
    """Every data table, parents before children (the order an import must follow)."""
    store.register_tables()
    return [table for table in store.metadata.sorted_tables if table.name not in _SKIPPED]


def _chunks(conn: Connection, table: sa.Table) -> Iterator[pa.Table]:
    order = list(table.primary_key.columns) or list(table.columns)
    result = conn.execution_options(yield_per=CHUNK_ROWS).execute(sa.select(table).order_by(*order))
    for partition in result.partitions():
        yield arrow_rows(table, [row._asdict() for row in partition])


def export_all(engine: Engine, directory: Path) -> dict[str, int]:
    """Write every table of the store at `engine` under `directory`; rows written per table.

    All tables are read in one transaction, so the files are one consistent snapshot.
    """
    directory.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            version = conn.execute(sa.select(sa.func.max(store.schema_info.c.version))).scalar()
            for table in data_tables():
                path = directory / f"{table.name}.parquet"
                with pq.ParquetWriter(path, arrow_schema(table), compression=COMPRESSION) as writer:
                    counts[table.name] = 0
                    for chunk in _chunks(conn, table):
                        writer.write_table(chunk)
                        counts[table.name] += chunk.num_rows
    manifest = {"format": FORMAT, "schema_version": version or store.SCHEMA_VERSION,
                "tables": {name: {"file": f"{name}.parquet", "rows": rows} for name, rows in counts.items()}}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return counts


def read_manifest(directory: Path) -> dict:
    """The manifest of an export, checked: ValueError says what is wrong with the directory."""
    path = directory / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"{directory}: not a faultgraph export (no {MANIFEST})") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: unreadable manifest: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or not isinstance(manifest.get("tables"), dict):
        raise ValueError(f"{path}: not a faultgraph export manifest")
    version = manifest.get("schema_version")
    if not isinstance(version, int) or version > store.SCHEMA_VERSION:
        raise ValueError(f"{path}: schema version {version!r} is newer than this faultgraph's "
                         f"({store.SCHEMA_VERSION}); upgrade faultgraph to import it")
    known = {table.name for table in data_tables()}
    unknown = sorted(set(manifest["tables"]) - known)
    if unknown:
        raise ValueError(f"{path}: tables this faultgraph does not know: {', '.join(unknown)}")
    return manifest


def _conform(batch: pa.Table, table: sa.Table, path: Path) -> pa.Table:
    """A Parquet batch as the table's columns: missing nullable columns become nulls."""
    schema = arrow_schema(table)
    extra = sorted(set(batch.column_names) - set(schema.names))
    if extra:
        raise ValueError(f"{path}: columns {', '.join(extra)} are not in table {table.name}")
    columns = []
    for field in schema:
        if field.name in batch.column_names:
            try:
                columns.append(batch.column(field.name).cast(field.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise ValueError(f"{path}: column {field.name} does not fit {field.type}: {exc}") from None
        elif field.nullable:
            columns.append(pa.nulls(batch.num_rows, field.type))
        else:
            raise ValueError(f"{path}: required column {field.name} of {table.name} is missing")
    return pa.Table.from_arrays(columns, schema=schema)


def import_all(engine: Engine, directory: Path) -> dict[str, int]:
    """Load an export into the store at `engine` (created if empty); new rows per table.

    Rows whose key is already stored are skipped, so importing twice changes nothing. Event
    `seq` numbers are shifted past the store's own, so an import lands as newly arrived.
    Everything happens in one transaction: an error leaves the store as it was. Stop the
    service while importing: its writer numbers `seq` from what it saw at start.
    """
    manifest = read_manifest(directory)
    store.init_schema(engine)
    counts: dict[str, int] = {}
    with engine.begin() as conn:
        for table in data_tables():
            entry = manifest["tables"].get(table.name)
            if entry is None:
                continue
            path = directory / str(entry.get("file", f"{table.name}.parquet"))
            if path.parent != directory or not path.is_file():
                raise ValueError(f"{directory}: the file of table {table.name} is missing or outside the export")
            offset = 0
            if "seq" in table.c:
                offset = conn.execute(sa.select(sa.func.coalesce(sa.func.max(table.c.seq), 0))).scalar_one()
            counts[table.name] = 0
            try:
                parquet = pq.ParquetFile(path)
                for batch in parquet.iter_batches(batch_size=CHUNK_ROWS):
                    rows = _conform(pa.Table.from_batches([batch]), table, path)
                    if offset:
                        index = rows.schema.get_field_index("seq")
                        shifted = pc.add(rows.column(index), pa.scalar(offset, pa.int64()))
                        rows = rows.set_column(index, "seq", shifted)
                    counts[table.name] += store.bulk_append(conn, rows, table_name=table.name)
            except pa.ArrowException as exc:
                raise ValueError(f"{path}: not a readable Parquet file: {exc}") from None
        store.advance_sequences(conn)
    return counts
