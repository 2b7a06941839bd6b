"""The single writer: every insert goes through one thread that commits groups of batches.

DuckDB allows one writer per database, and one commit per HTTP request would make fsync the
bottleneck; so requests queue their Arrow batches here, the thread gathers whatever is
waiting into one transaction (group commit), and each request's future resolves only after
that commit: a 2xx always means durable.

A request may queue its validated events rather than an Arrow table (`convert` given): the
thread then builds one table for the whole group, so thousands of small posts in a storm
pay Arrow's fixed per-table cost once per commit instead of once each. After a commit the
thread calls `on_quiet` once no further commit followed for `quiet_s` (a trailing debounce),
or after `max_wait_s` of commits that never pause: the incident engine runs once a storm
settles rather than re-reading it between its commits, and at a steady pace under a stream;
`settling` says a burst is still being committed (the engine's own timer waits for it too).
"""

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

import pyarrow as pa
from sqlalchemy.engine import Connection, Engine

log = logging.getLogger(__name__)


class WriterBusy(Exception):
    """The queue is full: the caller should answer 503 with Retry-After."""


@dataclass
class _Batch:
    rows: Sequence  # an Arrow table, or what `convert` turns into one
    done: Future = field(default_factory=Future)


# (connection, concatenated rows) → ids actually inserted
InsertFn = Callable[[Connection, pa.Table], list[str]]
# the queued batches of one group → one Arrow table, their rows in order
ConvertFn = Callable[[list], pa.Table]


class GroupWriter:
    """Owns the write path of one table; `submit` returns a future of the inserted ids."""

    def __init__(
        self, engine: Engine, insert: InsertFn, *, first_seq: int, max_queue: int, max_group_rows: int,
        convert: ConvertFn | None = None, also: Callable[[Connection, list], None] | None = None,
        on_quiet: Callable[[], None] = lambda: None, quiet_s: float = 0.2, max_wait_s: float = 5.0,
    ) -> None:
        """`also(conn, batches)` writes whatever else the batches carry (host state) in the
        same transaction as their rows."""
        self._engine = engine
        self._next_seq = first_seq
        self._insert = insert
        self._convert = convert
        self._also = also
        self._on_quiet = on_quiet
        self._quiet_s = quiet_s
        self._max_wait_s = max_wait_s
        self._queue: queue.Queue[_Batch | None] = queue.Queue(maxsize=max_queue)
        self._max_group_rows = max_group_rows
        self._thread = threading.Thread(target=self._run, name="faultgraph-writer", daemon=True)
        self.commits = 0
        self.settling = False  # commits were made that `on_quiet` has not yet followed
        self._thread.start()

    @property
    def depth(self) -> int:
        return self._queue.qsize()

    def submit(self, rows: Sequence) -> Future:
        """Queue `rows` (an Arrow table, or a batch `convert` takes); the future resolves to
        how many of them were new (stored)."""
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
        committed_at: float | None = None  # the last commit the quiet callback has not followed
        waiting_since = 0.0  # the first such commit
        while not stopping:
            if committed_at is not None and time.monotonic() - waiting_since >= self._max_wait_s:
                committed_at = None
                self._quiet()
            try:
                timeout = None if committed_at is None else max(0.0, committed_at + self._quiet_s - time.monotonic())
                first = self._queue.get(timeout=timeout)
            except queue.Empty:
                committed_at = None
                self._quiet()
                continue
            if first is None:
                if committed_at is not None:
                    self._quiet()
                return
            group = [first]
            size = len(first.rows)
            while size < self._max_group_rows:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stopping = True
                    break
                group.append(more)
                size += len(more.rows)
            if self._commit(group):
                if committed_at is None:
                    waiting_since = time.monotonic()
                committed_at = time.monotonic()
                self.settling = True
        if committed_at is not None:
            self._quiet()

    def _quiet(self) -> None:
        self.settling = False
        try:
            self._on_quiet()
        except Exception:
            log.exception("after-commit callback failed")

    def _rows(self, group: list[_Batch]) -> pa.Table:
        if self._convert is not None:
            return self._convert([batch.rows for batch in group])
        return pa.concat_tables([batch.rows for batch in group]) if len(group) > 1 else group[0].rows

    def _commit(self, group: list[_Batch]) -> bool:
        """One transaction for the group; every batch's future is resolved either way."""
        try:
            rows = self._rows(group)
            # Arrival order, gap-free per commit: the engine reads "everything after seq N".
            seq = pa.array(range(self._next_seq, self._next_seq + rows.num_rows), pa.int64())
            rows = rows.append_column("seq", seq)
            with self._engine.connect() as conn:
                inserted = set(self._insert(conn, rows))
                if self._also is not None:
                    self._also(conn, [batch.rows for batch in group])
                conn.commit()
            self.commits += 1
            self._next_seq += rows.num_rows
        except Exception as exc:  # the store failed: every waiting request must hear it
            log.exception("group commit of %d batches failed", len(group))
            for batch in group:
                batch.done.set_exception(exc)
            return False
        if len(inserted) == rows.num_rows:  # the common case: every row was new
            for batch in group:
                batch.done.set_result(len(batch.rows))
            return True
        # An id repeated across or within batches was stored once: credit its first sender.
        claimed: set[str] = set()
        ids = iter(rows.column("id").to_pylist())
        for batch in group:
            accepted = 0
            for _, event_id in zip(range(len(batch.rows)), ids, strict=False):
                if event_id in inserted and event_id not in claimed:
                    claimed.add(event_id)
                    accepted += 1
            batch.done.set_result(accepted)
        return True
