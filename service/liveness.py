"""Host liveness: a host whose agent sends heartbeats and then goes quiet is marked lost.

Agents post `host_heartbeat` (state `ok`) every few seconds; only hosts that have done so
are watched, so hosts whose logs arrive through a central forwarder are never flagged.
When a watched host has been silent for `timeout`, the service stores a `host_heartbeat`
event with state `lost` at the moment it became overdue, which the engine reads as a
silent host (SPEC §5 evidence: silence); the next heartbeat clears it, and the service
stores that transition too (`ok`, with `back`). The `ok` heartbeats themselves are not
events: each updates its host's row in `hosts_seen` (last seen, clock offset).

With replicas, an agent's heartbeats land on whichever replica the load balancer picks,
but only the leader watches: so the leader also learns, each period, what any replica
wrote to `hosts_seen` (`stored_beats`: one row per host, whatever the store's age).
"""

import logging
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from faultgraph.service import store
from faultgraph.service.events.models import hosts_seen
from faultgraph.service.loops import Loop

log = logging.getLogger(__name__)


class Liveness:
    """Last heartbeat per watched host, and which hosts are currently marked lost."""

    def __init__(self, timeout: timedelta) -> None:
        self.timeout = timeout
        self._last: dict[str, datetime] = {}
        self._lost: set[str] = set()
        self._back: dict[str, datetime] = {}  # lost hosts heard from again, not yet reported
        self._lock = threading.Lock()

    def beat(self, hosts: Iterable[str], now: datetime) -> None:
        with self._lock:
            for host in hosts:
                self._last[host] = now
                self._clear(host, now)

    def _clear(self, host: str, at: datetime) -> None:
        if host in self._lost:
            self._lost.discard(host)
            self._back.setdefault(host, at)

    def learn(self, beats: Iterable[tuple[str, datetime]]) -> None:
        """Heartbeats another replica received: each counts only if newer than what is known,
        so an old beat read again never clears a host already marked lost."""
        with self._lock:
            for host, at in beats:
                if host not in self._last or at > self._last[host]:
                    self._last[host] = at
                    self._clear(host, at)

    def take_back(self) -> list[tuple[str, datetime]]:
        """Hosts marked lost that have beaten since, with when; each is reported once."""
        with self._lock:
            back, self._back = sorted(self._back.items()), {}
            return back

    def overdue(self, now: datetime) -> list[tuple[str, datetime]]:
        """Hosts newly overdue, each with the moment it became so; they are marked lost."""
        with self._lock:
            newly = [(host, last + self.timeout) for host, last in self._last.items()
                     if host not in self._lost and now - last > self.timeout]
            self._lost.update(host for host, _ in newly)
            return sorted(newly)

    @property
    def lost(self) -> set[str]:
        with self._lock:
            return set(self._lost)


def lost_event(host: str, at: datetime, timeout: timedelta) -> dict:
    """The event the service stores for a host gone quiet."""
    return {
        "time": at, "host": host, "kind": "host_heartbeat", "severity": "error",
        "attrs": {"state": "lost", "source": "faultgraph", "timeout_s": timeout.total_seconds()},
        "message": f"no heartbeat from {host}'s agent for {timeout.total_seconds():.0f} s",
    }


def back_event(host: str, at: datetime) -> dict:
    """The event the service stores when a host marked lost is heard from again."""
    return {
        "time": at, "host": host, "kind": "host_heartbeat", "severity": "info",
        "attrs": {"state": "ok", "back": True, "source": "faultgraph"},
        "message": f"heartbeats from {host}'s agent again",
    }


def stored_beats(engine: Engine, *, since: datetime) -> list[tuple[str, datetime]]:
    """Each host's latest heartbeat received after `since` by any replica, as (host, when
    it was received)."""
    query = (sa.select(hosts_seen.c.host, hosts_seen.c.last_seen)
             .where(hosts_seen.c.last_seen > store.to_db_time(since)).order_by(hosts_seen.c.host))
    with engine.connect() as conn:
        return [(host, store.from_db_time(seen)) for host, seen in conn.execute(query)]


class LivenessWatcher:
    """A loop that turns overdue hosts into stored `lost` events, while `leading()` says
    this replica leads (one replica reports a lost host, not each of them)."""

    def __init__(self, liveness: Liveness, store_events: Callable[[list[dict]], None], *,
                 leading: Callable[[], bool] = lambda: True,
                 shared: Callable[[datetime], list[tuple[str, datetime]]] | None = None) -> None:
        """`shared(since)`: heartbeats other replicas received (`stored_beats`), if any."""
        self._liveness = liveness
        self._store = store_events
        self._shared = shared
        period = max(0.5, liveness.timeout.total_seconds() / 4)
        self._loop = Loop("liveness", self._check, interval=period, leading=leading).start()

    def _check(self) -> None:
        """One look: store `lost` for hosts newly overdue and `back` for those heard again.
        A failure raises to the loop (logged, retried after a backoff); in particular one
        reading other replicas' heartbeats ends the look before judging on half the picture,
        which would mark live hosts lost."""
        now = datetime.now(UTC)
        if self._shared is not None:
            self._liveness.learn(self._shared(now - 2 * self._liveness.timeout))
        overdue = self._liveness.overdue(now)
        back = self._liveness.take_back()
        if overdue:
            log.warning("hosts lost (no heartbeat): %s", ", ".join(host for host, _ in overdue))
        if back:
            log.info("hosts back (heartbeats again): %s", ", ".join(host for host, _ in back))
        if overdue or back:
            self._store([lost_event(host, at, self._liveness.timeout) for host, at in overdue]
                        + [back_event(host, at) for host, at in back])

    def close(self) -> None:
        self._loop.close()
