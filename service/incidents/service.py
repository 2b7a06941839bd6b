"""Incidents: read, list, page, and apply on-call's confirmations."""

import base64
from datetime import datetime

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from faultgraph.service import store
from faultgraph.service.events import service as events_service
from faultgraph.service.events.models import events
from faultgraph.service.incidents.models import (
    IncidentPatch,
    effective_planned,
    incident_events,
    incidents,
    merged_confirmation,
    refuse_a_category_without_its_cause,
)


def row_to_incident(row: sa.Row) -> dict:
    """A stored row → the SPEC §5 shape (plus scope, planned, confirmed and notes)."""
    root_cause = dict(store.json_value(row.root_cause))
    confirmed = store.json_value(row.confirmed)
    if confirmed:
        root_cause.update({k: v for k, v in confirmed.items() if v is not None and k in ("component", "category", "cause")})
        root_cause["confirmed"] = True
    return {
        "id": row.id,
        "status": row.status,
        "opened": events_service.format_time(row.opened),
        "closed": events_service.format_time(row.closed),
        "updated": events_service.format_time(row.updated),
        "job": row.job,
        "scope": row.scope,
        "type": row.type,
        "planned": row.planned,
        "symptoms": row.symptoms,
        "hosts": row.hosts,
        "root_cause": root_cause,
        "engine_root_cause": store.json_value(row.root_cause) if confirmed else None,
        "candidates": store.json_value(row.candidates),
        "action": store.json_value(row.action),
        "interruption": {
            "start": events_service.format_time(row.failed_at),
            "end": events_service.format_time(row.interruption_end),
            "gpus": row.gpus,
            "gpu_hours_lost": row.gpu_hours_lost,
        },
        "notes": store.json_value(row.notes),
        "clock_offsets": store.json_value(row.clock_offsets) or {},
        "topology_version": row.topology_version,
        "slowdown": round(row.slowdown, 4) if row.slowdown is not None else None,  # a REAL column on DuckDB
    }


def get(conn: Connection, *, incident_id: str) -> dict | None:
    """One incident by id."""
    row = conn.execute(sa.select(incidents).where(incidents.c.id == incident_id)).first()
    return row_to_incident(row) if row else None



def get_all(
    conn: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    status: str | None = None,
    category: str | None = None,
    job: str | None = None,
    type: str | None = None,
    limit: int = 100,
    cursor: str | None = None,
) -> tuple[list[dict], str | None]:
    """Incidents newest first, filtered, one page at a time."""
    query = sa.select(incidents)
    if since:
        query = query.where(incidents.c.start >= store.to_db_time(since))
    if until:
        query = query.where(incidents.c.start < store.to_db_time(until))
    if status:
        query = query.where(incidents.c.status == status)
    if category:
        query = query.where(incidents.c.category == category)
    if job:
        query = query.where(incidents.c.job == job)
    if type:
        query = query.where(incidents.c.type.in_(type.split(",")))
    if cursor:
        try:
            after = int(orjson.loads(base64.urlsafe_b64decode(cursor.encode())))
        except Exception:
            raise ValueError("cursor is not one this server returned") from None
        query = query.where(incidents.c.number < after)
    rows = conn.execute(query.order_by(incidents.c.number.desc()).limit(limit + 1)).fetchall()
    page = rows[:limit]
    following = base64.urlsafe_b64encode(orjson.dumps(page[-1].number)).decode() if len(rows) > limit else None
    return [row_to_incident(row) for row in page], following


def timeline(conn: Connection, *, incident_id: str, limit: int) -> list[dict]:
    """The incident's member and evidence events in time order."""
    query = (
        sa.select(events)
        .join(incident_events, incident_events.c.event_id == events.c.id)
        .where(incident_events.c.incident_id == incident_id)
        .order_by(events.c.time, events.c.id)
        .limit(limit)
    )
    return [events_service.row_to_event(row) for row in conn.execute(query)]


def update(conn: Connection, *, incident_id: str, patch: IncidentPatch, now: datetime) -> dict | None:
    """Apply on-call's confirmation, override, status or note; None when there is no such incident."""
    row = conn.execute(sa.select(incidents).where(incidents.c.id == incident_id)).first()
    if row is None:
        return None
    values: dict = {"updated": store.to_db_time(now)}
    if patch.root_cause is not None:
        earlier = store.json_value(row.confirmed)
        confirmed = merged_confirmation(earlier, patch.root_cause)
        engine_cause = store.json_value(row.root_cause)
        refuse_a_category_without_its_cause(confirmed, engine_cause)
        values["confirmed"] = confirmed
        values["cause"] = confirmed["cause"] or engine_cause["cause"]
        values["category"] = confirmed["category"] or engine_cause["category"]
        # The column holds the effective verdict; the engine's own, where an earlier
        # confirmation overrode it, is what its root cause says.
        engine_planned = engine_cause["cause"] == "planned_maintenance" if (earlier or {}).get("cause") else row.planned
        values["planned"] = effective_planned(confirmed, engine_planned)
    if patch.status is not None:
        values["status"] = patch.status
        values["status_set_by_oncall"] = True
        values["closed"] = store.to_db_time(now) if patch.status == "resolved" else None
    if patch.note:
        notes = list(store.json_value(row.notes) or [])
        notes.append({"time": events_service.format_time(store.to_db_time(now)), "author": patch.author, "text": patch.note})
        values["notes"] = notes
    conn.execute(incidents.update().where(incidents.c.id == incident_id).values(**values))
    return get(conn, incident_id=incident_id)
