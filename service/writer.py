"""The single writer: every insert goes through one thread that commits groups of batches.

DuckDB allows one writer per database, and one commit per HTTP request would make fsync the
bottleneck; so requests queue their Arrow batches here, the thread gathers whatever is
waiting into one transaction (group commit), and each request's future resolves only after
that commit: a 2xx always means durable.
"""

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

import pyarrow as pa
from sqlalchemy.engine import Connection, Engine

log = logging.getLogger(__name__)


class WriterBusy(Exception):
    """The queue is full: the caller should answer 503 with Retry-After."""


@dataclass
class _Batch:
    rows: pa.Table
    done: Future = field(default_factory=Future)


# (connection, concatenated rows) → ids actually inserted
InsertFn = Callable[[Connection, pa.Table], list[str]]


class GroupWriter:
    """Owns the write path of one table; `submit` returns a future of the inserted ids."""

    def __init__(
        self, engine: Engine, insert: InsertFn, *, first_seq: int, max_queue: int, max_group_rows: int
    ) -> None:
        self._engine = engine
        self._next_seq = first_seq
        self._insert = insert
        self._queue: queue.Queue[_Batch | None] = queue.Queue(maxsize=max_queue)
        self._max_group_rows = max_group_rows
        self._thread = threading.Thread(target=self._run, name="faultgraph-writer", daemon=True)
        self.commits = 0
        self._thread.start()

    @property
    def depth(self) -> int:
        return self._queue.qsize()

    def submit(self, rows: pa.Table) -> Future:
        """Queue `rows`; the future resolves to how many of them were new (stored)."""
        batch = _Batch(rows)
        try:
            self._queue.put_nowait(batch)
        except queue.Full:
            raise WriterBusy from None
        return batch.done

    def close(self) -> None:
        """Commit what is queued, then stop the thread."""
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        stopping = False
        while not stopping:
            first = self._queue.get()
            if first is None:
                return
            group = [first]
            size = first.rows.num_rows
            while size < self._max_group_rows:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stopping = True
                    break
                group.append(more)
                size += more.rows.num_rows
            self._commit(group)

    def _commit(self, group: list[_Batch]) -> None:
        try:
            rows = pa.concat_tables([batch.rows for batch in group]) if len(group) > 1 else group[0].rows
            # Arrival order, gap-free per commit: the engine reads "everything after seq N".
            seq = pa.array(range(self._next_seq, self._next_seq + rows.num_rows), pa.int64())
            rows = rows.append_column("seq", seq)
            with self._engine.connect() as conn:
                inserted = set(self._insert(conn, rows))
                conn.commit()
            self.commits += 1
            self._next_seq += rows.num_rows
        except Exception as exc:  # the store failed: every waiting request must hear it
            log.exception("group commit of %d batches failed", len(group))
            for batch in group:
                batch.done.set_exception(exc)
            return
        if len(inserted) == rows.num_rows:  # the common case: every row was new
            for batch in group:
                batch.done.set_result(batch.rows.num_rows)
            return
        # An id repeated across or within batches was stored once: credit its first sender.
        claimed: set[str] = set()
        for batch in group:
            accepted = 0
            for event_id in batch.rows.column("id").to_pylist():
                if event_id in inserted and event_id not in claimed:
                    claimed.add(event_id)
                    accepted += 1
            batch.done.set_result(accepted)
