"""Running the engine over the store: which window to re-analyse when events arrive, and
how the engine's fresh answer is reconciled with the incidents already stored.

The engine is pure (`attribution/engine.py`); this module is its I/O. Each pass takes the
events committed since the last pass (by `events.seq`, at most `MAX_NEW` a step), widens
their time span by the engine's reach and by every stored incident it touches, re-analyses
that whole window from the store in event-time order, and upserts the result. New events
spread wider than `HORIZON` (a late spool beside live events) are taken in spans of their
hours, each with its own window, as passes at their times would have. Because a
window is analysed whole, a replay of a recorded stream and the live run converge on the
same incidents, whatever order the events arrived in.

Except for an incident that began more than `HORIZON` before the new events: re-reading it
whole would make a pass cost as much as the longest incident it touches (a crash loop, a hang
nobody aborted: `tests/bench/engine_pass.py`, figures in service/README), so its head is
settled. The pass reads back only to the horizon, keeps what the head decided (start, root
cause, when the job failed) and extends the stored incident with the tail (`_extended`).
Replay and live then agree on everything but a verdict the tail alone would have changed.

With replicas on one PostgreSQL, only the leader (`service.leader.Lease`) runs passes in
the background, but a pass may be asked for on any replica (`POST /v1/analyze`): every
pass holds the database's engine lock for its whole transaction, so passes from different
replicas (or from a leader that has just lost its lease) run one after the other, each
starting from the `last_seq` the previous one committed. `seq` order is commit order on
every backend (`service.store.SEQUENCES`), so "everything after `last_seq`" never skips
an event another replica committed late.
"""

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta

import orjson
import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from faultgraph.attribution import racks
from faultgraph.attribution.engine import GAP, LONG_GAP, LOOKBACK, Cluster, Draft, analyse
from faultgraph.attribution.ledger import gpu_hours_lost
from faultgraph.service import store
from faultgraph.service.events.models import events
from faultgraph.service.incidents import degradations
from faultgraph.service.incidents.models import effective_planned, engine_state, incident_events, incidents
from faultgraph.service.leader import ENGINE_LOCK
from faultgraph.service.loops import Loop

log = logging.getLogger(__name__)

# How far around new events the engine looks: a timeout reports a hang that began up to
# its timeout earlier (30 min is PyTorch's largest common setting), plus grouping reach.
MARGIN = timedelta(minutes=30) + LONG_GAP + LOOKBACK
# New events of these kinds, or of these severities, can open or change an incident.
DRIVING_KINDS = ("nccl_timeout", "nccl_error", "job_fail", "job_start", "job_restart", "job_end",
                 "checkpoint_save", "maintenance", "host_heartbeat", "train_anomaly")
DRIVING_SEVERITIES = ("error", "critical")
# How far back of its new events a pass reads at most (see the module's docstring), margin
# included, unless a touched incident ended earlier (then back to its last, less the margin):
# longer than a watchdog's hang, its restart and the restart's failure, so a failed
# restart still folds into its incident whole. At least MARGIN, the new events' own reach.
HORIZON = timedelta(hours=2)
# A job's last (re)start before a window is read with it (`_last_starts`).
RESTART_KINDS = ("job_start", "job_restart")
# New events one step of a pass analyses at most (`analyze_pending`). What a step holds is
# its window, these events' span plus the horizon and margins, about 1.2 KiB an event.
# Unstepped, each pass of tests/bench/ingest.py's million events took all that arrived
# during the last, slower for it: windows grew to 478,000 events (service/README).
MAX_NEW = 50_000
# A background pass that is behind rests between its steps, REST_PER_STEP times as long as
# each step took, but only while ingest goes on: the engine then takes at most a third of a
# core from a flood (half of one at 1.0: 42,000–49,900 against 46,900–56,600 events/s in
# tests/bench/ingest.py, 5 runs each; the catch-up after it 51–63 s either way). Once
# nothing was committed for QUIET seconds no request needs the cores, and the pass catches
# up unrested (resting regardless, it had rested about half its catch-up). A rest looks
# again every REST_SLICE. (Not the writer's `settling`: a flood's commits end it every
# `max_wait_s`, when the engine is woken, and its 0.2 s debounce is a storm's, not a rest's.)
REST_PER_STEP = 2.0
QUIET = 1.0
REST_SLICE = 0.1




def _last_seq(conn: Connection) -> int:
    value = conn.execute(sa.select(engine_state.c.last_seq).where(engine_state.c.name == "incidents")).scalar()
    return value or 0


def backlog(conn: Connection) -> int:
    """Events committed that no engine pass has analysed yet: under a sustained stream the
    engine takes its share of the cores and may fall behind; this says by how much."""
    return conn.execute(sa.select(sa.func.count()).where(events.c.seq > _last_seq(conn))).scalar() or 0


def _save_seq(conn: Connection, seq: int) -> None:
    if conn.execute(engine_state.update().where(engine_state.c.name == "incidents").values(last_seq=seq)).rowcount == 0:
        conn.execute(engine_state.insert().values(name="incidents", last_seq=seq))


# A window's events as the engine reads them. A message only where the engine reads one: a
# raw log line is most of an event's bytes, and a window can hold a hundred thousand.
COLUMNS = (events.c.id, events.c.time, events.c.host, events.c.kind, events.c.component, events.c.severity,
           events.c.job, events.c.rank, events.c.attrs,
           sa.case((events.c.kind.in_(racks.MESSAGE_KINDS), events.c.message)).label("message"))


def _as_dicts(conn: Connection, query: sa.Select) -> list[dict]:
    # Rows unpacked as tuples: reading sixteen thousand of them by attribute name cost a
    # quarter more, and after a storm this load is a third of the pass the incident waits for.
    # Hosts, kinds, components, severities and jobs repeat across a window: each is kept once
    # (each row arrives with strings of its own), and the rows are converted a part at a time
    # rather than all held beside their dicts: together a quarter of the pass's peak.
    loads = orjson.loads
    kept: dict[str | None, str | None] = {}
    once = kept.setdefault
    return [
        {"id": id_, "time": at.replace(tzinfo=UTC), "host": once(host, host), "kind": once(kind, kind),
         "component": once(component, component), "severity": once(severity, severity), "job": once(job, job),
         "rank": rank, "attrs": loads(attrs) if isinstance(attrs, str | bytes) else (attrs or {}), "message": message}
        for id_, at, host, kind, component, severity, job, rank, attrs, message in store.rows_of(conn, query)
    ]


def _load_events(conn: Connection, low: datetime, high: datetime, up_to_seq: int, jobs: Iterable[str] = ()) -> list[dict]:
    """Every event of a window stored by `up_to_seq`, oldest first, as the engine reads them,
    after the last (re)start before it of each job the window names or `jobs` (`_last_starts`).

    A step of a pass that is behind sees the store as a pass at its last event would have:
    reading the later events too would stretch an incident past the step, and the next
    step's window with it, until one window held the whole backlog."""
    query = (
        sa.select(*COLUMNS)
        .where(events.c.time >= low, events.c.time <= high, events.c.seq <= up_to_seq,
               events.c.kind != "train_step")  # progress: degradations.py
        .order_by(events.c.time, events.c.id)
    )
    window = _as_dicts(conn, query)
    named = sorted({*jobs, *(event["job"] for event in window if event["job"])})
    return _last_starts(conn, named, low, up_to_seq) + window


def _last_starts(conn: Connection, jobs: Sequence[str], before: datetime, up_to_seq: int) -> list[dict]:
    """Each job's last start or restart before a window, oldest first. Whether a job reports
    its restarts changes how its symptoms are grouped (attribution's LONG_GAP), so a window
    that began after the job started must still know it did, as a whole replay would."""
    if not jobs:
        return []
    latest = (sa.select(events.c.job, sa.func.max(events.c.time).label("at"))
              .where(events.c.job.in_(jobs), events.c.kind.in_(RESTART_KINDS), events.c.time < before,
                     events.c.seq <= up_to_seq)
              .group_by(events.c.job).subquery())
    query = (sa.select(*COLUMNS).join(latest, sa.and_(events.c.job == latest.c.job, events.c.time == latest.c.at))
             .where(events.c.kind.in_(RESTART_KINDS)).order_by(events.c.time, events.c.id))
    return _as_dicts(conn, query)


def _overlapping(conn: Connection, low: datetime, high: datetime) -> list[sa.Row]:
    """Stored incidents whose span comes within GAP of [low, high]."""
    return list(conn.execute(
        sa.select(incidents).where(incidents.c.start <= high + GAP, incidents.c.last >= low - GAP,
                                   incidents.c.type != "degradation")
        .order_by(incidents.c.number)
    ).fetchall())


def _values(draft: Draft, stored: sa.Row | None, topology_version: int | None) -> dict:
    """The columns the engine owns; on-call's confirmation, status and notes are kept."""
    interruption = draft.interruption
    end = interruption["end"]
    values = {
        "topology_version": topology_version,
        "scope": draft.scope,
        "job": draft.job,
        "opened": store.to_db_time(min(item.time for item in draft.members)),
        "updated": store.to_db_time(datetime.now(UTC)),
        "start": store.to_db_time(draft.start),
        "last": store.to_db_time(draft.last),
        "symptoms": draft.symptoms,
        "hosts": draft.hosts,
        "type": draft.type,
        "clock_offsets": draft.clock_offsets,
        "root_cause": draft.root_cause,
        "candidates": draft.candidates,
        "action": draft.action,
        "gpus": interruption["gpus"],
        "gpu_hours_lost": interruption["gpu_hours_lost"],
        "failed_at": store.to_db_time(interruption["start"]),
        "interruption_end": store.to_db_time(end) if end else None,
    }
    confirmed = store.json_value(stored.confirmed) if stored is not None else None
    values["planned"] = effective_planned(confirmed, draft.planned)
    values["cause"] = (confirmed or {}).get("cause") or draft.root_cause["cause"]
    values["category"] = (confirmed or {}).get("category") or draft.root_cause["category"]
    if stored is None or not stored.status_set_by_oncall:
        values["status"] = "resolved" if end else "open"
        values["closed"] = values["interruption_end"]
    return values


def _extended(conn: Connection, draft: Draft, stored: sa.Row, read_from: datetime) -> dict:
    """The columns of a settled incident (begun before `read_from`, where the pass started
    reading) extended by the draft of its tail, with the tail's new members added.

    The head's verdict stays: start, root cause, candidates, action, type, when the job
    failed and on how many GPUs. The tail adds its members (none is removed), its evidence
    for the same root, symptoms, hosts and last, and decides when the job ran again and so
    the GPU-hours (`_lost`). Hosts count as new when no stored event of the incident, member
    or evidence, came from them.
    """
    links = incident_events.c
    of_incident = sa.and_(links.incident_id == stored.id, events.c.id == links.event_id)
    seen = set(conn.execute(sa.select(events.c.id).where(of_incident, events.c.time >= read_from)).scalars())
    added = [event_id for event_id in draft.event_ids if event_id not in seen]
    fresh = {item.id: item for item in draft.members if item.id not in seen}
    hosts = {item.event["host"] for item in fresh.values()} - {i.event["host"] for i in draft.members if i.id in seen}
    if hosts:  # checked before the new members are stored
        hosts -= set(conn.execute(sa.select(events.c.host).distinct()
                                  .where(of_incident, events.c.host.in_(sorted(hosts)))).scalars())
    store.append(conn, incident_events, pa.table({"incident_id": [stored.id] * len(added), "event_id": added}))
    end = draft.interruption["end"]  # after the tail's last, as the whole pass would find it
    root_cause = store.json_value(stored.root_cause)
    if draft.root_cause["component"] == root_cause.get("component"):  # the tail's evidence for it is cited too
        root_cause["evidence"] = sorted({*root_cause.get("evidence", ()), *draft.root_cause["evidence"]})[:50]
    values = {
        "root_cause": root_cause,
        "updated": store.to_db_time(datetime.now(UTC)),
        "last": max(stored.last, store.to_db_time(draft.last)),
        "symptoms": stored.symptoms + sum(1 for item in fresh.values() if item.signal.role == "symptom"),
        "hosts": stored.hosts + len(hosts),
        "planned": effective_planned(store.json_value(stored.confirmed), stored.planned or draft.planned),
        "clock_offsets": {**(store.json_value(stored.clock_offsets) or {}), **draft.clock_offsets},
        "gpu_hours_lost": _lost(conn, stored, draft.interruption["resumed"]),
        "interruption_end": store.to_db_time(end) if end else None,
    }
    if not stored.status_set_by_oncall:
        values["status"] = "resolved" if end else "open"
        values["closed"] = values["interruption_end"]
    return values


def _lost(conn: Connection, stored: sa.Row, resumed: datetime | None) -> float:
    """A settled incident's GPU-hours (attribution/ledger.py): from its head's failure to the
    tail's restart, and the progress since the job's last save or start before the failure,
    looked up as far back as a whole pass reads (`MARGIN` before the incident)."""

    def latest(*kinds: str) -> datetime | None:
        return store.from_db_time(conn.execute(
            sa.select(sa.func.max(events.c.time))
            .where(events.c.job == stored.job, events.c.kind.in_(kinds),
                   events.c.time >= stored.start - MARGIN, events.c.time <= stored.failed_at)).scalar())

    lost = gpu_hours_lost(gpus=stored.gpus, failed_at=store.from_db_time(stored.failed_at), resumed_at=resumed,
                          last_checkpoint_at=latest("checkpoint_save") if stored.job else None,
                          running_since=latest(*RESTART_KINDS) if stored.job else None)
    return round(lost["gpu_hours_lost"], 3)


def _replace_members(conn: Connection, incident_id: str, event_ids: list[str]) -> None:
    conn.execute(incident_events.delete().where(incident_events.c.incident_id == incident_id))
    store.append(conn, incident_events, pa.table({"incident_id": [incident_id] * len(event_ids), "event_id": event_ids}))


def _members(conn: Connection, incident_ids: list[str]) -> dict[str, set[str]]:
    """The member events of the stored incidents a pass overlaps."""
    found: dict[str, set[str]] = {incident_id: set() for incident_id in incident_ids}
    if incident_ids:
        query = sa.select(incident_events.c.incident_id, incident_events.c.event_id).where(
            incident_events.c.incident_id.in_(incident_ids))
        for incident_id, event_id in conn.execute(query):
            found[incident_id].add(event_id)
    return found


def _rescoped(draft: Draft, unmatched: list[sa.Row], members: dict[str, set[str]]) -> sa.Row | None:
    """The stored incident a draft of another scope continues: the one sharing most of its
    member events (a host's incident that a job registered later now owns, say). An event
    is one incident's, so the stored one is updated in place, keeping its id and on-call's
    notes, confirmation and status, rather than removed or left open beside the new one."""
    ids = set(draft.event_ids)
    shared = {row.id: len(members.get(row.id, set()) & ids) for row in unmatched}
    best = max(unmatched, key=lambda row: (shared[row.id], row.id), default=None)
    return best if best is not None and shared[best.id] > 0 else None


def reconcile(conn: Connection, drafts: list[Draft], stored: list[sa.Row], *,
              settled_before: datetime = datetime.min, topology_version: int | None = None) -> dict[str, int]:
    """Upsert the engine's incidents of a window over the stored ones it overlaps. Stored
    incidents begun before `settled_before` (stored time: where the window was read from)
    were read only in part: a draft extends them, and none is removed for want of one."""
    unmatched = list(stored)
    # Read on the first draft no stored incident of its scope continues, then kept: an
    # unmatched incident's members do not change during the pass.
    members: dict[str, set[str]] | None = None
    opened = updated = 0
    next_number = (conn.execute(sa.select(sa.func.max(incidents.c.number))).scalar() or 0) + 1
    for draft in sorted(drafts, key=lambda d: (d.start, d.scope)):
        match = next((row for row in unmatched if row.scope == draft.scope
                      and store.from_db_time(row.start) <= draft.last + GAP and store.from_db_time(row.last) >= draft.start - GAP), None)
        if match is None:
            if members is None:
                members = _members(conn, [row.id for row in unmatched])
            match = _rescoped(draft, unmatched, members)
        if match is not None and match.start < settled_before:
            unmatched.remove(match)
            conn.execute(incidents.update().where(incidents.c.id == match.id)
                         .values(**_extended(conn, draft, match, settled_before)))
            updated += 1
            continue
        values = _values(draft, match, topology_version)
        if match is not None:
            unmatched.remove(match)
            incident_id = match.id
            conn.execute(incidents.update().where(incidents.c.id == incident_id).values(**values))
            updated += 1
        else:
            incident_id = f"inc-{next_number:06d}"
            conn.execute(incidents.insert().values(
                id=incident_id, number=next_number, status_set_by_oncall=False, confirmed=None, notes=[], **values))
            next_number += 1
            opened += 1
        _replace_members(conn, incident_id, draft.event_ids)
    removed = 0
    for row in unmatched:  # merged into another or no longer an interruption
        if row.confirmed is None and not row.status_set_by_oncall and row.start >= settled_before:
            conn.execute(incidents.delete().where(incidents.c.id == row.id))
            conn.execute(incident_events.delete().where(incident_events.c.incident_id == row.id))
            removed += 1
    return {"opened": opened, "updated": updated, "removed": removed}


def analyze_pending(engine: Engine, cluster: Cluster, *,
                    between: Callable[[float], bool] = lambda seconds: True,
                    schedule: degradations.Schedule | None = None, asked: bool = True) -> dict[str, int]:
    """One engine pass over everything committed since the last pass, `MAX_NEW` events (by
    `seq`) at a time, each its own transaction: the events a pass holds are bounded by what
    one step's window spans, not by how far the engine is behind (a restart after a long
    ingest, an import, a pass slowed by a flood), and a step done is not redone.
    `between(seconds the step took)` runs after each step that leaves more to do; False
    ends the pass there (the rest is the next pass's). Given a `schedule`, the fail-slow
    analysis takes the jobs it says are due (all that are behind when `asked`)."""
    total = {"events": 0, "opened": 0, "updated": 0, "removed": 0}
    while True:
        started = time.perf_counter()
        result, more = _analyze_step(engine, cluster, schedule, asked)
        for key, count in result.items():
            total[key] += count
        if not more or not between(time.perf_counter() - started):
            return total


# How many of the selected events can drive an incident (a kind or a severity that opens one).
_DRIVING_COUNT = sa.func.sum(sa.case(
    (sa.or_(events.c.kind.in_(DRIVING_KINDS), events.c.severity.in_(DRIVING_SEVERITIES)), 1), else_=0))


def _analyze_step(engine: Engine, cluster: Cluster, schedule: degradations.Schedule | None,
                  asked: bool) -> tuple[dict[str, int], bool]:
    """Analyse the next `MAX_NEW` new events at most; whether more were waiting. With no new
    event, a pass asked for still analyses the jobs a schedule left behind."""
    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":  # one pass at a time across replicas
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({ENGINE_LOCK})")
        last = _last_seq(conn)
        cut = conn.execute(sa.select(events.c.seq).where(events.c.seq > last)
                           .order_by(events.c.seq).offset(MAX_NEW).limit(1)).scalar()
        new = events.c.seq > last if cut is None else sa.and_(events.c.seq > last, events.c.seq < cut)
        low, high, top, relevant, count = conn.execute(
            sa.select(sa.func.min(events.c.time), sa.func.max(events.c.time), sa.func.max(events.c.seq),
                      _DRIVING_COUNT, sa.func.count())
            .where(new)
        ).one()
        result = {"events": count or 0, "opened": 0, "updated": 0, "removed": 0}
        if top is None and not (asked and schedule is not None and schedule.behind()):
            return result, False
        for core in _cores(conn, new, low, high, relevant) if top is not None else ():
            for key, changed in _analyze_core(conn, cluster, *core, top).items():
                result[key] += changed
        up_to = last if top is None else top
        for key, changed in degradations.run(conn, cluster, up_to_seq=up_to, schedule=schedule, asked=asked).items():
            result[key] += changed  # fail-slow
        _save_seq(conn, up_to)
        conn.commit()
        if schedule is not None:
            schedule.committed()
        return result, cut is not None


def _cores(conn: Connection, new: sa.ColumnElement[bool], low: datetime, high: datetime,
           relevant: int | None) -> list[tuple[datetime, datetime, int]]:
    """The new events' span, cut where it is wider than `HORIZON` into the spans of their
    hours (with how many events of each can drive an incident): events far apart in time
    in one step (agents replaying a long outage's spools beside live ones) are each read
    with their own window, not with everything stored between them."""
    if high - low <= HORIZON:
        return [(low, high, relevant or 0)]
    hour = sa.func.date_trunc("hour", events.c.time)
    cores: list[list] = []
    for first, last, driving in conn.execute(
            sa.select(sa.func.min(events.c.time), sa.func.max(events.c.time), _DRIVING_COUNT)
            .where(new).group_by(hour).order_by(hour)):
        if cores and last - cores[-1][0] <= HORIZON:
            cores[-1][1:] = [last, cores[-1][2] + driving]
        else:
            cores.append([first, last, driving])
    return [(first, last, driving) for first, last, driving in cores]


def _analyze_core(conn: Connection, cluster: Cluster, low: datetime, high: datetime, relevant: int,
                  top: int) -> dict[str, int]:
    """Re-analyse one span of new events: the span and every stored incident it touches, back
    to the horizon. The engine reads the core plus a margin (so incidents at its edges are
    seen whole), but only the incidents overlapping the core are rewritten."""
    touching = _overlapping(conn, low - MARGIN, high + MARGIN)
    if not relevant and not touching:
        return {}
    # (The core keeps each touched incident's last: one that ended before the horizon is
    # reconciled too, not opened again beside itself.)
    core_low = min([low, *(max(row.start, min(row.last, low - (HORIZON - MARGIN))) for row in touching)])
    core_high = max([high, *(row.last for row in touching)])
    stored = _overlapping(conn, core_low, core_high)
    read_from = core_low - MARGIN
    jobs = {row.job for row in stored if row.job}
    drafts = analyse(_load_events(conn, read_from, core_high + MARGIN, top, jobs), cluster)
    low_utc, high_utc = core_low.replace(tzinfo=UTC), core_high.replace(tzinfo=UTC)
    drafts = [d for d in drafts if d.last >= low_utc - GAP and d.start <= high_utc + GAP]
    return reconcile(conn, drafts, stored, settled_before=read_from,
                     topology_version=getattr(cluster, "version", None))


class IncidentRunner:
    """Runs `analyze_pending` in the background after commits while `leading()` says this
    process leads, and on demand always (the engine lock makes that safe anywhere)."""

    def __init__(self, engine: Engine, cluster: Callable[[], Cluster], *, interval: float = 1.0,
                 leading: Callable[[], bool] = lambda: True,
                 idle_for: Callable[[], float] = lambda: 0.0) -> None:
        """`idle_for` says how many seconds ingest has paused (the writer's); by default it
        never has, and every rest between steps is taken whole."""
        self._engine = engine
        self._idle_for = idle_for
        self._cluster = cluster
        self._lock = threading.Lock()
        self._asked = threading.Event()  # an on-demand pass waits for the lock, or closing
        self._schedule = degradations.Schedule()  # which jobs' step series a pass analyses
        self.last_duration = 0.0
        self.after_pass: Callable[[dict[str, int], float], None] = lambda result, seconds: None  # metrics, alerts
        # Under a sustained stream, rest as long as the pass took: the engine then takes at
        # most half a core from ingest, and each pass covers more new events. A pass that is
        # behind rests REST_PER_STEP times as long between its steps; a storm's pass is one step.
        self._loop = Loop("engine", self._background, interval=interval, leading=leading,
                          rest=lambda: min(self.last_duration, interval * 2)).start()

    def wake(self) -> None:
        self._loop.wake()

    def close(self) -> None:
        self._loop.stop()
        self._asked.set()  # a pass resting between its steps ends there
        self._loop.close()

    @property
    def failures(self) -> int:
        """Background passes failed in a row (0 after one succeeds)."""
        return self._loop.failures

    def run_once(self) -> dict[str, int]:
        """Analyse everything committed so far; callers wait for the pass to finish. A
        background pass resting between its steps ends there and leaves the rest to this
        one, which does not rest: whoever asked is waiting."""
        self._asked.set()
        with self._lock:
            self._asked.clear()
            return self._pass(lambda seconds: True, asked=True)

    def _background(self) -> dict[str, int]:
        with self._lock:
            return self._pass(self._between_steps, asked=False)

    def _between_steps(self, seconds: float) -> bool:
        """A background pass's rest after a step of `seconds`, cut short once ingest has
        paused for QUIET seconds; False (end the pass) when an on-demand pass asks for the
        lock or the runner closes."""
        deadline = time.monotonic() + REST_PER_STEP * seconds
        while self._idle_for() < QUIET and (left := deadline - time.monotonic()) > 0:
            if self._asked.wait(min(REST_SLICE, left)):
                break
        return not self._asked.is_set() and not self._loop.stopping

    def _pass(self, between: Callable[[float], bool], *, asked: bool) -> dict[str, int]:
        """One pass, under the lock; its duration without the rests goes to `after_pass`.
        A pass `asked` for analyses every job's step series that is behind."""
        rested = 0.0

        def rest(seconds: float) -> bool:
            nonlocal rested
            began = time.perf_counter()
            go_on = between(seconds)
            rested += time.perf_counter() - began
            return go_on

        started = time.perf_counter()
        result = analyze_pending(self._engine, self._cluster(), between=rest, schedule=self._schedule, asked=asked)
        self.last_duration = time.perf_counter() - started - rested
        self.after_pass(result, self.last_duration)
        return result
