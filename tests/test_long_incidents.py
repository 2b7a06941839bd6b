"""An incident longer than the engine's horizon (service/incidents/flows.py): live passes read
only its tail and extend it, and come out where one pass over the whole stream does."""

import threading
import time
from datetime import UTC, datetime, timedelta
from itertools import zip_longest

import pytest

from faultgraph.service.incidents import flows

T0 = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
CYCLE = timedelta(minutes=15)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def crash_loop(cycles: int, *, hosts: int = 8) -> list[list[dict]]:
    """A job that keeps restarting onto a GPU that keeps falling off the bus (nobody drained
    node0042): each run fails three minutes in, its other ranks' watchdogs fire ten minutes
    later, and the scheduler restarts it. After the last cycle the host is left out and the
    restart holds. One list of events per cycle, in the order they happen."""
    job = "llama"
    batches = [[{"time": iso(T0 - timedelta(minutes=30)), "host": "node0000", "kind": "checkpoint_save", "job": job,
                 "attrs": {"step": 100}},
                {"time": iso(T0 - timedelta(minutes=3)), "host": "node0000", "kind": "job_start", "job": job}]]
    for cycle in range(cycles):
        began = T0 + cycle * CYCLE
        batch = [] if cycle else batches.pop()
        batch.append({"time": iso(began), "host": "node0042", "kind": "gpu_xid", "component": "node0042/gpu3",
                      "severity": "critical", "attrs": {"xid": 79, "pci": "0000:3b:00"},
                      "message": "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."})
        for rank in range(hosts * 8):
            if rank == 3 + 8 * 2:
                continue
            batch.append({"time": iso(began + timedelta(minutes=10, seconds=rank % 5)), "host": f"node{40 + rank // 8:04d}",
                          "kind": "nccl_timeout", "job": job, "rank": rank,
                          "attrs": {"op": "ALLREDUCE", "seq": 808 + cycle, "timeout_ms": 600000, "elapsed_ms": 600020}})
        batch.append({"time": iso(began + timedelta(minutes=12)), "host": "node0000", "kind": "job_restart", "job": job})
        batches.append(batch)
    return batches


@pytest.fixture
def read(monkeypatch) -> list[int]:
    """The size of every window the engine analyses, in order (a wrapper around
    `flows.analyse`)."""
    sizes: list[int] = []
    analyse = flows.analyse
    monkeypatch.setattr(flows, "analyse", lambda events, cluster: sizes.append(len(events)) or analyse(events, cluster))
    return sizes


def _view(client) -> list[dict]:
    keep = ("job", "opened", "closed", "symptoms", "hosts", "status", "type", "action", "candidates")
    incidents = client.get("/v1/incidents").json()["incidents"]
    return [{key: incident[key] for key in keep} | {
        # the head's explanation stays: it cannot name a failed restart only the tail saw
        "root_cause": {k: v for k, v in incident["root_cause"].items() if k != "explanation"},
        "interruption": {k: v for k, v in incident["interruption"].items() if k != "gpu_hours_lost"},
        "gpu_hours_lost": incident["interruption"]["gpu_hours_lost"],
        "timeline": sorted(e["id"] for e in client.get(f"/v1/incidents/{incident['id']}/timeline",
                                                      params={"limit": 10000}).json()["events"]),
    } for incident in incidents]


def test_live_passes_over_a_long_crash_loop_agree_with_one_pass_over_it(db_url, tmp_path, monkeypatch, read):
    from conftest import serve_in_process

    batches = crash_loop(cycles=32)  # eight hours, four times the horizon
    live = serve_in_process(db_url)
    try:
        for batch in batches:  # as it happens: a cycle at a time, the engine between them
            assert live.client.post("/v1/events", json=batch).json()["rejected"] == []
            live.client.post("/v1/analyze")
        live_view = _view(live.client)
    finally:
        live.stop()
    whole = sum(len(batch) for batch in batches)
    # Once the loop is longer than the horizon, a pass reads as much whatever its length:
    # the tail (and the head's restarts), not the whole loop.
    assert max(read[-12:]) - min(read[-12:]) < len(batches[1]) and read[-1] < whole * 0.6
    read.clear()
    # One pass over the whole loop in one window: a step cuts new events wider than the
    # horizon into spans of their own (`_cores`), so the reference lifts it.
    monkeypatch.setattr(flows, "HORIZON", timedelta(days=1))
    replay = serve_in_process(f"duckdb:///{tmp_path / 'replay.duckdb'}")
    try:
        replay.client.post("/v1/events", json=[event for batch in reversed(batches) for event in batch])
        replay.client.post("/v1/analyze")
        assert read == [whole]
        replay_view = _view(replay.client)
    finally:
        replay.stop()
    [incident] = replay_view
    assert incident["root_cause"]["component"] == "node0042/gpu3" and incident["status"] == "resolved"
    assert incident["interruption"]["start"] == "2026-11-29T08:00:00.000000Z"
    assert len(incident["timeline"]) == whole - 2 - 32  # all but the save, the start and the restarts
    [extended] = live_view
    assert extended.pop("gpu_hours_lost") == pytest.approx(incident.pop("gpu_hours_lost"), abs=0.002)
    assert extended == incident


def test_a_pass_behind_reads_its_backlog_in_steps_and_agrees_with_live_passes(db_url, tmp_path, monkeypatch, read):
    """A backlog (the engine down, or slowed by a flood, while the loop was ingested) is
    analysed `MAX_NEW` events at a time, each step reading what was stored by its last: no
    window holds the whole backlog, and the incident is the one passes as it happened made."""
    from conftest import serve_in_process

    batches = crash_loop(cycles=32)  # eight hours
    whole = sum(len(batch) for batch in batches)
    views = []
    for url, feeds, step in ((db_url, batches, flows.MAX_NEW), (f"duckdb:///{tmp_path / 'backlog.duckdb'}", [sum(batches, [])], 250)):
        monkeypatch.setattr(flows, "MAX_NEW", step)
        read.clear()
        server = serve_in_process(url)
        try:
            for batch in feeds:
                assert server.client.post("/v1/events", json=batch).json()["rejected"] == []
                server.client.post("/v1/analyze")
            views.append(_view(server.client))
        finally:
            server.stop()
    assert len(read) >= whole // 250 and max(read) < whole * 0.4
    live, backlog = views
    [incident] = live
    assert incident["root_cause"]["component"] == "node0042/gpu3" and incident["status"] == "resolved"
    [stepped] = backlog
    assert stepped.pop("gpu_hours_lost") == pytest.approx(incident.pop("gpu_hours_lost"), abs=0.002)
    assert stepped == incident


def test_new_events_far_apart_in_one_step_are_read_each_with_its_own_window(db_url, tmp_path, read):
    """Agents replaying a long outage's spools post events days old beside live ones: one step
    holds both. Each is read with its own window, not with the days stored between them,
    and the incidents are the ones passes as it happened made."""
    from conftest import serve_in_process

    def shifted(batches: list[list[dict]], back: timedelta, job: str) -> list[list[dict]]:
        return [[{**e, "time": iso(datetime.fromisoformat(e["time"]) - back)} | ({"job": job} if "job" in e else {})
                 for e in batch] for batch in batches]

    days = timedelta(days=3)
    recent, old = crash_loop(cycles=2), shifted(crash_loop(cycles=2), days, "gpt")
    noise = [[{"time": iso(T0 - days + timedelta(minutes=5 * i)), "host": "node0500", "kind": "nic_error",
               "severity": "warning", "attrs": {"device": "mlx5_0", "counter": "symbol_error", "count": 1}}
              for i in range(hour * 12, hour * 12 + 12)] for hour in range(72)]
    views, last_pass = [], []
    by_time = sorted(old + noise + recent, key=lambda batch: batch[0]["time"])
    together = [e for pair in zip_longest(sum(old, []), sum(recent, [])) for e in pair if e is not None]
    for url, feeds in ((f"duckdb:///{tmp_path / 'live.duckdb'}", by_time), (db_url, [*noise, together])):
        server = serve_in_process(url)
        try:
            for batch in feeds:
                read.clear()
                assert server.client.post("/v1/events", json=batch).json()["rejected"] == []
                server.client.post("/v1/analyze")
            last_pass.append(list(read))
            views.append(_view(server.client))
        finally:
            server.stop()
    live, replayed = views
    assert sorted(i["job"] for i in live) == ["gpt", "llama"]
    for incident, again in zip(live, replayed, strict=True):
        assert again.pop("gpu_hours_lost") == pytest.approx(incident.pop("gpu_hours_lost"), abs=0.002)
        assert again == incident
    # two windows of a few hours each, not the 864 noise events of the days between
    assert len(last_pass[1]) == 2 and max(last_pass[1]) < 300


def watchdog_rounds(rounds: int) -> list[list[dict]]:
    """A job started once, whose GPU fell off the bus, and whose ranks keep reporting
    timeouts forty minutes apart (a job that reports its restarts groups symptoms an hour
    apart into one interruption, attribution's LONG_GAP): its only start is in the head."""
    job = "llama"
    batches = [[{"time": iso(T0 - timedelta(minutes=3)), "host": "node0000", "kind": "job_start", "job": job},
                {"time": iso(T0), "host": "node0042", "kind": "gpu_xid", "component": "node0042/gpu3",
                 "severity": "critical", "attrs": {"xid": 79, "pci": "0000:3b:00"},
                 "message": "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."}]]
    for round_ in range(rounds):
        batches.append([{"time": iso(T0 + timedelta(minutes=10 + 40 * round_, seconds=rank)), "host": f"node{40 + rank // 8:04d}",
                         "kind": "nccl_timeout", "job": job, "rank": rank,
                         "attrs": {"op": "ALLREDUCE", "seq": 808 + round_, "timeout_ms": 600000, "elapsed_ms": 600020}}
                        for rank in range(0, 64, 7)])
    return batches


def test_the_tail_of_a_job_started_in_the_head_is_grouped_as_the_whole_is(db_url, tmp_path):
    """The head's start is read with the tail: without it the tail's timeouts, forty minutes
    apart, would each open an incident of their own."""
    from conftest import serve_in_process

    batches = watchdog_rounds(12)  # eight hours
    views = []
    for url, feeds in ((db_url, batches), (f"duckdb:///{tmp_path / 'replay.duckdb'}", [sum(batches, [])])):
        server = serve_in_process(url)
        try:
            for batch in feeds:
                server.client.post("/v1/events", json=batch)
                server.client.post("/v1/analyze")
            views.append(_view(server.client))
        finally:
            server.stop()
    live, replay = views
    [incident] = replay
    assert incident["root_cause"]["component"] == "node0042/gpu3" and incident["status"] == "open"
    [extended] = live
    assert extended.pop("gpu_hours_lost") == pytest.approx(incident.pop("gpu_hours_lost"), abs=0.002)  # PostgreSQL's REAL
    assert extended == incident


def test_a_settled_incident_no_draft_matches_is_kept(engine):
    """A pass that read only an incident's tail cannot tell it is gone: it is kept."""
    import sqlalchemy as sa

    from faultgraph.service import store
    from faultgraph.service.incidents.models import incidents

    start = store.to_db_time(T0)
    with engine.connect() as conn:
        conn.execute(incidents.insert().values(
            id="inc-000001", number=1, scope="job:llama", job="llama", status="open", status_set_by_oncall=False,
            opened=start, updated=start, start=start, last=start + timedelta(hours=5), symptoms=3, hosts=1,
            planned=False, type="interruption", root_cause={"cause": "gpu_fell_off_bus"}, category="gpu",
            cause="gpu_fell_off_bus", candidates=[], action={}, gpus=8, gpu_hours_lost=1.0, failed_at=start,
            notes=[]))
        [row] = conn.execute(sa.select(incidents)).fetchall()
        assert flows.reconcile(conn, [], [row], settled_before=start + timedelta(hours=3))["removed"] == 0
        assert flows.reconcile(conn, [], [row], settled_before=start)["removed"] == 1  # read whole: gone


def _backlog(engine, monkeypatch):
    """A cluster and 5 crash-loop cycles stored, analysed 100 events a step."""
    from conftest import store_events

    from faultgraph.service.cluster import Cluster
    from faultgraph.service.events import service as events_service

    cluster = Cluster(engine)
    cluster.load()
    valid = events_service.validate_all(sum(crash_loop(cycles=5), []))
    store_events(engine, valid, received=T0, enrich=cluster.enrich)
    monkeypatch.setattr(flows, "MAX_NEW", 100)
    return cluster, valid


def test_a_pass_stopped_between_its_steps_leaves_the_rest_to_the_next(engine, monkeypatch):
    """A background pass rests between its steps; a stop during the rest ends the pass
    there, the steps done kept, and the next pass takes the rest."""
    cluster, valid = _backlog(engine, monkeypatch)
    stopping = threading.Event()
    went_on: list[bool] = []

    def between(seconds: float) -> bool:
        if went_on:
            stopping.set()
        went_on.append(not stopping.wait(0.01))
        return went_on[-1]

    with engine.connect() as conn:
        assert flows.backlog(conn) == len(valid)
    assert flows.analyze_pending(engine, cluster, between=between)["events"] == 200
    assert went_on == [True, False]
    with engine.connect() as conn:
        assert flows.backlog(conn) == len(valid) - 200  # what /metrics reports as the engine's backlog
    assert flows.analyze_pending(engine, cluster)["events"] == len(valid) - 200
    with engine.connect() as conn:
        assert flows.backlog(conn) == 0


def test_an_analysis_asked_for_takes_over_from_a_background_pass_resting_between_its_steps(engine, monkeypatch):
    """`POST /v1/analyze`'s caller waits: a background pass that is behind and resting
    between its steps ends at the rest, and the pass asked for does the remaining steps
    without resting (it waited out every rest of the background pass before)."""
    cluster, valid = _backlog(engine, monkeypatch)
    runner = flows.IncidentRunner(engine, lambda: cluster, interval=3600)
    resting = threading.Event()
    between_steps = runner._between_steps

    def an_hour(seconds: float) -> bool:
        resting.set()
        return between_steps(3600)

    monkeypatch.setattr(runner, "_between_steps", an_hour)
    asked: list[dict] = []
    try:
        runner.wake()
        assert resting.wait(60), "the background pass did not reach its first rest"
        caller = threading.Thread(target=lambda: asked.append(runner.run_once()), daemon=True)
        caller.start()
        caller.join(60)
        assert not caller.is_alive(), "the pass asked for waited for the background pass's rest"
    finally:
        runner.close()
    assert asked[0]["events"] == len(valid) - 100  # the background pass did its first step


def test_a_background_pass_rests_between_its_steps_only_while_ingest_goes_on(engine):
    """While commits go on, a pass that is behind leaves the cores to ingest between its
    steps; once the writer has been idle for QUIET seconds the rest ends, and a rest taken
    while ingest went on ends when it pauses."""
    idle = [0.0]
    runner = flows.IncidentRunner(engine, lambda: None, interval=3600, idle_for=lambda: idle[0])
    try:
        began = time.monotonic()
        assert runner._between_steps(0.3)
        assert time.monotonic() - began >= flows.REST_PER_STEP * 0.3  # ingest going on: the whole rest
        idle[0] = flows.QUIET
        began = time.monotonic()
        assert runner._between_steps(3600)
        assert time.monotonic() - began < 60  # ingest paused: no rest
        idle[0] = 0.0
        threading.Timer(0.2, lambda: idle.__setitem__(0, flows.QUIET)).start()
        began = time.monotonic()
        assert runner._between_steps(3600)
        assert time.monotonic() - began < 60  # it paused during the rest: the rest ended
    finally:
        runner.close()
