"""The events a pass keeps for the next (service/incidents/window.py): what it returns is what
one query over the window returns, whether the window slides on, reaches back past what was
kept, takes late events, or loses events to a prune."""

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from test_retention import fill

from faultgraph.service import store
from faultgraph.service.events.models import events
from faultgraph.service.incidents.window import COLUMNS, Window, as_dicts

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


def batch(prefix: str, start: datetime, minutes: int, *, every: int = 1) -> list[dict]:
    return [{"id": f"{prefix}{i:03d}", "time": start + timedelta(minutes=i), "host": f"node{i % 4:04d}",
             "kind": "nccl_timeout" if i % 3 else "nic_error", "job": "llama", "rank": i,
             "attrs": {"op": "ALLREDUCE", "seq": i}} for i in range(0, minutes, every)]


def whole(engine, low: datetime, high: datetime) -> list[dict]:
    """The window as one query reads it: the reference."""
    with engine.connect() as conn:
        rows = conn.execute(sa.select(*COLUMNS).where(events.c.time >= store.to_db_time(low),
                                                      events.c.time <= store.to_db_time(high),
                                                      events.c.kind != "train_step")).all()
    return sorted(as_dicts(rows), key=lambda event: (event["time"], event["id"]))


def read(engine, window: Window, low: datetime, high: datetime) -> list[dict]:
    with engine.connect() as conn:
        return window.read(conn, store.to_db_time(low), store.to_db_time(high), store.max_value(engine, events.c.seq))


def test_a_kept_window_reads_as_one_query_reads_it(engine):
    fill(engine, batch("old", T0 - timedelta(hours=2), 60))  # before the first window
    fill(engine, batch("a", T0, 120))
    window = Window()
    first = read(engine, window, T0, T0 + timedelta(hours=2))
    assert first == whole(engine, T0, T0 + timedelta(hours=2)) and len(first) == 120

    # It slides on: new events inside it and past it, and one that arrived late, long before.
    fill(engine, [*batch("b", T0 + timedelta(minutes=90), 60), *batch("late", T0 - timedelta(minutes=30), 1)])
    low, high = T0 + timedelta(minutes=30), T0 + timedelta(minutes=150)
    second = read(engine, window, low, high)
    assert second == whole(engine, low, high)
    kept = {id(event) for event in first}
    assert sum(id(event) in kept for event in second) == 90  # a[30..119] came from memory

    # It reaches back past what it kept: stored events older than it are read, late one included.
    low = T0 - timedelta(minutes=90)
    third = read(engine, window, low, high)
    assert third == whole(engine, low, high) and {"late000", "old030"} <= {event["id"] for event in third}


def test_a_window_that_lost_events_to_a_prune_is_read_again(engine):
    fill(engine, batch("a", T0, 120))
    window = Window()
    low, high = T0, T0 + timedelta(hours=2)
    first = read(engine, window, low, high)
    with engine.connect() as conn:  # a prune, here or on another replica
        conn.execute(events.delete().where(events.c.id.in_(["a001", "a002", "a050"])))
        conn.commit()
    fill(engine, batch("b", T0 + timedelta(minutes=100), 10))
    again = read(engine, window, low, high)
    assert again == whole(engine, low, high) and len(again) == len(first) - 3 + 10
    assert not {id(event) for event in first} & {id(event) for event in again}  # read whole, not patched
