"""Reading the hosts' liveness state: one row per host that ever sent a heartbeat."""

import base64
import binascii
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from faultgraph.service import store
from faultgraph.service.events.models import hosts_seen
from faultgraph.service.events.service import format_time


def encode_cursor(host: str) -> str:
    return base64.urlsafe_b64encode(host.encode()).decode()


def decode_cursor(cursor: str) -> str:
    """The host a page ended at; ValueError for anything not made by `encode_cursor`."""
    try:
        host = base64.b64decode(cursor.encode(), altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        host = ""
    if not host:
        raise ValueError("cursor is not one this server returned")
    return host


def page(conn: Connection, *, now: datetime, timeout: timedelta, limit: int, cursor: str | None = None,
         lost: bool | None = None) -> tuple[list[dict], str | None]:
    """One page of hosts in name order, with how long each has been silent; `lost` keeps only
    the hosts silent past `timeout` (True) or within it (False)."""
    query = sa.select(hosts_seen)
    if cursor:
        query = query.where(hosts_seen.c.host > decode_cursor(cursor))
    if lost is not None:
        cutoff = store.to_db_time(now - timeout)
        query = query.where(hosts_seen.c.last_seen < cutoff if lost else hosts_seen.c.last_seen >= cutoff)
    rows = conn.execute(query.order_by(hosts_seen.c.host).limit(limit + 1)).all()
    found = []
    for row in rows[:limit]:
        silent = (now - store.from_db_time(row.last_seen)).total_seconds()
        found.append({"host": row.host, "last_seen": format_time(row.last_seen), "last_beat": format_time(row.last_beat),
                      "clock_offset_s": row.clock_offset_s, "silent_s": round(silent, 3),
                      "lost": silent > timeout.total_seconds()})
    following = encode_cursor(rows[limit - 1].host) if len(rows) > limit else None
    return found, following
