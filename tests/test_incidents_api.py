"""Incidents over HTTP: a storm of symptoms becomes one incident with the right root."""

from datetime import UTC, datetime, timedelta

T0 = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def gpu_falls_off(job: str = "llama", host: str = "node0042", hosts: int = 8, at: datetime = T0, first: int = 40) -> list[dict]:
    """XID 79 on one GPU, then ten minutes later every other rank times out, then a restart."""
    batch = [
        {"time": iso(at - timedelta(minutes=30)), "host": "node0000", "kind": "checkpoint_save", "job": job, "attrs": {"step": 100}},
        {"time": iso(at), "host": host, "kind": "gpu_xid", "component": f"{host}/gpu3", "severity": "critical",
         "attrs": {"xid": 79, "pci": "0000:3b:00"}, "message": "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."},
    ]
    for rank in range(hosts * 8):
        node = f"node{first + rank // 8:04d}"
        if node == host and rank % 8 == 3:
            continue
        batch.append({"time": iso(at + timedelta(minutes=10, seconds=rank % 5)), "host": node, "kind": "nccl_timeout",
                      "job": job, "rank": rank, "attrs": {"op": "ALLREDUCE", "seq": 808, "timeout_ms": 600000, "elapsed_ms": 600020}})
    batch.append({"time": iso(at + timedelta(minutes=14)), "host": "node0000", "kind": "job_restart", "job": job})
    return batch


def test_storm_becomes_one_incident_with_root_cause(client):
    assert client.post("/v1/events", json=gpu_falls_off()).json()["rejected"] == []
    summary = client.post("/v1/analyze").json()
    assert set(summary) >= {"opened", "updated", "events"}  # the background pass may have opened it already
    [incident] = client.get("/v1/incidents").json()["incidents"]
    assert incident["root_cause"]["component"] == "node0042/gpu3"
    assert incident["root_cause"]["cause"] == "gpu_fell_off_bus"
    assert incident["root_cause"]["category"] == "gpu"
    assert incident["action"]["kind"] == "evict" and incident["action"]["target"] == "node0042"
    assert incident["symptoms"] == 63 and incident["hosts"] == 8
    assert incident["interruption"]["start"] == "2026-11-29T08:00:00.000000Z"
    assert incident["interruption"]["end"] == "2026-11-29T08:14:00.000000Z"
    assert incident["status"] == "resolved"
    # 64 GPUs (distinct ranks seen) × (14 min down + 30 min rolled back)
    assert abs(incident["interruption"]["gpu_hours_lost"] - 64 * 44 / 60) < 0.01
    timeline = client.get(f"/v1/incidents/{incident['id']}/timeline").json()["events"]
    assert len(timeline) == 64 and timeline[0]["kind"] == "gpu_xid"
    assert [e["time"] for e in timeline] == sorted(e["time"] for e in timeline)
    # analysing again changes nothing
    assert client.post("/v1/analyze").json()["opened"] == 0
    assert client.get(f"/v1/incidents/{incident['id']}").json()["root_cause"] == incident["root_cause"]
    assert len(client.get("/v1/incidents").json()["incidents"]) == 1


def test_late_events_fold_into_the_same_incident(client):
    storm = gpu_falls_off()
    client.post("/v1/events", json=storm[2:])  # the symptoms first, the XID later
    client.post("/v1/analyze")
    [early] = client.get("/v1/incidents").json()["incidents"]
    client.post("/v1/events", json=storm[:2])
    client.post("/v1/analyze")
    [late] = client.get("/v1/incidents").json()["incidents"]
    assert late["id"] == early["id"]
    assert late["root_cause"]["component"] == "node0042/gpu3"


def test_two_jobs_two_incidents_and_filters(client):
    client.post("/v1/events", json=gpu_falls_off("job-a", "node0042") + gpu_falls_off("job-b", "node0103", at=T0 + timedelta(minutes=1), first=100))
    client.post("/v1/analyze")
    incidents = client.get("/v1/incidents").json()["incidents"]
    assert {i["job"]: i["root_cause"]["component"] for i in incidents} == {"job-a": "node0042/gpu3", "job-b": "node0103/gpu3"}
    assert [i["job"] for i in client.get("/v1/incidents", params={"job": "job-b"}).json()["incidents"]] == ["job-b"]
    page = client.get("/v1/incidents", params={"limit": 1}).json()
    assert len(page["incidents"]) == 1 and page["next"]
    rest = client.get("/v1/incidents", params={"limit": 1, "cursor": page["next"]}).json()
    assert rest["incidents"][0]["id"] != page["incidents"][0]["id"] and rest["next"] is None
    assert client.get("/v1/incidents", params={"category": "nonsense"}).status_code == 400
    assert {i["type"] for i in incidents} == {"interruption"}
    assert len(client.get("/v1/incidents", params={"type": "interruption"}).json()["incidents"]) == 2
    assert client.get("/v1/incidents", params={"type": "fault,degradation"}).json()["incidents"] == []
    refused = client.get("/v1/incidents", params={"type": "outage"})
    assert refused.status_code == 400 and "type" in refused.json()["detail"]


def test_oncall_overrides_cause_and_status(client):
    client.post("/v1/events", json=gpu_falls_off())
    client.post("/v1/analyze")
    [incident] = client.get("/v1/incidents").json()["incidents"]
    answer = client.patch(f"/v1/incidents/{incident['id']}",
                          json={"root_cause": {"cause": "gpu_hbm"}, "status": "acknowledged", "note": "HBM per nvidia-smi"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["root_cause"]["cause"] == "gpu_hbm" and body["root_cause"]["category"] == "gpu"
    assert body["root_cause"]["confirmed"] is True and body["status"] == "acknowledged"
    assert body["notes"][0]["text"] == "HBM per nvidia-smi"
    # the override survives re-analysis
    client.post("/v1/events", json=[{"time": iso(T0 + timedelta(minutes=1)), "host": "node0042", "kind": "gpu_ecc",
                                     "attrs": {"type": "sbe", "count": 1}}])
    client.post("/v1/analyze")
    again = client.get(f"/v1/incidents/{incident['id']}").json()
    assert again["root_cause"]["cause"] == "gpu_hbm" and again["status"] == "acknowledged"
    bad = client.patch(f"/v1/incidents/{incident['id']}", json={"root_cause": {"cause": "nic", "category": "gpu"}})
    assert bad.status_code == 422 and "belongs to category host" in bad.text
    assert client.patch("/v1/incidents/inc-999999", json={"status": "resolved"}).status_code == 404
    assert client.get("/v1/incidents/nope").status_code == 404


def _comparable(client) -> list[tuple]:
    incidents = client.get("/v1/incidents").json()["incidents"]
    return sorted((i["job"], i["symptoms"], i["hosts"], i["root_cause"]["component"], i["root_cause"]["cause"],
                   i["interruption"]["start"], i["interruption"]["end"]) for i in incidents)


def test_replay_equals_live(db_url, tmp_path):
    from conftest import start_server

    stream = gpu_falls_off("job-a", "node0042") + gpu_falls_off("job-b", "node0103", at=T0 + timedelta(minutes=1), first=100)
    stream.sort(key=lambda e: e["time"])
    live = start_server(db_url)
    try:
        for start in range(0, len(stream), 17):  # as it happens: small batches, the engine between them
            live.client.post("/v1/events", json=stream[start:start + 17])
            live.client.post("/v1/analyze")
        live_view = _comparable(live.client)
    finally:
        live.stop()
    replay = start_server(f"duckdb:///{tmp_path / 'replay.duckdb'}")
    try:
        replay.client.post("/v1/events", json=list(reversed(stream)))  # all at once, in reverse
        replay.client.post("/v1/analyze")
        assert _comparable(replay.client) == live_view
        assert len(live_view) == 2
    finally:
        replay.stop()


def test_a_host_whose_agent_goes_quiet_is_marked_lost(db_url):
    import time

    from conftest import start_server

    srv = start_server(db_url, env={"FAULTGRAPH_HEARTBEAT_TIMEOUT": "1"})
    try:
        now = datetime.now(UTC)
        beat = [{"time": iso(now), "host": host, "kind": "host_heartbeat", "attrs": {"state": "ok"}} for host in ("node0001", "node0002")]
        srv.client.post("/v1/events", json=beat)
        deadline = time.monotonic() + 10
        lost = []
        while time.monotonic() < deadline and len(lost) < 2:
            srv.client.post("/v1/events", json=[{**beat[1], "time": iso(datetime.now(UTC))}])  # node0002 keeps beating
            time.sleep(0.3)
            found = srv.client.get("/v1/events", params={"kind": "host_heartbeat"}).json()["events"]
            lost = [e for e in found if e["attrs"]["state"] == "lost"]
            if lost:
                break
        assert [e["host"] for e in lost] == ["node0001"]
        assert lost[0]["attrs"]["source"] == "faultgraph"
    finally:
        srv.stop()
