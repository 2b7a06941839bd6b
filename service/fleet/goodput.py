"""Effective training time per job and for the cluster (SPEC §7 `/v1/stats/goodput`),
gathered from the stored events and incidents; the arithmetic is attribution/goodput.py.

Interruptions are the job's incidents of type `interruption` (a store without the `type`
column reads every incident as one); degradations are its `degradation` incidents, with
their `slowdown`, from the interruption's start to its end (else its last symptom).
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from faultgraph.attribution.goodput import JobRecord, Slowdown, Stop, combine, measure
from faultgraph.service import store
from faultgraph.service.events.models import events
from faultgraph.service.events.service import format_time
from faultgraph.service.incidents.models import incidents
from faultgraph.service.jobs.models import jobs
from faultgraph.service.stats.service import job_running_span, window

MAX_JOBS = 1000  # jobs one cluster-wide answer measures; the busiest by event count first


def _gpus(conn: Connection, job: str) -> int:
    row = conn.execute(sa.select(jobs.c.gpus_per_host, jobs.c.hosts, jobs.c.ranks).where(jobs.c.id == job)).first()
    if row is not None:
        ranks, hosts = store.json_value(row.ranks), store.json_value(row.hosts)
        if ranks:
            return len(ranks)
        if hosts and row.gpus_per_host:
            return len(hosts) * row.gpus_per_host
    most = conn.execute(sa.select(sa.func.max(incidents.c.gpus)).where(incidents.c.job == job)).scalar()
    return max(1, most or 1)


def _incidents(conn: Connection, job: str) -> tuple[list[Stop], list[Slowdown]]:
    columns = [incidents.c.failed_at, incidents.c.interruption_end, incidents.c.last, incidents.c.cause,
               incidents.c.planned, *(incidents.c[name] for name in ("type", "slowdown") if name in incidents.c)]
    stops, slowdowns = [], []
    for row in conn.execute(sa.select(*columns).where(incidents.c.job == job)):
        failed, end = store.from_db_time(row.failed_at), store.from_db_time(row.interruption_end)
        if (getattr(row, "type", None) or "interruption") == "degradation":
            slow = getattr(row, "slowdown", None)
            if slow:
                slowdowns.append(Slowdown(failed, end or store.from_db_time(row.last), float(slow), row.cause))
        elif getattr(row, "type", None) in (None, "interruption"):
            stops.append(Stop(failed, end, row.cause, bool(row.planned)))
    return stops, slowdowns


def _events(conn: Connection, job: str, kinds: tuple[str, ...]) -> list[sa.Row]:
    return list(conn.execute(sa.select(events.c.time, events.c.kind, events.c.attrs).where(
        events.c.job == job, events.c.kind.in_(kinds)).order_by(events.c.time)))


def job_record(conn: Connection, *, job: str, since: datetime | None, until: datetime | None,
               now: datetime) -> tuple[JobRecord | None, list[str]]:
    """Everything measured about one job in the window, and the fallbacks taken."""
    start, end, notes = job_running_span(conn, job=job, now=now)
    if start is None or end is None:
        return None, notes
    low, high = max(start, since) if since else start, min(end, until) if until else end
    if high <= low:
        return None, notes
    stops, slowdowns = _incidents(conn, job)
    saves, restarts = [], []
    for row in _events(conn, job, ("checkpoint_save", "job_start", "job_restart")):
        time = store.from_db_time(row.time)
        if row.kind == "checkpoint_save":
            seconds = (store.json_value(row.attrs) or {}).get("duration_s")
            if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds >= 0:
                saves.append((time, float(seconds)))
        else:
            restarts.append(time)
    return JobRecord(job, low, high, _gpus(conn, job), stops, saves, restarts, slowdowns), notes


def goodput(conn: Connection, *, job: str | None, since: datetime | None, until: datetime | None,
            now: datetime) -> dict | None:
    """One job's measure (None if it has no running time in the window), or the GPU-hour
    weighted measure over the jobs with events in the window."""
    if job is not None:
        record, notes = job_record(conn, job=job, since=since, until=until, now=now)
        if record is None:
            return None
        return {**measure(record), "since": format_time(record.start), "until": format_time(record.end),
                "notes": notes}
    span = window(conn, since=since, until=until)
    query = sa.select(events.c.job).where(events.c.job.is_not(None))
    if span["since"] is not None:
        query = query.where(events.c.time >= store.to_db_time(span["since"]))
    if span["until"] is not None:
        query = query.where(events.c.time <= store.to_db_time(span["until"]))
    named = conn.execute(query.group_by(events.c.job).order_by(sa.func.count().desc(), events.c.job)
                         .limit(MAX_JOBS)).scalars().all()
    measured = []
    for name in named:
        record, _ = job_record(conn, job=name, since=span["since"], until=span["until"], now=now)
        if record is not None:
            measured.append(measure(record))
    return {**combine(measured), "since": format_time(span["since"]), "until": format_time(span["until"]),
            "per_job": [{k: m[k] for k in ("job", "gpus", "wall_hours", "eta")} | {"model_eta": m["model"]["eta"]}
                        for m in measured]}
