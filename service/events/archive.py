"""The archive of pruned days: Parquet partitions in a local folder or an S3-compatible bucket.

Layout, the same in a folder and under `s3://bucket/prefix`:
`events/day=YYYY-MM-DD/seq-FIRST-LAST.parquet`, in the export's Parquet format
(`transfer.arrow_rows`, `transfer.COMPRESSION`), so pyarrow, DuckDB's `read_parquet(…,
hive_partitioning = true)` or `faultgraph import` read it.

Which files count is recorded in the store (`archive_files`), in the transaction that
removes their rows: a file left by a pass that died before its commit is not listed, so a
reader never counts its rows twice (they are still live), and the next pass replaces it.

S3 goes through pyarrow's S3 filesystem, and readers run DuckDB over the files as a
pyarrow dataset: DuckDB's own httpfs extension cannot be installed without its download
site (see deploy/README.md, "Archive").
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from faultgraph.service import store, transfer
from faultgraph.service.config import Settings
from faultgraph.service.events.models import archive_files, events


@dataclass(frozen=True)
class Archive:
    """Where pruned days go: `root` on `filesystem` (a local folder or a bucket/prefix)."""

    target: str  # as configured, for messages
    filesystem: pafs.FileSystem
    root: str

    @property
    def remote(self) -> bool:
        return not isinstance(self.filesystem, pafs.LocalFileSystem)

    @staticmethod
    def name(day: date, first_seq: int, last_seq: int) -> str:
        """A day's file, relative to the root (what `archive_files.path` holds)."""
        return f"events/day={day.isoformat()}/seq-{first_seq}-{last_seq}.parquet"

    def full(self, name: str) -> str:
        return f"{self.root}/{name}"

    def write(self, name: str, chunks: Iterable[pa.Table]) -> None:
        """The chunks as one file, whole or not at all: a bucket shows an object only once its
        upload completed; in a folder the file is written hidden, synced, then renamed."""
        path = self.full(name)
        if self.remote:
            _write(path, chunks, self.filesystem)
            return
        final = Path(path)
        final.parent.mkdir(parents=True, exist_ok=True)
        partial = final.with_name(f".{final.name}.partial")  # hidden: readers of the folder skip it
        _write(str(partial), chunks, None)
        with open(partial, "rb") as handle:
            os.fsync(handle.fileno())
        partial.replace(final)

    def files_of(self, day: date) -> list[str]:
        """The names of the files in a day's folder, recorded or not."""
        folder = self.full(f"events/day={day.isoformat()}")
        selector = pafs.FileSelector(folder, allow_not_found=True)
        return [info.path.removeprefix(f"{self.root}/") for info in self.filesystem.get_file_info(selector)
                if info.type == pafs.FileType.File]

    def delete(self, names: Sequence[str]) -> None:
        for name in names:
            try:
                self.filesystem.delete_file(self.full(name))
            except FileNotFoundError:
                pass

    def query(self, sql: str, names: Sequence[str], params: Sequence[Any] = ()) -> list[tuple]:
        """`sql` over the named files as the relation `archived` (the events table's columns;
        a file from an older release lacking a column reads it as null)."""
        if not names:
            return []
        scanned = ds.dataset([self.full(name) for name in names], schema=transfer.arrow_schema(events),
                             format="parquet", filesystem=self.filesystem)
        with duckdb.connect() as db:
            db.register("archived", scanned)
            return db.execute(sql, list(params)).fetchall()


def _write(where: str, chunks: Iterable[pa.Table], filesystem: pafs.FileSystem | None) -> None:
    with pq.ParquetWriter(where, transfer.arrow_schema(events), compression=transfer.COMPRESSION,
                          filesystem=filesystem) as writer:
        for chunk in chunks:
            writer.write_table(chunk)


def open_archive(target: str, *, endpoint: str | None = None, region: str | None = None,
                 access_key: str | None = None, secret_key: str | None = None) -> Archive:
    """The archive at a folder or `s3://bucket/prefix` (an S3-compatible server at `endpoint`,
    else AWS; keys given, else the AWS SDK's own chain: AWS_ACCESS_KEY_ID, ~/.aws, roles).
    ValueError names what is wrong with the target."""
    if target.startswith("s3://"):
        bucket, _, prefix = target.removeprefix("s3://").partition("/")
        if not bucket:
            raise ValueError(f"archive {target!r}: no bucket (s3://bucket/prefix)")
        if (access_key is None) != (secret_key is None):
            raise ValueError("archive: give both the access key and the secret key, or neither")
        options: dict[str, Any] = {"connect_timeout": 10, "request_timeout": 60}
        if endpoint:
            parts = urlsplit(endpoint)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(f"archive endpoint {endpoint!r}: not an http(s)://host[:port] address")
            options |= {"endpoint_override": parts.netloc, "scheme": parts.scheme}
        if region:
            options["region"] = region
        if access_key is not None:
            options |= {"access_key": access_key, "secret_key": secret_key}
        root = f"{bucket}/{prefix.strip('/')}".rstrip("/")
        return Archive(target, pafs.S3FileSystem(**options), root)
    if "://" in target:
        raise ValueError(f"archive {target!r}: a folder or s3://bucket/prefix")
    return Archive(target, pafs.LocalFileSystem(), str(Path(target).expanduser().resolve()))


def from_settings(settings: Settings) -> Archive | None:
    """The configured archive, None when there is none."""
    if not settings.archive:
        return None
    secret = settings.archive_secret_key.get_secret_value() if settings.archive_secret_key else None
    return open_archive(settings.archive, endpoint=settings.archive_endpoint, region=settings.archive_region,
                        access_key=settings.archive_access_key, secret_key=secret)


def unread(conn: Connection, archive: Archive | None, *, since: datetime | None = None,
           until: datetime | None = None) -> str | None:
    """A note for an answer that reads raw events, when days of its window were archived
    but this server was not given the archive: its figures then count the live store only."""
    files = recorded(conn, since=since, until=until) if archive is None else []
    if not files:
        return None
    return (f"{len(files)} archived file(s) of this window are not read: the service was started without "
            "FAULTGRAPH_ARCHIVE (the folder or bucket `faultgraph prune --archive` wrote), so what reads raw "
            "events counts the live store only")


def recorded(conn: Connection, *, since: datetime | None = None, until: datetime | None = None) -> list[str]:
    """The archived files of the days `[since, until]` touch (every day without bounds)."""
    query = sa.select(archive_files.c.path)
    if since is not None:
        query = query.where(archive_files.c.day >= store.to_db_time(since).date())
    if until is not None:
        query = query.where(archive_files.c.day <= store.to_db_time(until).date())
    return list(conn.execute(query.order_by(archive_files.c.day, archive_files.c.first_seq)).scalars())
