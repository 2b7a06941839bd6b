"""Retention: raw low-severity events older than their retention are rolled up into hourly
counts, archived to Parquet, and removed; everything that explains an incident stays.

One closed day at a time, each in one transaction (rollup added, rows deleted): a crash
leaves a day either untouched or done, never half-counted, and a second run finds nothing
left to do. The day's Parquet file is written first, named for that day and the range of
`seq` it holds, and replaced atomically: a crash after writing it and before the commit
leaves a file the next run writes again, identically.
"""

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from faultgraph.service import store, transfer
from faultgraph.service.events.models import event_rollups, events
from faultgraph.service.incidents.models import incident_events
from faultgraph.service.loops import Loop

log = logging.getLogger(__name__)

# Kept whatever their age: what the engine, the timeline and the statistics read as facts
# (jobs, maintenance, component state, liveness transitions, the service's own audit).
KEPT_KINDS = ("job_start", "job_end", "job_fail", "job_restart", "maintenance", "component_state",
              "host_heartbeat", "checkpoint_save", "checkpoint_load", "audit")
# Severities whose raw rows are subject to retention (correctable counters, samples).
PRUNED_SEVERITIES = ("debug", "info", "warning")
# Periodic samples (one per rank per step, per GPU per interval): the largest class by far
# (a 16,384-rank job's train_step alone is 1,600 events/s), kept raw for less time.
SAMPLE_KINDS = ("train_step", "gpu_perf")


@dataclass(frozen=True)
class Retention:
    """Days raw low-severity events and samples are kept, and where removed days are
    archived (None: not)."""

    raw_days: int = int(os.environ.get("FAULTGRAPH_RETAIN_RAW_DAYS", "30"))
    sample_days: int = int(os.environ.get("FAULTGRAPH_RETAIN_SAMPLE_DAYS", "7"))
    archive: Path | None = Path(os.environ["FAULTGRAPH_ARCHIVE"]) if os.environ.get("FAULTGRAPH_ARCHIVE") else None


def _prunable(raw_before: datetime | None, sample_before: datetime | None, day: date | None = None):
    """Events past their class's retention (a class whose cutoff is None is kept)."""
    classes = []
    if raw_before is not None:
        classes.append(sa.and_(events.c.time < store.to_db_time(raw_before), events.c.kind.not_in(SAMPLE_KINDS)))
    if sample_before is not None:
        classes.append(sa.and_(events.c.time < store.to_db_time(sample_before), events.c.kind.in_(SAMPLE_KINDS)))
    clauses = [sa.or_(*classes), events.c.severity.in_(PRUNED_SEVERITIES), events.c.kind.not_in(KEPT_KINDS),
               ~sa.exists().where(incident_events.c.event_id == events.c.id)]
    if day is not None:
        start = datetime(day.year, day.month, day.day)
        clauses += [events.c.time >= start, events.c.time < start + timedelta(days=1)]
    return sa.and_(*clauses)


def prune(engine: Engine, retention: Retention, *, now: datetime) -> dict[str, int]:
    """Roll up, archive and remove the prunable raw events of every day closed before
    `now - raw_days`; returns {"days", "rows"} done by this run (0 and 0 when there was nothing).
    A class's days set to 0 keeps that class."""
    def cutoff(days: int) -> datetime | None:
        if days <= 0:
            return None
        return datetime.combine((now - timedelta(days=days)).astimezone(UTC).date(), datetime.min.time(), UTC)

    cutoffs = (cutoff(retention.raw_days), cutoff(retention.sample_days))
    if cutoffs == (None, None):
        return {"days": 0, "rows": 0}
    with engine.connect() as conn:
        day_of = sa.func.date_trunc("day", events.c.time)
        days = sorted({row[0].date() for row in conn.execute(sa.select(day_of).where(_prunable(*cutoffs)).distinct())})
    done = {"days": 0, "rows": 0}
    for day in days:
        done["rows"] += _prune_day(engine, day, cutoffs, retention.archive)
        done["days"] += 1
    return done


def _prune_day(engine: Engine, day: date, cutoffs: tuple, archive: Path | None) -> int:
    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":  # one pruner at a time across replicas
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(7070707)")
        which = _prunable(*cutoffs, day)
        if archive is not None:
            _archive_day(conn, day, which, archive)
        hour = sa.func.date_trunc("hour", events.c.time).label("hour")
        counts = conn.execute(
            sa.select(hour, events.c.host, events.c.kind, events.c.severity, sa.func.count().label("count"),
                      sa.func.min(events.c.time).label("first"), sa.func.max(events.c.time).label("last"))
            .where(which).group_by(hour, events.c.host, events.c.kind, events.c.severity)
        ).all()
        _add_rollups(conn, counts)
        removed = conn.execute(events.delete().where(which)).rowcount
        conn.commit()
    log.info("pruned %s: %d raw events rolled up%s", day, removed, f" and archived to {archive}" if archive else "")
    return removed


def _add_rollups(conn: Connection, counts: list) -> None:
    """Add hourly counts to `event_rollups` (a late event for an hour already rolled adds to it)."""
    if not counts:
        return
    key = ("hour", "host", "kind", "severity")
    rows = [dict(zip((*key, "count", "first", "last"), row, strict=True)) for row in counts]
    insert = sa.dialects.postgresql.insert(event_rollups).values(rows)
    conn.execute(insert.on_conflict_do_update(index_elements=list(key), set_={
        "count": event_rollups.c.count + insert.excluded.count,
        "first": sa.func.least(event_rollups.c.first, insert.excluded.first),
        "last": sa.func.greatest(event_rollups.c.last, insert.excluded.last),
    }))


def _archive_day(conn: Connection, day: date, which, archive: Path) -> None:
    """The day's rows to `archive/events/day=YYYY-MM-DD/seq-<first>-<last>.parquet` in the
    export's format (`faultgraph import` reads it back)."""
    schema = transfer.arrow_schema(events)
    records = [row._asdict() for row in conn.execute(sa.select(events).where(which).order_by(events.c.seq))]
    if not records:
        return
    for record in records:
        if record["attrs"] is not None and not isinstance(record["attrs"], str):
            record["attrs"] = orjson.dumps(record["attrs"]).decode()
    rows = pa.Table.from_pylist(records, schema=schema)
    folder = archive / "events" / f"day={day.isoformat()}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"seq-{records[0]['seq']}-{records[-1]['seq']}.parquet"
    partial = folder / f".{path.name}.partial"  # hidden: readers of the archive skip it
    pq.write_table(rows, partial)
    with open(partial, "rb") as handle:
        os.fsync(handle.fileno())
    partial.replace(path)


def prune_loop(engine: Engine, retention: Retention, *, leading: Callable[[], bool], period: float = 3600.0) -> Loop:
    """The scheduled pass, started: `prune` every `period` seconds while `leading()` (one replica)."""
    return Loop("prune", lambda: prune(engine, retention, now=datetime.now(UTC)), interval=period, leading=leading).start()
