"""Retention: raw low-severity events older than their retention are rolled up into hourly
counts, archived to Parquet, and removed; everything that explains an incident stays.

One closed day at a time, each in one transaction (rollup added, rows deleted, archived
file recorded): a crash leaves a day either untouched or done, never half-counted, and a
second run finds nothing left to do. The day's Parquet file is written first, whole or not
at all (service/events/archive.py); a file a crashed run wrote is not recorded, so it is
never read, and the next run for that day deletes it and writes the day again.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from faultgraph.service import store, transfer
from faultgraph.service.config import Settings
from faultgraph.service.events import archive as archives
from faultgraph.service.events.archive import Archive
from faultgraph.service.events.models import archive_files, event_rollups, events
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

    raw_days: int = 30
    sample_days: int = 7
    archive: Archive | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> "Retention":
        """FAULTGRAPH_RETAIN_* and FAULTGRAPH_ARCHIVE*; ValueError names a malformed archive target."""
        return cls(settings.retain_raw_days, settings.retain_sample_days, archives.from_settings(settings))


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


def _prune_day(engine: Engine, day: date, cutoffs: tuple, archive: Archive | None) -> int:
    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            # One snapshot for the archive, the rollup and the delete (a late event committed
            # meanwhile waits for the next pass), and one pruner at a time across replicas.
            conn.execution_options(isolation_level="REPEATABLE READ")
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(7070707)")
        which = _prunable(*cutoffs, day)
        archived = _archive_day(conn, day, which, archive) if archive is not None else None
        hour = sa.func.date_trunc("hour", events.c.time).label("hour")
        counts = conn.execute(
            sa.select(hour, events.c.host, events.c.kind, events.c.severity, sa.func.count().label("count"),
                      sa.func.min(events.c.time).label("first"), sa.func.max(events.c.time).label("last"))
            .where(which).group_by(hour, events.c.host, events.c.kind, events.c.severity)
        ).all()
        _add_rollups(conn, counts)
        removed = conn.execute(events.delete().where(which)).rowcount
        if archived is not None and removed != archived:
            conn.rollback()
            raise RuntimeError(f"prune {day}: {removed} rows to remove but {archived} archived; day left as it was")
        conn.commit()
    log.info("pruned %s: %d raw events rolled up%s", day, removed, f" and archived to {archive.target}" if archive else "")
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


def _archive_day(conn: Connection, day: date, which, archive: Archive) -> int:
    """The day's rows to `events/day=YYYY-MM-DD/seq-<first>-<last>.parquet` under the archive,
    recorded in `archive_files` by the caller's transaction; the rows archived. Files of the day
    a crashed run left unrecorded go first: their rows are still live, and are in the file
    written now."""
    recorded = set(conn.execute(sa.select(archive_files.c.path).where(archive_files.c.day == day)).scalars())
    archive.delete([name for name in archive.files_of(day) if name not in recorded])
    first, last, count = conn.execute(sa.select(sa.func.min(events.c.seq), sa.func.max(events.c.seq),
                                                sa.func.count()).where(which)).one()
    if not count:
        return 0
    name = archive.name(day, first, last)
    rows = conn.execute(sa.select(events).where(which).order_by(events.c.seq)
                        .execution_options(yield_per=transfer.CHUNK_ROWS))  # the statement's, not the connection's
    archive.write(name, (transfer.arrow_rows(events, [row._asdict() for row in part]) for part in rows.partitions()))
    conn.execute(archive_files.insert().values(path=name, day=day, first_seq=first, last_seq=last, rows=count))
    return int(count)


def prune_loop(engine: Engine, retention: Retention, *, leading: Callable[[], bool], period: float = 3600.0) -> Loop:
    """The scheduled pass, started: `prune` every `period` seconds while `leading()` (one replica)."""
    return Loop("prune", lambda: prune(engine, retention, now=datetime.now(UTC)), interval=period, leading=leading).start()
