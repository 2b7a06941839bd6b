"""Jobs: registration rows, placement from a row, state write-through, and queries."""

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from faultgraph.attribution.placement import DEFAULT_ORDER, Placement
from faultgraph.service import store
from faultgraph.service.events.service import decode_cursor, encode_cursor, format_time
from faultgraph.service.jobs.models import JobIn, jobs

PLACEMENT_FIELDS: tuple[str, ...] = ("gpus_per_host", "hosts", "ranks", "parallelism")


def to_row(job: JobIn, *, registered: datetime, topology_version: int | None) -> dict[str, Any]:
    """A validated registration → the `jobs` row (times naive UTC, as stored)."""
    start = job.start or registered
    state = job.state or ("ended" if job.end is not None else "running")
    return {
        "id": job.id,
        "start": store.to_db_time(start),
        "end": store.to_db_time(job.end) if job.end is not None else None,
        "state": state,
        "state_time": store.to_db_time(job.end or start),
        "registered": store.to_db_time(registered),
        "gpus_per_host": job.gpus_per_host,
        "hosts": job.hosts,
        "ranks": [slot.model_dump() for slot in job.ranks] if job.ranks is not None else None,
        "parallelism": job.parallelism,
        "topology_version": topology_version,
        "attrs": job.model_extra or None,
    }


def placement_of(row: Mapping[str, Any] | sa.RowMapping) -> Placement:
    """The placement a stored row describes (it was valid when stored)."""
    return Placement.from_job({key: row[key] for key in PLACEMENT_FIELDS if row[key] is not None})


def create(conn: Connection, *, row: dict[str, Any]) -> bool:
    """Store a registration, replacing one with the same id; True when it is new."""
    existed = conn.execute(sa.delete(jobs).where(jobs.c.id == row["id"])).rowcount > 0
    conn.execute(jobs.insert().values(**row))
    return not existed


def set_state(
    conn: Connection, *, job_id: str, start: datetime, state: str, state_time: datetime, end: datetime | None
) -> None:
    """Write through a change made by a `job_*` event."""
    conn.execute(
        sa.update(jobs)
        .where(jobs.c.id == job_id)
        .values(
            start=store.to_db_time(start), state=state, state_time=store.to_db_time(state_time),
            end=store.to_db_time(end) if end is not None else None,
        )
    )


def get(conn: Connection, *, job_id: str) -> sa.Row | None:
    return conn.execute(sa.select(jobs).where(jobs.c.id == job_id)).first()


def get_every(conn: Connection) -> Sequence[sa.Row[Any]]:
    """Every stored job, oldest start first (the order the start-up load indexes them)."""
    return conn.execute(sa.select(jobs).order_by(jobs.c.start, jobs.c.id)).fetchall()


def get_all(
    conn: Connection, *, limit: int, cursor: str | None = None, state: str | None = None
) -> tuple[Sequence[sa.Row[Any]], str | None]:
    """One page of jobs, newest start first, and the cursor of the next page."""
    query = sa.select(jobs)
    if state is not None:
        query = query.where(jobs.c.state == state)
    if cursor:
        before_start, before_id = decode_cursor(cursor)
        query = query.where(
            sa.tuple_(jobs.c.start, jobs.c.id) < sa.tuple_(sa.literal(before_start), sa.literal(before_id))
        )
    rows = conn.execute(query.order_by(jobs.c.start.desc(), jobs.c.id.desc()).limit(limit + 1)).fetchall()
    page = rows[:limit]
    following = encode_cursor(page[-1].start, page[-1].id) if len(rows) > limit else None
    return page, following


def summary(row: sa.Row) -> dict[str, Any]:
    """A job as the list shows it: no per-host detail."""
    world = len(row.ranks) if row.ranks is not None else len(row.hosts) * row.gpus_per_host
    hosts = len({slot["host"] for slot in row.ranks}) if row.ranks is not None else len(row.hosts)
    return {
        "id": row.id,
        "state": row.state,
        "start": format_time(row.start),
        "end": format_time(row.end),
        "world_size": world,
        "host_count": hosts,
        "parallelism": row.parallelism,
        "topology_version": row.topology_version,
    }


def detail(row: sa.Row, placement: Placement) -> dict[str, Any]:
    """A job in full: placement as registered, the layout, and its communicator groups."""
    layout = {dim: placement.sizes[dim] for dim in ("tp", "cp", "dp", "pp")}
    out = {
        **summary(row),
        "registered": format_time(row.registered),
        "state_time": format_time(row.state_time),
        "hosts": placement.hosts(),
        "gpus_per_host": row.gpus_per_host,
        "layout": {**layout, "order": (row.parallelism or {}).get("order", DEFAULT_ORDER)},
        "groups": {
            dim: {"size": size, "count": placement.world_size // size}
            for dim, size in layout.items()
        },
        "attrs": row.attrs or {},
    }
    if row.ranks is not None:
        out["ranks"] = row.ranks
    return out

