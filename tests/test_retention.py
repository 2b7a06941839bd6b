"""Retention: prune rolls up, archives and removes old raw noise, keeps what explains
incidents, is idempotent, and a SIGKILL mid-prune loses nothing that should stay."""

import logging
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from faultgraph.service import store, transfer
from faultgraph.service.events import archive as archives
from faultgraph.service.events.archive import open_archive
from faultgraph.service.events.flows import Retention, prune
from faultgraph.service.events.models import event_rollups, events
from faultgraph.service.fleet import goodput
from faultgraph.service.incidents.models import incident_events, incidents
from faultgraph.service.stats import service as stats_service
from tests.conftest import serve_in_process, store_events

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)  # a fixed clock: retention is relative to it


def fill(engine, items: list[dict]) -> None:
    store_events(engine, items, received=NOW)


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

    retention = Retention(raw_days=30, sample_days=7, archive=open_archive(str(tmp_path / "archive")))
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
        assert prune(survivor, Retention(raw_days=30, archive=open_archive(str(archive))), now=NOW)["rows"] == remaining - 1
        assert stored_ids(survivor) == {"keep"}
        assert counts_by_hour(survivor) == before
        archived = pq.read_table(archive / "events").column("id").to_pylist()
        assert len(archived) == len(set(archived)) == 400 * len(days)
    finally:
        survivor.dispose()


def test_prune_prints_no_line_of_alembic(engine, db_url):
    """An existing store's migration check ran alembic's plugin setup under prune's INFO logging."""
    engine.dispose()
    done = subprocess.run([sys.executable, "-m", "faultgraph.service.cli", "prune", "--db", db_url],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "alembic" not in done.stderr and done.stdout.startswith("pruned 0 raw events"), done.stderr


# --- archive to an S3-compatible bucket, and statistics over archive + live store ---------

BUCKET = "faultgraph-archive"
KEYS = {"access_key": "faultgraph", "secret_key": "not-a-secret"}


@pytest.fixture(scope="module")
def s3_endpoint():
    """An S3-compatible HTTP server on loopback (moto's; MinIO is not packaged here) with an
    empty bucket; the archive talks to it over HTTP like to any other."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    pafs.S3FileSystem(endpoint_override=f"{host}:{port}", scheme="http", allow_bucket_creation=True,
                      **KEYS).create_dir(BUCKET)
    yield endpoint
    server.stop()


def bucket_archive(endpoint: str, prefix: str):
    return open_archive(f"s3://{BUCKET}/{prefix}", endpoint=endpoint, region="us-east-1", **KEYS)


def archived_ids(archive) -> list[str]:
    """The ids in every file under the archive's events/ folder, recorded or not."""
    found = archive.filesystem.get_file_info(pafs.FileSelector(f"{archive.root}/events", recursive=True,
                                                               allow_not_found=True))
    paths = [info.path for info in found if info.type == pafs.FileType.File]
    return [i for path in paths for i in pq.read_table(path, filesystem=archive.filesystem).column("id").to_pylist()]


def add_incident(engine, *, job: str, failed_at: datetime, number: int) -> None:
    at = store.to_db_time(failed_at)
    with engine.begin() as conn:
        conn.execute(incidents.insert().values(
            id=f"inc{number}", number=number, scope=f"job:{job}", job=job, status="open", opened=at, updated=at,
            start=at, last=at, symptoms=1, hosts=1, planned=False, root_cause={"component": "node0001/gpu0"},
            category="gpu", cause="gpu_fell_off_bus", candidates=[], action={}, gpus=8, gpu_hours_lost=2.0,
            failed_at=at, interruption_end=at + timedelta(hours=1), notes=[]))


def statistics(engine, archive) -> dict:
    """Every statistic that reads raw events, over a range covering the pruned days."""
    since, until = NOW - timedelta(days=60), NOW
    with engine.connect() as conn:
        return {
            "cluster": stats_service.cluster_mtbf(conn, since=None, until=None, include_planned=False),
            "job": stats_service.job_mtbf(conn, job="steps", since=None, until=None, include_planned=False,
                                          now=NOW, archive=archive),
            "known": stats_service.job_known(conn, job="gone", archive=archive),
            "goodput": goodput.goodput(conn, job=None, since=since, until=until, now=NOW, archive=archive),
            "goodput_job": goodput.goodput(conn, job="steps", since=None, until=None, now=NOW, archive=archive),
        }


@pytest.mark.parametrize("where", ["folder", "bucket"])
def test_statistics_over_archived_days_equal_those_before_the_prune(engine, tmp_path, where, request):
    """A job with no job_start whose first events were samples, jobs named only by noise:
    after prune + archive the statistics read both and come out as before; reading the live
    store alone they would not."""
    steps = [{"id": f"step{day}-{rank}", "time": NOW - timedelta(days=day, minutes=rank), "host": "node0001",
              "kind": "train_step", "job": "steps", "rank": rank, "attrs": {"step": 100 - day, "duration_ms": 900.0}}
             for day in range(20, 0, -1) for rank in range(2)]
    noisy = [{"id": f"noisy{day}-{i}", "time": NOW - timedelta(days=day, seconds=i), "host": "node0002",
              "kind": "nic_error", "job": job, "attrs": {"count": 1}}
             for day in (45, 40, 33) for i, job in enumerate(["gone", "busy", "busy", "quiet"])]
    busy = [{"id": "busy-start", "time": NOW - timedelta(days=46), "host": "node0002", "kind": "job_start",
             "job": "busy", "attrs": {}},
            {"id": "quiet-start", "time": NOW - timedelta(days=46), "host": "node0003", "kind": "job_start",
             "job": "quiet", "attrs": {}}]
    fill(engine, steps + noisy + busy + noise(50, 20))
    add_incident(engine, job="steps", failed_at=NOW - timedelta(days=4), number=1)
    add_incident(engine, job="busy", failed_at=NOW - timedelta(days=30), number=2)
    archive = (open_archive(str(tmp_path / "archive")) if where == "folder"
               else bucket_archive(request.getfixturevalue("s3_endpoint"), f"stats-{tmp_path.name}"))
    before = statistics(engine, None)  # nothing pruned yet: the live store alone is the truth
    assert before["known"] and before["job"]["observed_hours"] > 0

    done = prune(engine, Retention(raw_days=30, sample_days=7, archive=archive), now=NOW)
    assert done["rows"] == 13 * 2 + 12 + 20  # samples of days 20..8, the noise of days 45..33, day 50

    assert statistics(engine, archive) == before
    live_only = statistics(engine, None)  # the check can fail: without the archive the answers move
    assert live_only["job"] != before["job"] and not live_only["known"]
    assert sorted(archived_ids(archive)) == sorted(
        e["id"] for e in steps + noisy + noise(50, 20) if e["kind"] == "nic_error" or int(e["id"][4:].split("-")[0]) > 7)


def test_a_server_not_given_the_archive_says_so(engine, db_url, tmp_path, caplog):
    """Days pruned into an archive the service was not started with: the start warns, and
    an answer that reads raw events says its figures count the live store only."""
    fill(engine, [{"id": f"step{day}", "time": NOW - timedelta(days=day), "host": "node0001", "kind": "train_step",
                   "job": "steps", "rank": 0, "attrs": {"step": 100 - day, "duration_ms": 900.0}} for day in range(20, 0, -1)])
    assert prune(engine, Retention(raw_days=30, sample_days=7, archive=open_archive(str(tmp_path / "archive"))), now=NOW)["rows"]
    engine.dispose()
    for env, says in (({}, True), ({"FAULTGRAPH_ARCHIVE": str(tmp_path / "archive")}, False)):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="faultgraph"):
            server = serve_in_process(db_url, env=env)
        try:
            notes = server.client.get("/v1/stats/mtbf", params={"scope": "job:steps"}).json()["notes"]
            notes += server.client.get("/v1/stats/goodput", params={"job": "steps"}).json()["notes"]
        finally:
            server.stop()
        assert sum("FAULTGRAPH_ARCHIVE" in note for note in notes) == (2 if says else 0), notes
        assert any("FAULTGRAPH_ARCHIVE" in r.getMessage() for r in caplog.records) == says


def test_sigkill_mid_archive_to_a_bucket_loses_nothing(engine, db_url, tmp_path, s3_endpoint):
    """`faultgraph prune --archive s3://…` killed while it uploads: every hour still counts its
    events, only recorded files are read, a file the killed run left is replaced, and after
    the next run the archive holds each pruned event once."""
    days = range(31, 61)
    for day in days:
        fill(engine, noise(day, 400))
    before = counts_by_hour(engine)
    engine.dispose()

    prefix = f"kill-{tmp_path.name}"
    archive = bucket_archive(s3_endpoint, prefix)
    env = {**os.environ, "FAULTGRAPH_ARCHIVE_ENDPOINT": s3_endpoint, "FAULTGRAPH_ARCHIVE_REGION": "us-east-1",
           "FAULTGRAPH_ARCHIVE_ACCESS_KEY": KEYS["access_key"], "FAULTGRAPH_ARCHIVE_SECRET_KEY": KEYS["secret_key"]}
    command = [sys.executable, "-m", "faultgraph.service.cli", "prune", "--db", db_url, "--retain-days", "30",
               "--archive", f"s3://{BUCKET}/{prefix}"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(set(archived_ids(archive))) < 3 * 400:
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()

    survivor = store.make_engine(db_url)
    try:
        assert counts_by_hour(survivor) == before
        remaining = len(stored_ids(survivor))
        assert 0 < remaining < 400 * len(days), "the kill should land mid-prune"
        with survivor.connect() as conn:  # recorded files hold exactly the removed rows
            recorded = archives.recorded(conn)
            assert archive.query("SELECT count(*) FROM archived", recorded)[0][0] == 400 * len(days) - remaining
        assert prune(survivor, Retention(raw_days=30, archive=archive), now=NOW)["rows"] == remaining
        assert stored_ids(survivor) == set()
        assert counts_by_hour(survivor) == before
        ids = archived_ids(archive)
        assert len(ids) == len(set(ids)) == 400 * len(days)
    finally:
        survivor.dispose()


def test_a_file_left_by_a_crashed_run_is_neither_read_nor_kept(engine, tmp_path):
    """A day's file written but never recorded (the run died before its commit): the next run
    removes it before writing the day, so no event is archived twice."""
    fill(engine, noise(40, 10))
    archive = open_archive(str(tmp_path / "archive"))
    with engine.connect() as conn:  # what a run that died before its commit wrote: the first rows
        first = [row._asdict() for row in conn.execute(sa.select(events).order_by(events.c.seq).limit(5))]
        stray = archive.name(datetime(2026, 10, 20).date(), first[0]["seq"], first[-1]["seq"])
        archive.write(stray, [transfer.arrow_rows(events, first)])
        assert archives.recorded(conn) == []
    assert prune(engine, Retention(raw_days=30, archive=archive), now=NOW) == {"days": 1, "rows": 10}
    assert stray not in archive.files_of(datetime(2026, 10, 20).date())
    assert sorted(archived_ids(archive)) == sorted(e["id"] for e in noise(40, 10))


def test_a_malformed_archive_target_is_named():
    for target, problem in [("s3://", "no bucket"), ("gs://bucket/x", "a folder or s3://"),
                            ("s3://b/p", "both the access key")]:
        with pytest.raises(ValueError, match=problem):
            open_archive(target, access_key="only-one") if "access" in problem else open_archive(target)
    with pytest.raises(ValueError, match="not an http"):
        open_archive("s3://b/p", endpoint="localhost:9000")
