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
from faultgraph.service.events.models import events
from faultgraph.service.progress.models import train_progress

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

    Into a store that has events of its own, the engine then reads the imported events
    afresh and folds their step reports into the job series again (`service/progress`):
    the series rows of a step whose reports the export holds are left to it, or the step
    would count twice; those of steps whose reports retention had pruned are imported.
    """
    manifest = read_manifest(directory)
    store.init_schema(engine)
    counts: dict[str, int] = {}
    with engine.begin() as conn:
        refolded: set[tuple[str, int]] | None = None
        for table in data_tables():
            path = _table_file(directory, manifest, table)
            if path is None:
                continue
            offset = 0
            if "seq" in table.c:
                offset = conn.execute(sa.select(sa.func.coalesce(sa.func.max(table.c.seq), 0))).scalar_one()
                if table is events and offset:
                    refolded = _reported_steps(path)
            counts[table.name] = 0
            try:
                parquet = pq.ParquetFile(path)
                read = 0
                for batch in parquet.iter_batches(batch_size=CHUNK_ROWS):
                    rows = pa.Table.from_batches([batch])
                    if table is train_progress:
                        rows = _progress_rows(rows, read, refolded)
                    read += batch.num_rows
                    rows = _conform(rows, table, path)
                    if offset:
                        index = rows.schema.get_field_index("seq")
                        shifted = pc.add(rows.column(index), pa.scalar(offset, pa.int64()))
                        rows = rows.set_column(index, "seq", shifted)
                    counts[table.name] += store.bulk_append(conn, rows, table_name=table.name)
            except pa.ArrowException as exc:
                raise ValueError(f"{path}: not a readable Parquet file: {exc}") from None
        store.advance_sequences(conn)
    return counts


def _table_file(directory: Path, manifest: dict, table: sa.Table) -> Path | None:
    """The export's file of `table`, None when the export has none (an older release's)."""
    entry = manifest["tables"].get(table.name)
    if entry is None:
        return None
    path = directory / str(entry.get("file", f"{table.name}.parquet"))
    if path.parent != directory or not path.is_file():
        raise ValueError(f"{directory}: the file of table {table.name} is missing or outside the export")
    return path


def _progress_rows(rows: pa.Table, read: int, refolded: set[tuple[str, int]] | None) -> pa.Table:
    """Series rows to import: without those of the `refolded` steps, and numbered where an
    export made before `through_seq` lacks it (minus their place in the file: the same
    for the same file, apart from every real fold's)."""
    if "through_seq" not in rows.column_names:
        rows = rows.append_column("through_seq", pa.array(range(-read - 1, -read - rows.num_rows - 1, -1), pa.int64()))
    if refolded:
        keep = [(job, step) not in refolded for job, step in
                zip(rows.column("job").to_pylist(), rows.column("step").to_pylist())]
        rows = rows.filter(pa.array(keep, pa.bool_()))
    return rows


def _reported_steps(path: Path) -> set[tuple[str, int]]:
    """The (job, step) of every step report in an export's events file."""
    try:
        rows = pq.read_table(path, columns=["kind", "job", "attrs"], filters=[("kind", "=", "train_step")])
    except (pa.ArrowException, KeyError) as exc:
        raise ValueError(f"{path}: not a readable events file: {exc}") from None
    found: set[tuple[str, int]] = set()
    for job, attrs in zip(rows.column("job").to_pylist(), rows.column("attrs").to_pylist()):
        step = orjson.loads(attrs).get("step") if job and attrs else None
        if isinstance(step, int):
            found.add((job, step))
    return found
