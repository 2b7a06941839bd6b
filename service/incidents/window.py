"""The events an engine pass read, kept for the next pass.

Under a steady stream every pass re-reads the same two hours (`flows.HORIZON`) to add a few
seconds of new events: on the bulk bench's dense stream that read was half of each pass
(service/README, bulk ingest). Events are append-only and `seq` is commit order, so what a
pass read over [low, high] up to `seq` S is still there next time, and the next pass need
only ask for what is newer than S or outside [low, high]. The one thing that removes events,
pruning a closed day (`service.events.flows.prune`, here or on another replica), is caught
by counting: when the store holds fewer of the kept events than the cache does, the cache is
dropped and the window read whole.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from faultgraph.service.events.models import events

# What the engine reads of an event (`train_step` progress is degradations.py's, not its).
COLUMNS = (events.c.id, events.c.time, events.c.host, events.c.kind, events.c.component, events.c.severity,
           events.c.job, events.c.rank, events.c.attrs, events.c.message)
READ = events.c.kind != "train_step"


def as_dicts(rows: Sequence[Sequence]) -> list[dict]:
    """Rows of COLUMNS as the engine's event dicts."""
    # Unpacked as tuples: reading sixteen thousand rows by attribute name cost a quarter
    # more, and after a storm this load is a third of the pass the incident waits for.
    loads = orjson.loads
    return [
        {"id": id_, "time": at.replace(tzinfo=UTC), "host": host, "kind": kind, "component": component,
         "severity": severity, "job": job, "rank": rank,
         "attrs": loads(attrs) if isinstance(attrs, str | bytes) else (attrs or {}), "message": message}
        for id_, at, host, kind, component, severity, job, rank, attrs, message in rows
    ]


def _order(event: dict) -> tuple[datetime, str]:
    return event["time"], event["id"]


@dataclass
class Window:
    """The events of [low, high] that the last pass read, complete up to `seq` `upto`."""

    low: datetime | None = None
    high: datetime | None = None
    upto: int = 0
    kept: dict[str, tuple[int, dict]] = field(default_factory=dict)  # id → (seq, event)

    def read(self, conn: Connection, low: datetime, high: datetime, upto: int) -> list[dict]:
        """Every event of [low, high] but `train_step`, ordered by time then id, as one
        query over the whole window would return them; `upto` is the pass's last `seq`."""
        known = self._still_valid(conn, low, high)
        since, until = low.replace(tzinfo=UTC), high.replace(tzinfo=UTC)
        query = sa.select(events.c.seq, *COLUMNS).where(events.c.time >= low, events.c.time <= high, READ)
        if known:
            query = query.where(sa.or_(events.c.seq > self.upto, events.c.time < self.low, events.c.time > self.high))
        kept = {id_: entry for id_, entry in self.kept.items() if since <= entry[1]["time"] <= until} if known else {}
        rows = conn.execute(query).all()
        for (seq, *_), event in zip(rows, as_dicts([row[1:] for row in rows]), strict=True):
            kept[event["id"]] = (seq, event)
        self.low, self.high, self.upto, self.kept = low, high, upto, kept
        return sorted((event for _, event in kept.values()), key=_order)

    def _still_valid(self, conn: Connection, low: datetime, high: datetime) -> bool:
        """Whether the kept events overlapping [low, high] are all still stored."""
        if self.low is None or self.high is None or self.low > high or self.high < low:
            return False
        since, until = max(low, self.low), min(high, self.high)
        first, last = since.replace(tzinfo=UTC), until.replace(tzinfo=UTC)
        ours = sum(1 for seq, event in self.kept.values() if seq <= self.upto and first <= event["time"] <= last)
        stored = conn.execute(sa.select(sa.func.count()).where(
            events.c.time >= since, events.c.time <= until, READ, events.c.seq <= self.upto)).scalar_one()
        return stored == ours

    def clear(self) -> None:
        self.low = self.high = None
        self.kept = {}
