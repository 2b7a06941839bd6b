"""The audit trail (SPEC §1 `audit`, §10): who changed what, stored as `audit` events.

Every admin action — a token created, rotated or revoked, the topology replaced, an
incident patched, a remediation taken — calls `record` once it has succeeded; the event
says who (`actor`: the token's name, else its id), what (`action`, dotted like
`token.create`), on what (`target`) and how (`detail`), and is read like any other event
(`GET /v1/events?kind=audit`, reader role). Posts from outside cannot carry the kind
(the events API refuses it), so the trail is only ever written here.

Inside the server an audit event goes through the single writer like every other event
and `Trail.record` returns once it is durable; the CLI, which works on the database directly,
writes it with `record_in` in the same transaction as the change itself.
"""

import getpass
import socket
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import sqlalchemy as sa
from pydantic import TypeAdapter
from sqlalchemy.engine import Connection

from faultgraph.service import store
from faultgraph.service.events import models, service
from faultgraph.service.writer import GroupWriter, WriterBusy

# The audit envelope with its attrs bounds: only this module builds audit events.
_AUDIT_EVENT: TypeAdapter[Any] = TypeAdapter(models._envelope_for("audit", models.AuditAttrs))
_HOST = socket.gethostname().split(".", 1)[0] or "faultgraph"


def event(*, actor: str, action: str, target: str | None = None, detail: Any = None,
          when: datetime | None = None) -> dict:
    """One validated audit event (its size bounded like any posted event's attrs)."""
    when = when or datetime.now(UTC)
    attrs = {"actor": actor, "action": action, "target": target, "detail": detail}
    return _AUDIT_EVENT.validate_python({
        "time": when, "host": _HOST, "kind": "audit", "id": f"audit-{uuid.uuid4().hex}",
        "message": f"{actor}: {action}" + (f" {target}" if target else ""),
        "attrs": {name: value for name, value in attrs.items() if value is not None},
    })


@dataclass(frozen=True)
class Trail:
    """The audit trail as one request writes it: who is asking, and the server's writer
    (a route takes it as `deps.AuditDep`)."""

    actor: str
    writer: GroupWriter

    def record(self, *, action: str, target: str | None = None, detail: Any = None) -> None:
        """Store an audit event through the writer; returns once it is durable (call from a
        worker thread, as sync routes run)."""
        pending = service.Pending([event(actor=self.actor, action=action, target=target, detail=detail)],
                                  datetime.now(UTC))
        deadline = time.monotonic() + 60
        while True:  # an ingest storm may fill the queue: wait for room rather than lose the record
            try:
                future = self.writer.submit(pending)  # type: ignore[arg-type]  # hinted for Arrow tables; the app's writer converts Pending
                break
            except WriterBusy:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        future.result(timeout=60)


def _local_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a container user with no passwd entry
        return "unknown"


def record_in(conn: Connection, *, action: str, target: str | None = None, detail: Any = None,
              actor: str | None = None) -> None:
    """Store an audit event in the caller's transaction (the CLI working on the database
    itself); the actor defaults to the local user, `local:<name>`."""
    audit = event(actor=actor or f"local:{_local_user()}", action=action, target=target, detail=detail)
    rows = service.to_rows([audit], received=datetime.now(UTC))
    # DuckDB: one process holds the file, so the next number is free; PostgreSQL renumbers
    # from its sequence in commit order (store.insert_ignoring_duplicates).
    seq = conn.execute(sa.select(sa.func.coalesce(sa.func.max(models.events.c.seq), 0))).scalar_one() + 1
    store.insert_ignoring_duplicates(conn, rows.append_column("seq", pa.array([seq], pa.int64())), table_name="events")
