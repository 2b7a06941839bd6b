"""The on-disk queue between parsing and posting: SQLite (stdlib), WAL, synchronous=FULL.

Events and the sources' read positions are committed in one transaction, so after a crash
the positions never run ahead of what was queued: lines past them are read again and
produce the same ids. The queue is bounded; when full the agent stops reading (the
positions hold) rather than dropping anything.
"""

import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson


class Spool:
    """FIFO of serialised events plus the saved position of every source."""

    def __init__(self, path: Path, *, max_events: int) -> None:
        self.max_events = max_events
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("CREATE TABLE IF NOT EXISTS queue (seq INTEGER PRIMARY KEY AUTOINCREMENT, event BLOB NOT NULL)")
        self._db.execute("CREATE TABLE IF NOT EXISTS positions (source TEXT PRIMARY KEY, state TEXT NOT NULL)")
        self._size = self._db.execute("SELECT count(*) FROM queue").fetchone()[0]

    def __len__(self) -> int:
        return self._size

    @property
    def full(self) -> bool:
        return self._size >= self.max_events

    def positions(self) -> dict[str, str]:
        with self._lock:
            return dict(self._db.execute("SELECT source, state FROM positions").fetchall())

    def commit(self, events: Iterable[dict[str, Any]], positions: dict[str, str]) -> list[dict[str, Any]]:
        """Queue `events` and save `positions`, atomically and durably; answers the events
        that cannot be JSON (a number past 64 bits in a garbled line), which are left out."""
        rows, unfit = [], []
        for event in events:
            try:
                rows.append((orjson.dumps(event),))
            except TypeError:  # orjson.JSONEncodeError is one
                unfit.append(event)
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT INTO queue (event) VALUES (?)", rows)
                self._db.executemany("INSERT OR REPLACE INTO positions (source, state) VALUES (?, ?)",
                                     positions.items())
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._size += len(rows)
        return unfit

    def peek(self, limit: int) -> list[tuple[int, bytes]]:
        """The oldest `limit` events as (seq, JSON), in order."""
        with self._lock:
            return self._db.execute("SELECT seq, event FROM queue ORDER BY seq LIMIT ?", (limit,)).fetchall()

    def remove_through(self, seq: int) -> None:
        """Forget every event up to and including `seq` (they were delivered or dead-lettered)."""
        with self._lock:
            removed = self._db.execute("DELETE FROM queue WHERE seq <= ?", (seq,)).rowcount
            self._size -= removed

    def close(self) -> None:
        with self._lock:
            self._db.close()
