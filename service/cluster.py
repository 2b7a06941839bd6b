"""The cluster as the running service knows it: the current topology with its resolver and
path index, and every registered job's placement — in memory, loaded at start-up and
replaced on upload.

Ingest calls `Cluster.enrich` once per event, so everything it touches is a dict probe:
the job of an event comes from a host → jobs index, its component from the resolver, and
a `job_*` event's state change is made in memory and written through (those are rare).
Readers take one snapshot of `Graph` so a topology swapped mid-request is never half seen.
"""

from __future__ import annotations

import gc
import logging
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from faultgraph.attribution.cluster import fabric_reach
from faultgraph.attribution.paths import Paths
from faultgraph.attribution.placement import Placement
from faultgraph.attribution.resolve import Resolver
from faultgraph.attribution.topology import Topology
from faultgraph.service import store
from faultgraph.service.jobs import service as jobs_service
from faultgraph.service.jobs.models import STATE_AFTER
from faultgraph.service.topology import service as topology_service
from faultgraph.service.topology.models import topologies

log = logging.getLogger(__name__)

# Footprints kept (a 16,384-rank job's is ~100k ids): the jobs on-call is looking at.
_FOOTPRINTS_KEPT = 32


@dataclass(frozen=True)
class Graph:
    """One topology version and the indexes built on it (all None/empty before upload:
    the resolver then applies naming conventions only)."""

    version: int | None = None
    topology: Topology | None = None
    resolver: Resolver = field(default_factory=Resolver)
    paths: Paths | None = None


@dataclass
class Job:
    """A registered job as ingest needs it; times aware UTC."""

    id: str
    start: datetime
    end: datetime | None
    state: str
    state_time: datetime
    placement: Placement

    def covers(self, time: datetime) -> bool:
        return self.start <= time and (self.end is None or time <= self.end)



def _drop_cached_views(graph: object) -> None:
    """networkx caches views such as `degree` and `edges` on the graph, and they point back
    at it: a cycle that would keep a frozen graph alive. Without them reference counting
    frees a replaced graph at once; a reader still holding it simply rebuilds a view."""
    for name in [key for key in vars(graph) if not key.startswith("_") and key != "graph"]:
        vars(graph).pop(name, None)


def _rank(event: Mapping[str, Any]) -> int | None:
    rank = event.get("rank")
    if rank is None:
        attrs = event.get("attrs")
        rank = attrs.get("rank") if isinstance(attrs, Mapping) else None
    return rank if isinstance(rank, int) and not isinstance(rank, bool) else None


class Cluster:
    """Current topology and jobs; one per app (`app.state.cluster`)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self.graph = Graph()
        self._jobs: dict[str, Job] = {}
        # host → jobs placed on it, by start time: finding an event's job is one probe
        # plus a scan of the (few) jobs that ever ran on that host.
        self._jobs_on_host: dict[str, list[Job]] = {}
        self._footprints: dict[tuple[str, int | None], set[str]] = {}
        self._jobs_lock = threading.Lock()
        self._reach: dict[tuple[str, int | None], frozenset[str]] = {}
        self._build_lock = threading.Lock()
        self._unresolvable: set[str] = set()  # kinds whose resolving failed (logged once each)

    # ------------------------------------------------------------------- start-up

    def load(self) -> None:
        """Read the latest topology and every job from the store."""
        with self._engine.connect() as conn:
            row = topology_service.get(conn)
            rows = jobs_service.get_every(conn)
        if row is not None:
            with self.building():
                self.use_topology(topology_service.load(row), row.version)
            log.info("topology version %d loaded: %d components", row.version, row.components)
        for job_row in rows:
            try:
                self.add_job(self.job_from_row(job_row._mapping))
            except ValueError as exc:  # stored by an older, laxer faultgraph: keep serving
                log.error("job %s not loaded: its placement is invalid: %s", job_row.id, exc)

    def refresh(self) -> None:
        """Catch up with what other replicas stored: a newer topology version, and jobs
        registered or changed through them (state, start, end)."""
        with self._engine.connect() as conn:
            latest = conn.execute(sa.select(sa.func.max(topologies.c.version))).scalar()
            row = topology_service.get(conn) if latest is not None and latest != self.version else None
            rows = jobs_service.get_every(conn)
        if row is not None:
            with self.building():
                self.use_topology(topology_service.load(row), row.version)
            log.info("topology version %d stored by another replica loaded", row.version)
        for job_row in rows:
            known = self._jobs.get(job_row.id)
            stored = (store.from_db_time(job_row.start), store.from_db_time(job_row.end), job_row.state,
                      store.from_db_time(job_row.state_time))
            if known is not None:
                if (known.start, known.end, known.state, known.state_time) != stored:
                    with self._jobs_lock:  # a state change: the placement stays
                        known.start, known.end, known.state, known.state_time = stored
                continue
            try:
                self.add_job(self.job_from_row(job_row._mapping))
            except ValueError as exc:
                log.error("job %s not loaded: its placement is invalid: %s", job_row.id, exc)

    # ------------------------------------------------------------------- topology

    @property
    def topology(self) -> Topology | None:
        return self.graph.topology

    @property
    def version(self) -> int | None:
        return self.graph.version

    @property
    def resolver(self) -> Resolver:
        return self.graph.resolver

    @property
    def paths(self) -> Paths | None:
        return self.graph.paths

    @contextmanager
    def building(self) -> Iterator[None]:
        """Wrap building (and storing) a topology that is to become current; one at a time.

        A 32,768-GPU graph is millions of small containers and no garbage. The cyclic
        collector is paused while they are made (it would rescan the growing heap over
        and over, doubling load time), and afterwards they are frozen: the collector
        never walks the live graph again. A replaced graph is collected here, once.
        """
        with self._build_lock:
            before = self.graph.topology
            gc.disable()
            try:
                yield
            finally:
                if before is not None and self.graph.topology is not before:
                    replaced = weakref.ref(before.graph)
                    _drop_cached_views(before.graph)
                    del before
                    if replaced() is not None:  # still held (a request in flight, a cycle)
                        gc.unfreeze()
                        gc.collect()
                gc.freeze()
                gc.enable()

    def use_topology(self, topology: Topology, version: int) -> None:
        """Make `topology` current: indexes are built first, then swapped in at once."""
        self.graph = Graph(version, topology, Resolver(topology), Paths(topology))
        self._footprints.clear()

    # ----------------------------------------------------------------------- jobs

    @staticmethod
    def job_from_row(row: Mapping[str, Any] | sa.RowMapping) -> Job:
        """A `jobs` row (a dict or a Row's `_mapping`) as ingest needs it."""
        return Job(
            id=row["id"],
            start=store.from_db_time(row["start"]),
            end=store.from_db_time(row["end"]),
            state=row["state"],
            state_time=store.from_db_time(row["state_time"]),
            placement=jobs_service.placement_of(row),
        )

    def add_job(self, job: Job) -> None:
        """Register (or replace) a job in memory."""
        with self._jobs_lock:
            old = self._jobs.pop(job.id, None)
            if old is not None:
                for host in old.placement.hosts():
                    self._jobs_on_host[host] = [j for j in self._jobs_on_host[host] if j.id != job.id]
            self._jobs[job.id] = job
            for host in job.placement.hosts():
                on_host = self._jobs_on_host.setdefault(host, [])
                on_host.append(job)
                on_host.sort(key=lambda j: j.start)
            self._footprints = {key: ids for key, ids in self._footprints.items() if key[0] != job.id}

    def job(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id)

    def jobs(self) -> list[Job]:
        """Every registered job (a copy of the list: safe to iterate while ingest runs)."""
        return list(self._jobs.values())

    def placement(self, job_id: str) -> Placement | None:
        """Where the job's ranks run and its communicator groups, or None if unknown."""
        job = self._jobs.get(job_id)
        return None if job is None else job.placement

    def job_at(self, host: str, time: datetime, rank: int | None = None) -> Job | None:
        """The job running on `host` at `time` (the latest started, if several); with a
        `rank`, only a job that places that rank on this host."""
        candidates = self._jobs_on_host.get(host)
        if not candidates:
            canonical = self.graph.resolver.host(host)
            candidates = self._jobs_on_host.get(canonical) if canonical else None
            if not candidates or canonical is None:
                return None
            host = canonical
        for job in reversed(candidates):
            if job.covers(time) and (rank is None or job.placement.host_of(rank) == host):
                return job
        return None

    # ------------------------------------------------- the attribution engine's view

    def jobs_on(self, host: str, at: datetime) -> list[str]:
        """Jobs that had `host` in their placement at `at`."""
        return [job.id for job in self._jobs_on_host.get(host, ()) if job.covers(at)]

    def resolve(self, event: Mapping[str, Any], placement: Placement | None = None) -> str | None:
        return self.graph.resolver.resolve(event, placement)

    def peer(self, peer: str, placement: Placement | None = None) -> str | None:
        return self.graph.resolver.peer(peer, placement)

    def reach(self, hosts: Iterable[str], *, job: str | None = None) -> frozenset[str]:
        """A job's hosts and their fabric switches, cached per job and topology version."""
        graph = self.graph
        if job is None:
            return fabric_reach(graph.topology, hosts)
        key = (job, graph.version)
        found = self._reach.get(key)
        if found is None:
            found = fabric_reach(graph.topology, hosts)
            with self._jobs_lock:
                self._reach = {k: v for k, v in self._reach.items() if k[0] != job}
                self._reach[key] = found
        return found

    def footprint(self, job_id: str) -> set[str] | None:
        """Every component and link id the job's traffic can cross on the current
        topology (cached per job and version); None without the job or a topology."""
        graph = self.graph
        placement = self.placement(job_id)
        if placement is None or graph.paths is None:
            return None
        key = (job_id, graph.version)
        found = self._footprints.get(key)
        if found is None:
            found = graph.paths.footprint(placement.rank_to_gpu(r) for r in range(placement.world_size))
            with self._jobs_lock:
                while len(self._footprints) >= _FOOTPRINTS_KEPT:
                    self._footprints.pop(next(iter(self._footprints)))
                self._footprints[key] = found
        return found

    # --------------------------------------------------------------------- ingest

    def enrich(self, event: dict) -> None:
        """Fill a validated event's `job` (from host, rank and time, unless given) and
        `component` (canonical, through the resolver), and apply a `job_*` state change."""
        name = event.get("job")
        if name:
            job = self._jobs.get(name)
        else:
            job = self.job_at(event["host"], event["time"], _rank(event))
            if job is not None and not event["kind"].startswith("job_"):
                event["job"] = job.id
        resolver = self.graph.resolver
        explicit = event.get("component")
        try:
            if explicit:
                # A component the topology does not know is kept as the sender named it.
                event["component"] = resolver.canonical(explicit) or explicit
            else:
                found = resolver.resolve(event, job.placement if job is not None else None)
                if found is not None:
                    event["component"] = found
        except Exception:  # a fault in resolving one event must not fail the others' commit
            # The event is kept as sent: one that failed to resolve failed its whole commit
            # group, other agents' posts with it (a topology with a rack tray of "zz" did).
            self._resolve_failed(event)
        state = STATE_AFTER.get(event["kind"])
        if state is not None and name and job is not None:
            self._change_state(job, state, event["time"], event["kind"])

    def _resolve_failed(self, event: dict) -> None:
        """Log the first failure of each kind of event to resolve, with its traceback."""
        kind = event["kind"]
        if kind not in self._unresolvable:
            self._unresolvable.add(kind)
            log.exception("resolving a %s event of %s failed; it is stored as sent, and further %s events "
                          "that fail are not logged", kind, event["host"], kind)

    def _change_state(self, job: Job, state: str, time: datetime, kind: str) -> None:
        """Apply a state change unless a later one is already recorded (replays and late
        events arrive out of order), then write it through. A `job_start` earlier than the
        registered start moves the start back, so lines logged before the registration
        still find their job."""
        with self._jobs_lock:
            moved = kind == "job_start" and time < job.start
            if moved:
                job.start = time
                for host in job.placement.hosts():
                    self._jobs_on_host[host].sort(key=lambda j: j.start)
            newer = time >= job.state_time
            if newer:
                job.state, job.state_time = state, time
                if kind == "job_end":
                    job.end = time
                elif kind in ("job_start", "job_restart"):
                    job.end = None
            if not (moved or newer):
                return
            values: dict[str, Any] = {"start": job.start, "state": job.state, "state_time": job.state_time, "end": job.end}
        with self._engine.begin() as conn:
            jobs_service.set_state(conn, job_id=job.id, **values)
