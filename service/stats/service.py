"""Statistics over the stored incidents and events: MTBF, the interruption ledger, checkpoint economics.

Plain functions over a connection; the maths is `attribution/reliability.py`,
`attribution/ledger.py` and `attribution/checkpoint.py`. What counts, and how:

- An interruption is a stored incident; it falls in a window when its start (`failed_at`,
  the root's first evidence, else the hang start) is in `[since, until)`. Its cause and
  category are the effective ones: on-call's confirmation wins over the engine's.
- Observed hours are the window's length. A bound not given defaults to the stored event
  stream: `since` to the first event's time, `until` to the last event's time. The last
  event rather than the wall clock so that a replayed history measures the hours it
  covers; on a live cluster, where agents report continuously, the two agree.
- Per component type, a failure is an incident whose root component (confirmed, else the
  engine's) is of that type; an incident names one root, so a unit's repeated fatal events
  within one incident count once. Units come from the topology; without one the count of
  failures is still given and `units` is null.
- Per job, observed hours are the job's running time: from its first `job_start` (else its
  first event) to its last `job_end`, or to now while it runs, clipped to the window.
- Retention removes raw low-severity events and samples after some days, never incidents,
  jobs' `job_*` events, checkpoints or component states. What reads other raw events (a job's
  first event, the jobs active in a window) reads the archive of pruned days with the live
  store (`archive`, service/events/archive.py), so a prune does not change the answer; the
  observed hours' default span also counts the rolled-up hours (`event_rollups`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from datetime import datetime
from typing import Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from faultgraph.attribution.checkpoint import economics, goodput_exact, simulate_goodput
from faultgraph.attribution.ledger import ledger
from faultgraph.attribution.reliability import BetweenFailures, between_failures, mtbf, unit_mtbf
from faultgraph.attribution.topology import COMPONENT_TYPES, Topology
from faultgraph.service import store
from faultgraph.service.events import archive as archives
from faultgraph.service.events.archive import Archive
from faultgraph.service.events.models import event_rollups, events
from faultgraph.service.events.service import format_time
from faultgraph.service.incidents.models import incidents
from faultgraph.service.jobs.models import jobs

# Scopes that name a kind of unit: the topology's component types, and links (cables).
UNIT_TYPES: tuple[str, ...] = (*sorted(COMPONENT_TYPES), "link")

# Monte Carlo budget: simulated events (segments + failures) one request may run; about a
# second of CPU at ~1 µs an event, which keeps `?simulate=` under the ~2 s a request may take.
SIMULATION_BUDGET = 1_000_000
# Each simulated run computes this many MTBFs of work: enough failures per run that the
# run's goodput is a fair sample, few enough that many runs fit the budget.
SIMULATED_MTBFS_PER_RUN = 50






def event_span(conn: Connection) -> tuple[datetime | None, datetime | None]:
    """The times of the first and the last event of the cluster seen, stored or since rolled up
    by retention; the service's own audit trail (a token made today) does not stretch a
    replayed history's observed hours."""
    low, high = conn.execute(sa.select(sa.func.min(events.c.time), sa.func.max(events.c.time))
                             .where(events.c.kind != "audit")).one()
    rolled_low, rolled_high = conn.execute(sa.select(sa.func.min(event_rollups.c.first), sa.func.max(event_rollups.c.last))).one()
    low = min((t for t in (low, rolled_low) if t is not None), default=None)
    high = max((t for t in (high, rolled_high) if t is not None), default=None)
    return store.from_db_time(low), store.from_db_time(high)


class WindowError(ValueError):
    """An `until` not after the window's derived `since`: a request to refuse (400), as a given
    `since` after `until` is, rather than answer with a window that ends before it begins."""


def check_until(until: datetime | None, since: datetime | None, since_is: str) -> None:
    """Raise WindowError when a given `until` is not after `since` (derived as `since_is`)."""
    if until is not None and since is not None and until <= since:
        raise WindowError(f"until must be after since: until {format_time(until)} is not after "
                          f"{format_time(since)}, {since_is}")


def window(conn: Connection, *, since: datetime | None, until: datetime | None) -> dict:
    """The observation window: the bounds given, the event stream's span for those not given."""
    first, last = event_span(conn) if since is None or until is None else (None, None)
    low = since or first
    high = until or last
    if since is None:
        check_until(until, first, "the first event, where a window without since starts")
    if until is None and since is not None and last is not None and last <= since:
        raise WindowError(f"since {format_time(since)} is not before {format_time(last)}, the last event, "
                          "where a window without until ends: give until too")
    hours = max(0.0, (high - low).total_seconds() / 3600) if low and high else 0.0
    return {
        "since": low,
        "until": high,
        "hours": hours,
        "since_from": "given" if since else "first event",
        "until_from": "given" if until else "last event",
    }


def _failed_within(query: sa.Select, *, since: datetime | None, until: datetime | None, job: str | None) -> sa.Select:
    """Incidents that failed in [since, until), of one job when `job` is given."""
    if since is not None:
        query = query.where(incidents.c.failed_at >= store.to_db_time(since))
    if until is not None:
        query = query.where(incidents.c.failed_at < store.to_db_time(until))
    if job is not None:
        query = query.where(incidents.c.job == job)
    return query


def interruptions(
    conn: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    job: str | None = None,
    include_planned: bool = True,
) -> list[dict]:
    """Stored incidents whose interruption started in `[since, until)`, oldest first, with
    their effective cause, category and root component."""
    query = sa.select(
        incidents.c.id, incidents.c.job, incidents.c.scope, incidents.c.planned, incidents.c.cause,
        incidents.c.category, incidents.c.root_cause, incidents.c.confirmed, incidents.c.gpus,
        incidents.c.gpu_hours_lost, incidents.c.failed_at, incidents.c.interruption_end,
    )
    query = _failed_within(query, since=since, until=until, job=job)
    if not include_planned:
        query = query.where(incidents.c.planned.is_(False))
    query = query.where(incidents.c.type == "interruption")  # SPEC §7: faults and degradations apart
    found = []
    for row in conn.execute(query.order_by(incidents.c.failed_at, incidents.c.id)):
        confirmed = store.json_value(row.confirmed) or {}
        root = store.json_value(row.root_cause) or {}
        found.append({
            "id": row.id,
            "job": row.job,
            "scope": row.scope,
            "planned": bool(row.planned),
            "cause": row.cause,
            "category": row.category,
            "component": confirmed.get("component") or root.get("component"),
            "gpus": row.gpus,
            "gpu_hours_lost": row.gpu_hours_lost,
            "failed_at": store.from_db_time(row.failed_at),
            "interruption_end": store.from_db_time(row.interruption_end),
        })
    return found


def component_type(component: str | None, topology: Topology | None) -> str | None:
    """A component's type: the topology's word where it knows the component, else read from
    the canonical id (SPEC §2): `a~b` a link, `host/gpu3` by its part's name, `leaf-…`,
    `spine-…`, `core-…` a fabric switch, any other bare name a host."""
    if not component:
        return None
    if topology is not None:
        known = topology.type_of(component)
        if known is not None:
            return known
    if "~" in component:
        return "link"
    if "/" in component:
        part = component.rsplit("/", 1)[1].rstrip("0123456789_").lower()
        if part.startswith("mlx"):
            return "nic"
        return part if part in COMPONENT_TYPES else None
    if component.split("-", 1)[0].lower() in ("leaf", "spine", "core"):
        return "switch"
    return "host"


def units_of(kind: str, topology: Topology | None) -> int | None:
    """How many units of a type the topology holds; None without a topology."""
    if topology is None:
        return None
    counts = topology.counts()
    if kind == "link":
        return sum(n for name, n in counts.items() if name.startswith("link:"))
    return counts.get(kind, 0)


def _failure_times(found: list[dict]) -> BetweenFailures:
    return between_failures([item["failed_at"] for item in found])


def _rate(*, count: int, hours: float) -> dict:
    """`mtbf` where the window has length; nulls (and no exception) for an empty window."""
    if hours > 0:
        return dict(mtbf(interruptions=count, observed_hours=hours))
    return {"interruptions": count, "observed_hours": 0.0, "mtbf_hours": None, "ci95": [None, None]}


def _window_note(span: dict) -> str:
    return f"observed hours: the window's length (since: {span['since_from']}, until: {span['until_from']})"


def _window_fields(span: dict) -> dict:
    return {"since": format_time(span["since"]), "until": format_time(span["until"])}


def cluster_mtbf(conn: Connection, *, since: datetime | None, until: datetime | None, include_planned: bool) -> dict:
    """Cluster MTBF over the window: observed hours / interruptions, with its 95% interval."""
    span = window(conn, since=since, until=until)
    found = interruptions(conn, since=span["since"], until=span["until"], include_planned=include_planned)
    notes = [_window_note(span)]
    if span["hours"] <= 0:
        notes.append("no observation window yet: post events or give since and until")
    return {
        "scope": "cluster", **_window_fields(span), "include_planned": include_planned,
        **_rate(count=len(found), hours=span["hours"]),
        "between_failures": _failure_times(found), "notes": notes,
    }


def type_mtbf(
    conn: Connection,
    *,
    kind: str,
    topology: Topology | None,
    since: datetime | None,
    until: datetime | None,
    include_planned: bool,
    project_to: int | None,
) -> dict:
    """Per-unit MTBF of one component type, and the cluster MTBF it implies at `project_to` units.

    `interruptions`, `mtbf_hours` and `ci95` count only this type's failures: how often the
    cluster is interrupted by a failing unit of the type."""
    span = window(conn, since=since, until=until)
    found = interruptions(conn, since=span["since"], until=span["until"], include_planned=include_planned)
    failed = [item for item in found if component_type(item["component"], topology) == kind]
    failures = len(failed)  # one root per incident: a unit's repeated fatal events count once
    units = units_of(kind, topology)
    notes = [_window_note(span),
             f"failures: incidents whose root component is a {kind}"]
    answer: dict = {
        "scope": kind, **_window_fields(span), "include_planned": include_planned,
        **_rate(count=failures, hours=span["hours"]),
        "units": units, "failures": failures, "unit_hours": None, "unit_mtbf_hours": None,
        "unit_ci95": [None, None], "project_to": project_to, "projected_mtbf_hours": None,
        "between_failures": _failure_times(failed),
    }
    if units is None:
        notes.append("no topology loaded: units unknown, so no per-unit MTBF (PUT /v1/topology)")
    elif units == 0:
        notes.append(f"the topology has no component of type {kind}")
    elif span["hours"] > 0:
        per_unit = unit_mtbf(units=units, observed_hours=span["hours"], failures=failures, project_to=project_to)
        answer.update({
            "unit_hours": per_unit["unit_hours"], "unit_mtbf_hours": per_unit["unit_mtbf_hours"],
            "unit_ci95": per_unit["ci95"], "projected_mtbf_hours": per_unit["projected_mtbf_hours"],
        })
    answer["notes"] = notes
    return answer


def job_known(conn: Connection, *, job: str, archive: Archive | None = None) -> bool:
    """Whether the job is registered, or any event (stored or archived) or incident names it."""
    if conn.execute(sa.select(jobs.c.id).where(jobs.c.id == job)).first() is not None:
        return True
    if conn.execute(sa.select(events.c.id).where(events.c.job == job).limit(1)).first() is not None:
        return True
    if archive is not None and archive.query("SELECT 1 FROM archived WHERE job = ? LIMIT 1", archives.recorded(conn), [job]):
        return True
    return conn.execute(sa.select(incidents.c.id).where(incidents.c.job == job).limit(1)).first() is not None


def job_running_span(conn: Connection, *, job: str, now: datetime,
                     archive: Archive | None = None) -> tuple[datetime | None, datetime | None, list[str]]:
    """When the job started and ended (or `now` while it runs), with the fallbacks taken."""
    def first_time(*kinds: str, last: bool = False) -> datetime | None:
        pick = sa.func.max if last else sa.func.min
        query = sa.select(pick(events.c.time)).where(events.c.job == job)
        if kinds:
            query = query.where(events.c.kind.in_(kinds))
        return store.from_db_time(conn.execute(query).scalar())

    notes = []
    registered = conn.execute(sa.select(jobs.c.start, jobs.c.end).where(jobs.c.id == job)).first()
    start = first_time("job_start")
    if start is None and registered is not None:
        start = store.from_db_time(registered.start)
        notes.append("no job_start event: running time counted from the job's registered start (POST /v1/jobs)")
    if start is None:
        start = first_time()
        if archive is not None:  # `job_*` events are never pruned, the job's others may be
            files = archives.recorded(conn, until=start)
            archived = store.from_db_time(archive.query("SELECT min(time) FROM archived WHERE job = ?", files, [job])[0][0]
                                          if files else None)
            start = min((t for t in (start, archived) if t is not None), default=None)
        if start is not None:
            notes.append("no job_start event: running time counted from the job's first event")
    end = first_time("job_end", last=True)
    if end is None and registered is not None and registered.end is not None:
        end = store.from_db_time(registered.end)
    if end is None or (start is not None and end < start):
        end = now
        notes.append("no job_end event: running time counted up to now")
    return start, end, notes


def job_mtbf(
    conn: Connection, *, job: str, since: datetime | None, until: datetime | None, include_planned: bool, now: datetime,
    archive: Archive | None = None,
) -> dict:
    """MTBF of one job: its running time in the window / its interruptions."""
    start, end, notes = job_running_span(conn, job=job, now=now, archive=archive)
    low = max(t for t in (start, since) if t is not None) if start or since else None
    check_until(until, low, "the job's start, where its running time begins")  # a given since is before until
    high = min(t for t in (end, until) if t is not None)
    hours = max(0.0, (high - low).total_seconds() / 3600) if low else 0.0
    found = interruptions(conn, since=low, until=high, job=job, include_planned=include_planned)
    notes.insert(0, "observed hours: the job's running time (job_start to job_end or now) within the window")
    return {
        "scope": f"job:{job}", "since": format_time(low), "until": format_time(high),
        "include_planned": include_planned, **_rate(count=len(found), hours=hours),
        "between_failures": _failure_times(found), "notes": notes,
    }


def causes(conn: Connection, *, since: datetime | None, until: datetime | None, job: str | None) -> dict:
    """The interruption ledger (SPEC §7) over the incidents that started in the window."""
    found = interruptions(conn, since=since, until=until, job=job)
    tally = ledger(found)
    return {
        "since": format_time(since), "until": format_time(until), "job": job, **tally,
        "degradations": degradations(conn, since=since, until=until, job=job),
        "notes": [
            "cause and category: on-call's confirmation where there is one, else the engine's",
            "gpu_hours_lost per interruption: GPUs of the job × (downtime from the failure to the "
            "job's next job_start/job_restart (or job_end) + progress since its last checkpoint_save or start); "
            "a missing restart counts no downtime, a missing save and start no rollback",
        ],
    }


def degradations(conn: Connection, *, since: datetime | None, until: datetime | None, job: str | None) -> dict:
    """Fail-slow episodes counted apart from interruptions: how many, by cause, and the GPU time they wasted."""
    query = sa.select(incidents.c.cause, sa.func.count(), sa.func.sum(incidents.c.gpu_hours_lost)).where(
        incidents.c.type == "degradation")
    query = _failed_within(query, since=since, until=until, job=job)
    rows = conn.execute(query.group_by(incidents.c.cause).order_by(incidents.c.cause)).all()
    return {"count": sum(n for _, n, _ in rows), "gpu_hours_wasted": round(sum(h or 0.0 for _, _, h in rows), 3),
            "by_cause": {cause: {"count": n, "gpu_hours_wasted": round(h or 0.0, 3)} for cause, n, h in rows}}


def measured_save_minutes(conn: Connection) -> float | None:
    """The median `duration_s` of the stored `checkpoint_save` events, in minutes."""
    rows = conn.execute(sa.select(events.c.attrs).where(events.c.kind == "checkpoint_save")).scalars()
    durations = []
    for attrs in rows:
        value = (store.json_value(attrs) or {}).get("duration_s")
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
            durations.append(value / 60.0)
    return statistics.median(durations) if durations else None


def measured_restart_minutes(conn: Connection) -> float | None:
    """The median downtime of unplanned interruptions that ended (failure → job running again)."""
    found = [item for item in interruptions(conn, include_planned=False) if item["interruption_end"]]
    downtimes = [(item["interruption_end"] - item["failed_at"]).total_seconds() / 60 for item in found]
    return statistics.median(downtimes) if downtimes else None


def simulation_plan(*, runs: int, interval: float, mtbf_minutes: float) -> tuple[int, float]:
    """How many runs of how much work fit the budget: (runs, work minutes per run)."""
    work = SIMULATED_MTBFS_PER_RUN * mtbf_minutes
    # A run costs about one event per segment, plus a failure and a restart each MTBF.
    per_run = work / interval + 2.0 * work / mtbf_minutes
    if 2 * per_run > SIMULATION_BUDGET:  # even two runs are too long: shorten them
        work *= SIMULATION_BUDGET / (2 * per_run)
        per_run = SIMULATION_BUDGET / 2
    return max(2, min(runs, int(SIMULATION_BUDGET // per_run))), work


def checkpoint(
    *,
    save_minutes: float,
    restart_minutes: float,
    mtbf_hours: float,
    interval_minutes: float | None,
    simulate: int | None = None,
    distribution: Literal["exponential", "weibull"] = "exponential",
    shape: float = 1.0,
    seed: int | None = None,
) -> dict:
    """Young's and Daly's intervals and the goodput at the interval in use, with an optional
    Monte Carlo check at that interval beside the closed form. Raises ValueError on bad input."""
    answer: dict = dict(economics(save_minutes=save_minutes, restart_minutes=restart_minutes,
                                  mtbf_hours=mtbf_hours, interval_minutes=interval_minutes))
    if simulate:
        interval = answer["interval_minutes"]
        mtbf_minutes = mtbf_hours * 60.0
        runs, work = simulation_plan(runs=simulate, interval=interval, mtbf_minutes=mtbf_minutes)
        try:
            simulated: dict = dict(simulate_goodput(
                interval=interval, save=save_minutes, restart=restart_minutes, mtbf=mtbf_minutes, runs=runs,
                work=work, distribution=distribution, shape=shape, seed=seed,
                max_events=SIMULATION_BUDGET + SIMULATION_BUDGET // 2))
        except ValueError as exc:
            raise ValueError(f"simulate: {exc}") from None
        simulated["requested_runs"] = simulate
        simulated["work_hours_per_run"] = work / 60.0
        simulated["closed_form_exact"] = goodput_exact(
            interval=interval, save=save_minutes, restart=restart_minutes, mtbf=mtbf_minutes)
        notes = []
        if runs < simulate:
            notes.append(f"runs capped at {runs} to keep the request short")
        if simulated["failures_per_run"] < 1:
            notes.append("the runs were too short to see failures: trust the closed form here")
        simulated["notes"] = notes
        answer["simulated"] = simulated
    return answer


def checkpoint_inputs(
    conn: Connection,
    *,
    save_minutes: float | None,
    restart_minutes: float | None,
    mtbf_hours: float | None,
    distribution: str,
    shape: float | None,
) -> tuple[dict[str, float], dict[str, str]]:
    """The checkpoint model's inputs, measured where not given, and where each came from.

    save time: the median `checkpoint_save` duration_s; restart: the median downtime of the
    unplanned interruptions that ended; MTBF: the cluster's over the whole event stream; a
    Weibull shape: the fit of the cluster's time between failures. Raises ValueError naming
    the parameter when it is neither given nor measurable.
    """
    values: dict[str, float] = {}
    sources: dict[str, str] = {}

    def pick(name: str, given: float | None, measure: Callable[[], float | None], how: str,
             fallback: float | None = None) -> None:
        if given is not None:
            values[name], sources[name] = given, "given"
            return
        measured = measure()
        if measured is not None:
            values[name], sources[name] = measured, how
        elif fallback is not None:
            values[name], sources[name] = fallback, "default (nothing to measure it from)"
        else:
            raise ValueError(f"{name}: not given and nothing stored to measure it from; pass {name}=")

    pick("save_minutes", save_minutes, lambda: measured_save_minutes(conn),
         "measured: median duration_s of checkpoint_save events")
    pick("restart_minutes", restart_minutes, lambda: measured_restart_minutes(conn),
         "measured: median downtime of unplanned interruptions", fallback=0.0)
    cluster: dict | None = None

    def measured_cluster() -> dict:
        nonlocal cluster
        if cluster is None:
            cluster = cluster_mtbf(conn, since=None, until=None, include_planned=False)
        return cluster

    pick("mtbf_hours", mtbf_hours, lambda: measured_cluster()["mtbf_hours"],
         "measured: cluster MTBF of unplanned interruptions over all stored events")
    if distribution == "weibull":
        def fitted() -> float | None:
            fit = measured_cluster()["between_failures"]["weibull"]
            return fit["shape"] if fit else None
        pick("shape", shape, fitted, "measured: Weibull fit of the cluster's time between failures")
    else:
        values["shape"] = 1.0
    return values, sources
