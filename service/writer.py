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
The thread is a `loops.Loop` running one group per pass, stopped by a marker on the queue.

A request on the event loop queues with `submit_async` and awaits a future of that loop:
after a commit the thread hands the loop all of the group's outcomes in one call, rather
than waking it once per request through a thread-safe future each (a storm's commit
answers hundreds of posts). Threads queue with `submit` and block on its future.
"""

import asyncio
import logging
import queue
import time
from collections import defaultdict
from collections.abc import Callable, Sized
from concurrent.futures import Future
from dataclasses import dataclass

import pyarrow as pa
from sqlalchemy.engine import Connection, Engine

from faultgraph.service.loops import Loop

log = logging.getLogger(__name__)


class WriterBusy(Exception):
    """The queue is full: the caller should answer 503 with Retry-After."""


@dataclass(slots=True)
class _Batch:
    rows: Sized  # an Arrow table, or what `convert` turns into one
    done: Future | None = None  # `submit`'s: a thread waits on it
    waiter: tuple[asyncio.AbstractEventLoop, asyncio.Future] | None = None  # `submit_async`'s


# A batch's outcome: how many of its rows were new, or why the commit failed.
Outcome = int | Exception


def _resolve(outcomes: list[tuple[Future | asyncio.Future, Outcome]]) -> None:
    """Set each future (an event loop's on that loop), skipping one already done: its waiter
    was cancelled."""
    for future, outcome in outcomes:
        if future.done():
            continue
        if isinstance(outcome, Exception):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)


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
        self._committed_at: float | None = None  # the last commit `on_quiet` has not followed
        self._waiting_since = 0.0  # the first such commit
        self._last_commit = float("-inf")
        self.commits = 0
        # Passes back to back: each blocks on the queue (or the quiet deadline) for its group.
        self._loop = Loop("writer", self._next, interval=0.0).start()

    @property
    def depth(self) -> int:
        return self._queue.qsize()

    @property
    def settling(self) -> bool:
        """Commits were made that `on_quiet` has not yet followed: a burst is under way."""
        return self._committed_at is not None

    def idle_for(self) -> float:
        """Seconds since the last commit: how long ingest has paused. The engine rests
        between the steps of a pass that is behind only while it has not."""
        return time.monotonic() - self._last_commit

    def submit(self, rows: Sized) -> Future:
        """Queue `rows` (an Arrow table, or a batch `convert` takes); the future resolves to
        how many of them were new (stored)."""
        done: Future = Future()
        self._put(_Batch(rows, done=done))
        return done

    def submit_async(self, rows: Sized) -> asyncio.Future:
        """`submit` from a coroutine: the future belongs to the running event loop."""
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self._put(_Batch(rows, waiter=(loop, waiter)))
        return waiter

    def _put(self, batch: _Batch) -> None:
        try:
            self._queue.put_nowait(batch)
        except queue.Full:
            raise WriterBusy from None

    def close(self) -> None:
        """Commit what is queued, then stop the thread (the queue is FIFO: the stop marker
        comes after every batch submitted before it)."""
        self._queue.put(None)
        self._loop.join(timeout=None)

    def _next(self) -> None:
        """One pass: commit the next group, or follow a settled burst with `on_quiet`."""
        if self._committed_at is not None and time.monotonic() - self._waiting_since >= self._max_wait_s:
            self._quiet()
        timeout = None if self._committed_at is None else max(0.0, self._committed_at + self._quiet_s - time.monotonic())
        try:
            first = self._queue.get(timeout=timeout)
        except queue.Empty:
            self._quiet()
            return
        if first is None:
            self._finish()
            return
        group, size, stopping = [first], len(first.rows), False
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
            now = self._last_commit = time.monotonic()
            if self._committed_at is None:
                self._waiting_since = now
            self._committed_at = now
        if stopping:
            self._finish()

    def _finish(self) -> None:
        if self._committed_at is not None:
            self._quiet()
        self._loop.stop()

    def _quiet(self) -> None:
        self._committed_at = None
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
            self._settle([(batch, exc) for batch in group])
            return False
        if len(inserted) == rows.num_rows:  # the common case: every row was new
            self._settle([(batch, len(batch.rows)) for batch in group])
            return True
        # An id repeated across or within batches was stored once: credit its first sender.
        claimed: set[str] = set()
        ids = iter(rows.column("id").to_pylist())
        outcomes: list[tuple[_Batch, Outcome]] = []
        for batch in group:
            accepted = 0
            for _, event_id in zip(range(len(batch.rows)), ids, strict=False):
                if event_id in inserted and event_id not in claimed:
                    claimed.add(event_id)
                    accepted += 1
            outcomes.append((batch, accepted))
        self._settle(outcomes)
        return True

    @staticmethod
    def _settle(outcomes: list[tuple[_Batch, Outcome]]) -> None:
        """Resolve each batch's future: a thread's here, an event loop's in one call per loop."""
        threads: list[tuple[Future | asyncio.Future, Outcome]] = []
        on_loops: dict[asyncio.AbstractEventLoop, list[tuple[Future | asyncio.Future, Outcome]]] = defaultdict(list)
        for batch, outcome in outcomes:
            if batch.waiter is not None:
                loop, waiter = batch.waiter
                on_loops[loop].append((waiter, outcome))
            elif batch.done is not None:
                threads.append((batch.done, outcome))
        _resolve(threads)
        for loop, settled in on_loops.items():
            try:
                loop.call_soon_threadsafe(_resolve, settled)
            except RuntimeError:  # the loop has closed (shutdown): nobody awaits these
                log.info("event loop closed before %d commit outcomes could be delivered", len(settled))
