"""Commit notices between replicas on one PostgreSQL: another replica's events wake this
one's engine as soon as its burst settles, not at the engine's next backstop pass.

Each replica's writer sends `NOTIFY faultgraph_commits` (payload: its host and process id) in the
transaction of every group commit, so a notice arrives only for committed events.
Every replica listens on a connection of its own; a notice from another process starts
the same trailing debounce the local writer uses (`on_commits` once `quiet_s` pass without
a notice, or every `max_wait_s` of notices that never pause), so a storm spread over
replicas or `--workers` is analysed once when it settles. The engine's `leading()` still
decides whether a woken pass runs. A lost listening connection is reopened by the loop's
backoff; the backstop pass covers what arrives meanwhile. DuckDB has one process: nothing
to send or hear.
"""

import os
import socket
import threading
import time
from collections.abc import Callable

import psycopg
from sqlalchemy.engine import Connection, Engine

from faultgraph.service import store
from faultgraph.service.loops import Loop

CHANNEL = "faultgraph_commits"


def sender() -> str:
    """This process among the replicas: host and process id (containers' pids repeat)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def send(conn: Connection) -> None:
    """Queue this process's notice in `conn`'s transaction (PostgreSQL delivers it on commit)."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("SELECT pg_notify(%s, %s)", (CHANNEL, sender()))


class Listener:
    """Calls `on_commits` after other processes' commits settle; `close()` stops listening."""

    def __init__(self, engine: Engine, on_commits: Callable[[], None], *,
                 quiet_s: float = 0.2, max_wait_s: float = 5.0) -> None:
        self._dsn = store.libpq_dsn(engine.url)
        self._on_commits = on_commits
        self._quiet_s = quiet_s
        self._max_wait_s = max_wait_s
        self._own = sender()
        self._conn: psycopg.Connection | None = None
        self._first: float | None = None  # the first notice `on_commits` has not followed
        self._last = 0.0
        # Set once LISTEN is in effect: PostgreSQL delivers no notice sent before it.
        self.listening = threading.Event()
        self._loop = Loop("notices", self._listen, interval=0.0)
        self._loop.start()

    def close(self) -> None:
        self._loop.close()
        if self._conn is not None:
            self._conn.close()

    def _listen(self) -> None:
        """One pass: wait for a notice (at most until the debounce is due), then fire if due."""
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self._dsn, autocommit=True, connect_timeout=5,
                                         application_name="faultgraph-notices")
            self._conn.execute(f"LISTEN {CHANNEL}")
            self.listening.set()
        due = 1.0 if self._first is None else max(0.0, min(self._last + self._quiet_s, self._first + self._max_wait_s)
                                                   - time.monotonic())
        for notice in self._conn.notifies(timeout=due, stop_after=1):
            if notice.payload != self._own:
                self._last = time.monotonic()
                if self._first is None:
                    self._first = self._last
        now = time.monotonic()
        if self._first is not None and (now >= self._last + self._quiet_s or now >= self._first + self._max_wait_s):
            self._first = None
            self._on_commits()
