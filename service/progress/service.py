"""Training progress: fold new `train_step` events into the series, read series and windows."""

from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from faultgraph.attribution.stragglers import MAX_SAMPLES, RankTiming, Sample
from faultgraph.service import store
from faultgraph.service.events.models import events
from faultgraph.service.progress.models import train_progress


def _number(name: str) -> sa.ColumnElement:
    """An attrs number as SQL (`->>` reads JSON on both DuckDB and PostgreSQL)."""
    return sa.cast(sa.literal_column(f"attrs->>'{name}'"), sa.Float)


def fold(conn: Connection, *, after_seq: int, up_to_seq: int) -> dict[str, int]:
    """Add the `train_step` events committed in (after_seq, up_to_seq] to the series; the
    jobs touched, each with the highest step folded."""
    step = sa.cast(sa.literal_column("attrs->>'step'"), sa.BigInteger)
    query = (
        sa.select(events.c.job, step.label("step"), sa.func.max(events.c.time), sa.func.count(),
                  sa.func.sum(_number("duration_ms")))
        .where(events.c.seq > after_seq, events.c.seq <= up_to_seq, events.c.kind == "train_step",
               events.c.job.is_not(None))
        .group_by(events.c.job, step)
    )
    rows = [{"job": job, "step": s, "time": t, "reports": n, "duration_ms": total or 0.0, "through_seq": up_to_seq}
            for job, s, t, n, total in conn.execute(query) if s is not None]
    if rows:
        conn.execute(train_progress.insert(), rows)
    latest: dict[str, int] = {}
    for row in rows:
        latest[row["job"]] = max(row["step"], latest.get(row["job"], row["step"]))
    return latest


def series(conn: Connection, *, job: str) -> list[Sample]:
    """A job's latest `MAX_SAMPLES` steps: mean duration over the ranks that reported each."""
    query = (
        sa.select(train_progress.c.step, sa.func.max(train_progress.c.time),
                  sa.func.sum(train_progress.c.duration_ms) / sa.func.sum(train_progress.c.reports))
        .where(train_progress.c.job == job)
        .group_by(train_progress.c.step)
        .order_by(train_progress.c.step.desc())
        .limit(MAX_SAMPLES)
    )
    rows = conn.execute(query).all()
    return [Sample(step=int(s), time=t.replace(tzinfo=UTC), ms=float(ms)) for s, t, ms in reversed(rows)]


def rank_timing(conn: Connection, *, job: str, low: datetime, high: datetime) -> dict[int, RankTiming]:
    """Each rank's mean step, compute and wait time over [low, high]."""
    query = (
        sa.select(events.c.rank, sa.func.min(events.c.host), sa.func.avg(_number("duration_ms")),
                  sa.func.avg(_number("compute_ms")), sa.func.avg(_number("wait_ms")))
        .where(events.c.kind == "train_step", events.c.job == job, events.c.rank.is_not(None),
               events.c.time >= store.to_db_time(low), events.c.time <= store.to_db_time(high))
        .group_by(events.c.rank)
    )
    return {rank: RankTiming(rank, host, duration, compute, wait) for rank, host, duration, compute, wait in conn.execute(query)}
