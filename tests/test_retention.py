"""Retention: prune rolls up, archives and removes old raw noise, keeps what explains
incidents, is idempotent, and a SIGKILL mid-prune loses nothing that should stay."""

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from faultgraph.service import store
from faultgraph.service.events import service as events_service
from faultgraph.service.events.flows import Retention, prune
from faultgraph.service.events.models import event_rollups, events
from faultgraph.service.incidents.models import incident_events
from faultgraph.service.stats import service as stats_service

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)  # a fixed clock: retention is relative to it


@pytest.fixture
def engine(db_url: str):
    engine = store.make_engine(db_url)
    store.init_schema(engine)
    yield engine
    engine.dispose()


def fill(engine, items: list[dict]) -> None:
    rows = events_service.to_rows(items, received=NOW)
    first = store.max_value(engine, events.c.seq) + 1
    rows = rows.append_column("seq", pa.array(range(first, first + rows.num_rows), pa.int64()))
    with engine.connect() as conn:
        store.insert_ignoring_duplicates(conn, rows, table_name="events")
        conn.commit()


def noise(day: int, n: int, prefix: str = "n") -> list[dict]:
    """`n` corrected-error events on the day `day` days before NOW, over 3 hosts and 4 hours."""
    base = NOW - timedelta(days=day)
    return [{"id": f"{prefix}{day}-{i}", "time": base + timedelta(hours=i % 4, seconds=i), "host": f"node{i % 3:04d}",
             "kind": "nic_error", "attrs": {"counter": "symbol_error", "count": 1}} for i in range(n)]


def counts_by_hour(engine) -> dict[tuple, int]:
    """Raw events plus rolled-up counts per (hour, host, kind): what prune must preserve."""
    hour = sa.func.date_trunc("hour", events.c.time)
    with engine.connect() as conn:
        raw = conn.execute(sa.select(hour, events.c.host, events.c.kind, sa.func.count()).group_by(hour, events.c.host, events.c.kind)).all()
        rolled = conn.execute(sa.select(event_rollups.c.hour, event_rollups.c.host, event_rollups.c.kind, event_rollups.c.count)).all()
    total: dict[tuple, int] = {}
    for h, host, kind, n in [*raw, *rolled]:
        total[(h, host, kind)] = total.get((h, host, kind), 0) + n
    return total


def stored_ids(engine) -> set[str]:
    with engine.connect() as conn:
        return set(conn.execute(sa.select(events.c.id)).scalars())


def test_prune_keeps_what_explains_and_counts_what_it_removes(engine, tmp_path):
    old = noise(40, 30) + noise(35, 10)
    kept = [
        {"id": "xid", "time": NOW - timedelta(days=39), "host": "node0001", "kind": "gpu_xid", "attrs": {"xid": 79}},
        {"id": "job", "time": NOW - timedelta(days=39), "host": "node0001", "kind": "job_start", "attrs": {}, "job": "j"},
        {"id": "member", "time": NOW - timedelta(days=39), "host": "node0002", "kind": "nic_error", "attrs": {"count": 1}},
    ]
    samples = [{"id": f"step{day}", "time": NOW - timedelta(days=day), "host": "node0001", "kind": "train_step",
                "rank": 0, "attrs": {"step": day, "duration_ms": 10000.0}} for day in (10, 3)]
    fill(engine, old + kept + noise(3, 10) + samples)
    with engine.connect() as conn:
        conn.execute(incident_events.insert().values(incident_id="i1", event_id="member"))
        conn.commit()
    before = counts_by_hour(engine)
    with engine.connect() as conn:
        mtbf_before = stats_service.cluster_mtbf(conn, since=None, until=None, include_planned=False)

    retention = Retention(raw_days=30, sample_days=7, archive=tmp_path / "archive")
    assert prune(engine, retention, now=NOW) == {"days": 3, "rows": 41}  # two days of noise, one of samples
    assert prune(engine, retention, now=NOW) == {"days": 0, "rows": 0}  # idempotent

    left = stored_ids(engine)
    assert {"xid", "job", "member"} <= left
    assert not any(e["id"] in left for e in old)
    assert len(left) == 3 + 10 + 1  # the recent noise and the recent sample are untouched
    assert "step3" in left and "step10" not in left
    assert counts_by_hour(engine) == before
    with engine.connect() as conn:  # the observation window reaches back to the first event still
        assert stats_service.cluster_mtbf(conn, since=None, until=None, include_planned=False) == mtbf_before
    archived = pq.read_table(tmp_path / "archive" / "events").to_pylist()
    assert sorted(row["id"] for row in archived) == sorted([e["id"] for e in old] + ["step10"])
    assert set(archived[0]) >= {"id", "seq", "time", "host", "kind", "attrs"}


@pytest.mark.slow
def test_sigkill_mid_prune_loses_nothing_that_should_stay(engine, db_url, tmp_path):
    """`faultgraph prune` killed while it works: each day is either whole or rolled up, the
    counts per hour are those before, and the next run finishes the job."""
    days = range(31, 71)
    for day in days:
        fill(engine, noise(day, 400))
    fill(engine, [{"id": "keep", "time": NOW - timedelta(days=50), "host": "node0001", "kind": "gpu_xid", "attrs": {"xid": 48}}])
    before = counts_by_hour(engine)
    engine.dispose()

    archive = tmp_path / "archive"
    command = [sys.executable, "-m", "faultgraph.service.cli", "prune", "--db", db_url, "--retain-days", "30",
               "--archive", str(archive)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(archive.glob("events/day=*/*.parquet"))) < 3:
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()

    survivor = store.make_engine(db_url)
    try:
        assert counts_by_hour(survivor) == before  # nothing lost, nothing counted twice
        assert "keep" in stored_ids(survivor)
        remaining = len(stored_ids(survivor))
        assert 1 < remaining < 1 + 400 * len(days), "the kill should land mid-prune"
        assert prune(survivor, Retention(raw_days=30, archive=archive), now=NOW)["rows"] == remaining - 1
        assert stored_ids(survivor) == {"keep"}
        assert counts_by_hour(survivor) == before
        archived = pq.read_table(archive / "events").column("id").to_pylist()
        assert len(archived) == len(set(archived)) == 400 * len(days)
    finally:
        survivor.dispose()
