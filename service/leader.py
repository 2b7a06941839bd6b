"""Leadership among replicas: which one process runs the incident engine's background passes
and the liveness watcher.

Several `faultgraph serve` processes may share one PostgreSQL: all of them accept posts and
serve reads, but background work that writes derived state (incidents, lost-host events)
must happen in one place. The leader is whoever holds a PostgreSQL *session-level*
advisory lock (`LEASE_LOCK`) on a connection kept for nothing else. The server releases
such a lock the moment the session ends, so when the holder dies (crash, SIGKILL, lost
network once TCP keepalives notice) the lock is free, and the survivors, who try for it
every `interval` seconds, take over within about a second. The holder re-checks its
connection on the same period and steps down as soon as the check fails.

A lease alone cannot exclude overlap: a holder whose connection just broke may be
mid-pass when another replica takes over. So the engine pass itself is serialised in the
database as well (`ENGINE_LOCK`, a transaction-level advisory lock taken by every pass,
see `service.incidents.flows.analyze_pending`): the lease decides who *starts* passes,
the engine lock makes any two passes, from any replicas, run one after the other.

On DuckDB there is one process per database, so that process always leads.
"""

import logging
from collections.abc import Callable

import psycopg
from sqlalchemy.engine import Engine

from faultgraph.service import store
from faultgraph.service.loops import Loop

log = logging.getLogger(__name__)

# Advisory lock keys (one 64-bit space per database); distinct from store's schema lock.
LEASE_LOCK = 0x6667_6C65_6164  # "fgLead": held by the leader's session
ENGINE_LOCK = 0x6667_656E_6769  # "fgEngi": held by each engine pass's transaction


class Lease:
    """The leader lease of this process; `held` says whether it leads right now.

    `on_gain` runs (on the lease thread) each time this process becomes leader, so the
    caller can start work at once instead of at its next tick.
    """

    def __init__(self, engine: Engine, *, interval: float = 1.0, on_gain: Callable[[], None] | None = None) -> None:
        self._on_gain = on_gain
        self._held = engine.dialect.name != "postgresql"  # an embedded store has one process
        self._conn: psycopg.Connection | None = None
        self._loop = Loop("lease", self._renew, interval=interval)
        if engine.dialect.name == "postgresql":
            self._dsn = store.libpq_dsn(engine.url)
            self._loop.start().wake()  # the first try at once, then every `interval`

    @property
    def held(self) -> bool:
        return self._held

    def close(self) -> None:
        """Stop trying and give the lease up (closing the session releases the lock)."""
        self._loop.close()
        self._drop()

    def _renew(self) -> None:
        try:
            self._check()
        except Exception:  # the database is unreachable: nobody here leads (retried next interval, no backoff)
            log.log(logging.WARNING if self._held else logging.DEBUG,
                    "leader lease check failed (was leading: %s)", self._held, exc_info=True)
            self._drop()

    def _check(self) -> None:
        if self._conn is None:
            # Keepalives both ways: the server notices a holder whose host died or was cut
            # off (and frees its lock) within ~11 s instead of the kernel's two hours, and
            # the holder notices a server gone quiet just as soon.
            self._conn = psycopg.connect(
                self._dsn, autocommit=True, connect_timeout=5, application_name="faultgraph-lease",
                keepalives=1, keepalives_idle=5, keepalives_interval=2, keepalives_count=3,
                options="-c statement_timeout=5000 -c tcp_keepalives_idle=5 "
                        "-c tcp_keepalives_interval=2 -c tcp_keepalives_count=3",
            )
        if self._held:
            self._conn.execute("SELECT 1")  # the session lives, so the lock is still ours
            return
        row = self._conn.execute("SELECT pg_try_advisory_lock(%s)", (LEASE_LOCK,)).fetchone()
        assert row is not None  # a SELECT of one value returns one row
        if row[0]:
            self._held = True
            log.info("this replica is now the leader (incident engine, liveness watcher)")
            if self._on_gain is not None:
                self._on_gain()

    def _drop(self) -> None:
        self._held = False
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:
                log.debug("closing the lease connection failed", exc_info=True)
