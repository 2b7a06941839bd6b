"""Remediation's record: every decision and its outcome is an `audit` event.

`audit` is refused from posts (SPEC §1), so these are written through the service's own
path: `audit_event` builds one and the caller's `store` (the app's durable writer, or a
direct insert) keeps it. This is the one place remediation writes audit events, so it can
later be routed through the service-wide audit trail.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from faultgraph.service import audit, store
from faultgraph.service.events.models import events
from faultgraph.service.events.service import Pending, format_time
from faultgraph.service.remediation.models import ACTOR

Store = Callable[[list[dict]], None]


def audit_event(*, time: datetime, action: str, host: str, detail: dict) -> dict:
    """One SPEC §1 `audit` event for a remediation decision, built by `service.audit` (the
    one place audit events are shaped), on the host acted on, with an id derived from its
    content so a pass repeated after a crash does not store it twice."""
    digest = hashlib.blake2b(orjson.dumps([format_time(time), action, host, detail], option=orjson.OPT_SORT_KEYS),
                             digest_size=12)
    return {**audit.event(actor=ACTOR, action=action, target=host, detail=detail, when=time),
            "host": host, "component": host, "id": "audit-" + digest.hexdigest(),
            "severity": "info" if detail.get("outcome") in ("done", "dry_run") else "warning",
            "message": f"remediation {action} {host}: {detail.get('outcome')}"}


def writer_store(writer) -> Store:
    """A `Store` through the app's group-commit writer, returning once durable."""
    def keep(generated: list[dict]) -> None:
        writer.submit(Pending(generated, datetime.now(UTC))).result(timeout=60)
    return keep


def actions(conn: Connection, *, incident: str | None = None, host: str | None = None,
            since: datetime | None = None) -> list[dict]:
    """Remediation's audit records, oldest first, optionally for one incident or host."""
    query = sa.select(events.c.time, events.c.host, events.c.attrs, events.c.id).where(events.c.kind == "audit")
    if since is not None:
        query = query.where(events.c.time >= store.to_db_time(since))
    if host is not None:
        query = query.where(events.c.host == host)
    found = []
    for row in conn.execute(query.order_by(events.c.time, events.c.id)):
        attrs = store.json_value(row.attrs) or {}
        detail = attrs.get("detail") or {}
        if attrs.get("actor") != ACTOR or (incident is not None and detail.get("incident") != incident):
            continue
        found.append({"id": row.id, "time": store.from_db_time(row.time), "host": row.host,
                      "action": attrs.get("action"), **detail})
    return found


def public(record: dict) -> dict:
    """A record as the API answers it."""
    return {**record, "time": format_time(record["time"])}
