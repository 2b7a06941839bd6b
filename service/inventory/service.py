"""Inventory: store a host's outputs, rebuild its part of the graph, say what changed."""

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from faultgraph.service import store
from faultgraph.service.inventory.models import inventories, topology_changes


def save(conn: Connection, *, host: str, files: dict[str, str], received: datetime, collected: datetime | None) -> None:
    """Keep the host's latest outputs (replacing the previous ones)."""
    conn.execute(sa.delete(inventories).where(inventories.c.host == host))
    conn.execute(inventories.insert().values(
        host=host, files=files, received=store.to_db_time(received),
        collected=store.to_db_time(collected) if collected else None))


def record_changes(conn: Connection, *, version: int, source: str, changes: dict[str, Any]) -> None:
    conn.execute(topology_changes.insert().values(version=version, source=source, changes=changes))


def changes_by_version(conn: Connection) -> dict[int, dict[str, Any]]:
    """What each inventory-made version changed, by version."""
    rows = conn.execute(sa.select(topology_changes))
    return {row.version: {"source": row.source, **row.changes} for row in rows}


def diff(old: dict[str, list[dict]], new: dict[str, list[dict]]) -> dict[str, Any]:
    """What differs between two graphs: components added/removed, attributes changed (a
    GPU serial swapped), links added/removed (a cable moved: one removed, one added)."""
    before = {c["id"]: c for c in old.get("components", [])}
    after = {c["id"]: c for c in new.get("components", [])}
    changed = []
    for cid in sorted(before.keys() & after.keys()):
        a, b = before[cid].get("attrs") or {}, after[cid].get("attrs") or {}
        for key in sorted(a.keys() | b.keys()):
            if a.get(key) != b.get(key):
                changed.append({"component": cid, "attr": key, "old": a.get(key), "new": b.get(key)})
    links_before = {_link_key(link) for link in old.get("links", [])}
    links_after = {_link_key(link) for link in new.get("links", [])}
    return {
        "components_added": sorted(after.keys() - before.keys()),
        "components_removed": sorted(before.keys() - after.keys()),
        "attrs_changed": changed,
        "links_added": sorted("~".join(k) for k in links_after - links_before),
        "links_removed": sorted("~".join(k) for k in links_before - links_after),
    }


def _link_key(link: dict) -> tuple[str, str]:
    a, b = sorted((link["a"], link["b"]))
    return a, b


def is_empty(changes: dict[str, Any]) -> bool:
    return not any(changes[key] for key in ("components_added", "components_removed", "attrs_changed", "links_added", "links_removed"))
