"""Incidents over HTTP (the app in this process, a real DuckDB file): a storm of symptoms becomes
one incident with the right root."""

from datetime import UTC, datetime, timedelta

import pytest

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


def planned_maintenance(job: str, host: str, at: datetime) -> list[dict]:
    """A one-host job stopped by its host's planned BIOS update, restarted 20 minutes later:
    an interruption whose action is SPEC's `none`, with the host as its target."""
    return [
        {"time": iso(at - timedelta(minutes=30)), "host": host, "kind": "job_start", "job": job},
        {"time": iso(at), "host": host, "kind": "maintenance", "attrs": {"planned": True, "scope": host, "text": "BIOS update"}},
        {"time": iso(at + timedelta(minutes=1)), "host": host, "kind": "job_fail", "job": job},
        {"time": iso(at + timedelta(minutes=20)), "host": host, "kind": "job_restart", "job": job},
    ]


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


def test_jobs_run_one_after_another_on_the_same_hosts_each_keep_their_own_fault(client):
    """Two jobs the service was never told about run on the same hosts 45 minutes apart,
    each ended by a GPU falling off the bus, each posted and analysed as it happens: each
    XID is its own job's, and neither opens a symptomless fault under the other job."""
    for job, at in (("job-a", T0 - timedelta(minutes=45)), ("job-b", T0)):
        assert client.post("/v1/events", json=gpu_falls_off(job, at=at)).json()["rejected"] == []
        client.post("/v1/analyze")
    incidents = client.get("/v1/incidents").json()["incidents"]
    assert sorted((i["job"], i["type"], i["root_cause"]["component"], i["opened"]) for i in incidents) == [
        ("job-a", "interruption", "node0042/gpu3", "2026-11-29T07:15:00.000000Z"),
        ("job-b", "interruption", "node0042/gpu3", "2026-11-29T08:00:00.000000Z")]


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
    # a later patch of one field keeps the others confirmed
    moved = client.patch(f"/v1/incidents/{incident['id']}", json={"root_cause": {"component": "node0042/gpu1"}}).json()
    assert (moved["root_cause"]["component"], moved["root_cause"]["cause"]) == ("node0042/gpu1", "gpu_hbm")
    # a cause confirmed as planned maintenance counts the interruption as planned, apart
    window = {"since": iso(T0 - timedelta(hours=1)), "until": iso(T0 + timedelta(hours=1))}
    assert client.get("/v1/stats/causes", params=window).json()["unplanned"] == 1
    planned = client.patch(f"/v1/incidents/{incident['id']}", json={"root_cause": {"cause": "planned_maintenance"}}).json()
    assert planned["planned"] is True and planned["root_cause"]["category"] == "maintenance"
    ledger = client.get("/v1/stats/causes", params=window).json()
    assert (ledger["unplanned"], ledger["planned"]) == (0, 1)
    assert client.get("/v1/stats/mtbf", params=window).json()["interruptions"] == 0
    client.post("/v1/analyze")
    assert client.get(f"/v1/incidents/{incident['id']}").json()["planned"] is True  # the engine keeps it
    back = client.patch(f"/v1/incidents/{incident['id']}", json={"root_cause": {"cause": "gpu_hbm"}}).json()
    assert back["planned"] is False and client.get("/v1/stats/causes", params=window).json()["unplanned"] == 1
    bad = client.patch(f"/v1/incidents/{incident['id']}", json={"root_cause": {"cause": "nic", "category": "gpu"}})
    assert bad.status_code == 422 and "belongs to category host" in bad.text
    # a category alone stands on the engine's cause (gpu_fell_off_bus): one of another
    # category would read as network with a GPU's cause; an empty component is no component
    alone = client.patch(f"/v1/incidents/{incident['id']}", json={"root_cause": {"category": "network"}})
    assert alone.status_code == 422 and "send the cause too (network_switch_cable)" in alone.text, alone.text
    assert client.patch(f"/v1/incidents/{incident['id']}", json={"root_cause": {"category": "gpu"}}).status_code == 200
    assert client.patch(f"/v1/incidents/{incident['id']}", json={"root_cause": {"component": ""}}).status_code == 422
    assert client.get(f"/v1/incidents/{incident['id']}").json()["root_cause"]["component"] == "node0042/gpu1"
    assert client.patch("/v1/incidents/inc-999999", json={"status": "resolved"}).status_code == 404
    form = client.patch(f"/v1/incidents/{incident['id']}", content=b'{"status": "resolved"}',  # curl's bare -d
                        headers={"content-type": "application/x-www-form-urlencoded"})
    assert form.status_code == 422 and "content-type: application/json, not application/x-www-form-urlencoded" in form.text
    assert client.get("/v1/incidents/nope").status_code == 404


def _comparable(client) -> list[tuple]:
    incidents = client.get("/v1/incidents").json()["incidents"]
    return sorted((i["job"], i["symptoms"], i["hosts"], i["root_cause"]["component"], i["root_cause"]["cause"],
                   i["interruption"]["start"], i["interruption"]["end"]) for i in incidents)


def test_replay_equals_live(db_url, tmp_path):
    from conftest import serve_in_process

    stream = gpu_falls_off("job-a", "node0042") + gpu_falls_off("job-b", "node0103", at=T0 + timedelta(minutes=1), first=100)
    stream.sort(key=lambda e: e["time"])
    live = serve_in_process(db_url)
    try:
        for start in range(0, len(stream), 17):  # as it happens: small batches, the engine between them
            live.client.post("/v1/events", json=stream[start:start + 17])
            live.client.post("/v1/analyze")
        live_view = _comparable(live.client)
    finally:
        live.stop()
    replay = serve_in_process(f"duckdb:///{tmp_path / 'replay.duckdb'}")
    try:
        replay.client.post("/v1/events", json=list(reversed(stream)))  # all at once, in reverse
        replay.client.post("/v1/analyze")
        assert _comparable(replay.client) == live_view
        assert len(live_view) == 2
    finally:
        replay.stop()


def test_a_host_whose_agent_goes_quiet_is_marked_lost(db_url):
    import time

    from conftest import serve_in_process

    # A timeout with room for a loaded CI: node0002 beats every ~0.3 s plus a request's time,
    # and a 1 s timeout once caught it between two beats.
    srv = serve_in_process(db_url, env={"FAULTGRAPH_HEARTBEAT_TIMEOUT": "4"})
    try:
        now = datetime.now(UTC)
        beat = [{"time": iso(now), "host": host, "kind": "host_heartbeat", "attrs": {"state": "ok"}} for host in ("node0001", "node0002")]
        srv.client.post("/v1/events", json=beat)
        deadline = time.monotonic() + 30
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


# ---------------------------------------------------------------- issue 12: one test per class, through the server

from faultgraph.attribution.generators import rail_optimized  # noqa: E402
from faultgraph.ingest.parse import parse_line  # noqa: E402

NODES = [f"node{i:04d}" for i in range(16)]
TOPOLOGY = rail_optimized(16)


def attrs_of(component: str) -> dict:
    return next(c["attrs"] for c in TOPOLOGY["components"] if c["id"] == component)


def with_job(client, hosts: list[str] = NODES[:14]) -> None:
    """The generated 16-host cluster, and one job on its first 14 hosts (two spares)."""
    assert client.put("/v1/topology", json=TOPOLOGY).status_code == 200
    body = {"id": "train", "start": iso(T0 - timedelta(hours=2)), "gpus_per_host": 8, "hosts": hosts,
            "parallelism": {"tp": 8, "pp": 1, "dp": len(hosts)}}
    assert client.post("/v1/jobs", json=body).status_code < 300


def timeouts(at: datetime, *, skip: set[int] = frozenset(), clocks: dict[str, float] | None = None, seq: int = 900,
             hosts: list[str] = NODES[:14]) -> list[dict]:
    """Every rank not in `skip` times out ten minutes after the hang at `at`, each stamped by its host's clock."""
    out = []
    for rank in range(len(hosts) * 8):
        host = hosts[rank // 8]
        if rank in skip:
            continue
        moment = at + timedelta(minutes=10, milliseconds=rank % 7) + timedelta(seconds=(clocks or {}).get(host, 0))
        out.append({"time": iso(moment), "host": host, "kind": "nccl_timeout", "job": "train", "rank": rank,
                    "attrs": {"op": "ALLREDUCE", "seq": seq, "timeout_ms": 600000, "elapsed_ms": 600000}})
    return out


def edge(line: str, host: str, at: datetime, source: str = "kmsg") -> dict:
    """A line parsed as the host agent parses it, received at `at`, ready to post."""
    event = parse_line(line, host=host, source=source, received=at)
    assert event is not None, line
    return {**event, "time": iso(event["time"])}


def restart(at: datetime) -> list[dict]:
    return [{"time": iso(at - timedelta(minutes=25)), "host": NODES[0], "kind": "checkpoint_save", "job": "train", "attrs": {"step": 10}},
            {"time": iso(at + timedelta(minutes=16)), "host": NODES[0], "kind": "job_restart", "job": "train"}]


def only_incident(client) -> dict:
    assert client.post("/v1/events", json=[]).status_code < 500
    client.post("/v1/analyze")
    incidents = client.get("/v1/incidents").json()["incidents"]
    assert len(incidents) == 1, [(i["type"], i["root_cause"]) for i in incidents]
    return incidents[0]


def test_a_rank_exception_before_the_timeouts_is_a_software_fault_of_that_rank(client):
    with_job(client)
    line = ("[rank42]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total "
            "capacity of 79.10 GiB of which 1.06 MiB is free.")
    batch = [edge(line, "node0005", T0 + timedelta(seconds=1), source="train"), *timeouts(T0, skip={42}), *restart(T0)]
    assert client.post("/v1/events", json=batch).json()["rejected"] == []
    incident = only_incident(client)
    root = incident["root_cause"]
    assert root["component"] == "node0005/gpu2" and root["category"] == "software" and root["cause"] == "software_bug"
    assert incident["action"]["kind"] == "restart" and "OutOfMemoryError" in root["explanation"]
    assert incident["type"] == "interruption"


def test_a_silent_host_outranks_weak_noise_elsewhere(client):
    with_job(client)
    noise = [
        edge(f"{iso(T0)} node0003 kernel: NVRM: Xid (PCI:{attrs_of('node0003/gpu1')['pci']}): 63, pid='<unknown>', "
             "name=<unknown>, Row Remapper: New row marked for remapping, reset gpu to activate.", "node0003", T0),
        edge(f"{iso(T0 + timedelta(seconds=20))} node0004 kernel: pcieport 0000:16:00.0: AER: Corrected error received: "
             f"{attrs_of('node0004/gpu0')['pci']}.0", "node0004", T0),
        {"time": iso(T0 - timedelta(seconds=30)), "host": "node0011", "kind": "gpu_ecc", "component": "node0011/gpu6",
         "severity": "info", "attrs": {"type": "sbe", "count": 3}},
        {"time": iso(T0 + timedelta(seconds=90)), "host": "node0009", "kind": "host_heartbeat", "severity": "error",
         "attrs": {"state": "lost", "source": "faultgraph"}},
    ]
    batch = [*noise, *timeouts(T0, skip=set(range(72, 80))), *restart(T0)]
    assert client.post("/v1/events", json=batch).json()["rejected"] == []
    root = only_incident(client)["root_cause"]
    assert root["component"] == "node0009" and root["category"] == "host"


def test_pcie_aer_blames_the_device_behind_the_port(client):
    with_job(client)
    nic = attrs_of("node0006/nic3")["pci"]
    port = attrs_of("node0006/pciesw1")["pci"]
    aer = edge(f"{iso(T0)} node0006 kernel: pcieport {port}.0: AER: Uncorrected (Fatal) error received: {nic}.0",
               "node0006", T0)
    batch = [aer, *timeouts(T0, skip={6 * 8 + 3}), *restart(T0)]
    assert client.post("/v1/events", json=batch).json()["rejected"] == []
    root = only_incident(client)["root_cause"]
    assert root["component"] == "node0006/nic3" and root["cause"] == "nic" and root["category"] == "host"


def test_skewed_clocks_are_estimated_and_the_culprit_still_found(client):
    with_job(client)
    clocks = {"node0002": 150.0, "node0010": -100.0}
    xid = edge(f"{iso(T0 + timedelta(seconds=150))} node0002 kernel: NVRM: Xid (PCI:{attrs_of('node0002/gpu4')['pci']}): "
               "79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", "node0002", T0)
    decoy = {"time": iso(T0 - timedelta(seconds=40)), "host": "node0007", "kind": "pcie_aer", "severity": "warning",
             "component": "node0007/gpu1", "attrs": {"severity": "corrected"}}
    batch = [xid, decoy, *timeouts(T0, skip={2 * 8 + 4}, clocks=clocks), *restart(T0)]
    assert client.post("/v1/events", json=batch).json()["rejected"] == []
    incident = only_incident(client)
    assert incident["root_cause"]["component"] == "node0002/gpu4"
    offsets = incident["clock_offsets"]
    assert abs(offsets["node0002"] - 150) < 1 and abs(offsets["node0010"] + 100) < 1
    assert incident["interruption"]["start"].startswith("2026-11-29T08:00:00")  # the XID on corrected time


def test_what_a_job_rode_out_is_no_incident_and_idle_hardware_is_a_fault(client):
    with_job(client)
    quiet = [
        *({"time": iso(T0 + timedelta(minutes=m)), "host": NODES[0], "kind": "checkpoint_save", "job": "train",
           "attrs": {"step": 100 + m}} for m in range(-30, 60, 10)),
        edge(f"{iso(T0)} node0003 systemd-networkd[1201]: ib2: Lost carrier", "node0003", T0, source="syslog"),
        edge(f"{iso(T0 + timedelta(seconds=2))} node0003 systemd-networkd[1201]: ib2: Gained carrier", "node0003", T0,
             source="syslog"),
        {"time": iso(T0 + timedelta(minutes=5)), "host": "node0004", "kind": "host_heartbeat", "severity": "error",
         "attrs": {"state": "lost", "source": "faultgraph"}},
        {"time": iso(T0 + timedelta(minutes=7)), "host": "node0004", "kind": "host_heartbeat", "attrs": {"state": "ok"}},
        {"time": iso(T0 + timedelta(minutes=8)), "host": "node0005", "kind": "gpu_thermal", "severity": "warning",
         "component": "node0005/gpu1", "attrs": {"temp_c": 85, "throttle": "sw_thermal_slowdown"}},
    ]
    assert client.post("/v1/events", json=quiet).json()["rejected"] == []
    client.post("/v1/analyze")
    assert client.get("/v1/incidents").json()["incidents"] == []
    spare = edge(f"{iso(T0 + timedelta(minutes=20))} node0015 kernel: NVRM: Xid (PCI:{attrs_of('node0015/gpu6')['pci']}): "
                 "79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", "node0015", T0)
    client.post("/v1/events", json=[spare])
    incident = only_incident(client)
    assert incident["type"] == "fault" and incident["root_cause"]["component"] == "node0015/gpu6"
    assert client.get("/v1/incidents", params={"type": "interruption"}).json()["incidents"] == []
    assert [i["id"] for i in client.get("/v1/incidents", params={"type": "fault"}).json()["incidents"]] == [incident["id"]]
    mtbf = client.get("/v1/stats/mtbf", params={"since": iso(T0 - timedelta(hours=1)), "until": iso(T0 + timedelta(hours=1))}).json()
    assert mtbf["interruptions"] == 0


def test_an_xid_posted_without_severity_weighs_as_its_code_says(client):
    """A monitor that posts the envelope itself, with no severity: Xid 79 is critical by its
    catalogue entry (as the agent's parse of the line makes it), so the idle GPU is a fault
    and listed faulty; a video engine's Xid 82 stays a warning and opens nothing."""
    with_job(client)
    pci = attrs_of("node0015/gpu6")["pci"]
    posted = [{"time": iso(T0), "host": "node0014", "kind": "gpu_xid", "attrs": {"xid": 82, "pci": attrs_of("node0014/gpu1")["pci"]}},
              {"time": iso(T0), "host": "node0015", "kind": "gpu_xid", "attrs": {"xid": 79, "pci": pci}}]
    assert client.post("/v1/events", json=posted).json()["accepted"] == 2
    stored = {e["attrs"]["xid"]: e["severity"] for e in client.get("/v1/events", params={"kind": "gpu_xid"}).json()["events"]}
    assert stored == {82: "warning", 79: "critical"}
    client.post("/v1/analyze")
    incident = only_incident(client)
    assert incident["type"] == "fault" and incident["root_cause"]["component"] == "node0015/gpu6"
    faulty = client.get("/v1/components", params={"state": "faulty"}).json()["components"]
    assert [c["component"] for c in faulty] == ["node0015/gpu6"]


@pytest.mark.parametrize("patch", [{"note": "on-call: looking at node0015"},
                                   {"root_cause": {"cause": "gpu_hbm"}, "note": "HBM per nvidia-smi"}])
def test_oncalls_word_stays_on_an_incident_a_later_job_takes_over(client, patch):
    """A GPU fault on a host no known job used is the host's incident; the job registered
    afterwards takes it over (its scope changes). It stays one incident, with its id and
    on-call's note and confirmation, not a second one beside it or a new one without them.
    (From an outside audit, 2026-12-03.)"""
    assert client.put("/v1/topology", json=TOPOLOGY).status_code == 200
    xid = {"time": iso(T0), "host": "node0015", "kind": "gpu_xid", "attrs": {"xid": 79, "pci": attrs_of("node0015/gpu6")["pci"]}}
    assert client.post("/v1/events", json=[xid]).json()["accepted"] == 1
    first = only_incident(client)
    assert client.patch(f"/v1/incidents/{first['id']}", json=patch).status_code == 200
    job = {"id": "late", "start": iso(T0 - timedelta(hours=1)), "gpus_per_host": 8, "hosts": ["node0015"]}
    assert client.post("/v1/jobs", json=job).status_code < 300
    later = {"time": iso(T0 + timedelta(minutes=3)), "host": "node0015", "kind": "job_fail", "job": "late",
             "attrs": {"reason": "NCCL watchdog timeout"}}
    assert client.post("/v1/events", json=[later]).json()["accepted"] == 1
    incident = only_incident(client)
    assert incident["id"] == first["id"] and incident["job"] == "late"
    assert [n["text"] for n in incident["notes"]] == [patch["note"]]
    expected = patch.get("root_cause", {}).get("cause", "gpu_fell_off_bus")
    assert incident["root_cause"]["cause"] == expected


def test_a_confirmed_component_is_one_of_the_topology_s(client):
    """With a topology uploaded, on-call's component is stored by its canonical id (an alias,
    here the GPU's PCI address, accepted), and a name the topology lacks is refused before
    anything changes: a typo confirmed would turn a part that does not exist faulty."""
    assert client.put("/v1/topology", json=TOPOLOGY).status_code == 200
    xid = {"time": iso(T0), "host": "node0015", "kind": "gpu_xid", "attrs": {"xid": 79, "pci": attrs_of("node0015/gpu6")["pci"]}}
    assert client.post("/v1/events", json=[xid]).json()["accepted"] == 1
    incident = only_incident(client)
    typo = client.patch(f"/v1/incidents/{incident['id']}", json={"root_cause": {"component": "node0015/gpu66"}, "note": "x"})
    assert typo.status_code == 422 and "'node0015/gpu66' is not a component or link of topology version 1" in typo.text
    assert only_incident(client)["notes"] == [] and not only_incident(client)["root_cause"].get("confirmed")
    alias = f"node0015/{attrs_of('node0015/gpu5')['pci']}"
    moved = client.patch(f"/v1/incidents/{incident['id']}", json={"root_cause": {"component": alias}})
    assert moved.status_code == 200 and moved.json()["root_cause"]["component"] == "node0015/gpu5"


def test_a_gpu_that_did_not_come_back_after_the_reboot_stays_one_incident(client):
    """Live, in two passes: node0005 hung (heartbeat lost, its ranks silent) and the first
    pass can only blame the host. After its reboot the driver cannot initialise GPU 4 and,
    at the restart, the host's last rank cannot find its device and the job fails again: the
    second pass names the GPU in the same incident rather than opening another (a second
    interruption counted for one fault), and the job is still down. Lines as the NVIDIA
    driver and torchrun print them (gpu-operator#1146, MiniCPM-V#356)."""
    with_job(client)
    before = [{"time": iso(T0 - timedelta(hours=1)), "host": NODES[0], "kind": "job_restart", "job": "train"},
              {"time": iso(T0 + timedelta(minutes=2)), "host": "node0005", "kind": "host_heartbeat", "severity": "error",
               "attrs": {"state": "lost", "source": "faultgraph"}},
              *timeouts(T0, skip=set(range(40, 48)))]
    assert client.post("/v1/events", json=before).json()["rejected"] == []
    first = only_incident(client)
    assert first["root_cause"]["component"] == "node0005"
    boot, pci = T0 + timedelta(minutes=24), attrs_of("node0005/gpu4")["pci"]
    after = [edge(f"{iso(boot)} node0005 kernel: NVRM: GPU {pci}.0: RmInitAdapter failed! (0x24:0x72:1568)", "node0005", boot),
             {"time": iso(boot + timedelta(minutes=2)), "host": NODES[0], "kind": "job_restart", "job": "train"},
             edge("[rank47]: RuntimeError: CUDA error: invalid device ordinal", "node0005", boot + timedelta(minutes=3),
                  source="train"),
             {"time": iso(boot + timedelta(minutes=3)), "host": NODES[0], "kind": "job_fail", "job": "train",
              "attrs": {"reason": "worker processes exited"}}]
    assert client.post("/v1/events", json=after).json()["rejected"] == []
    incident = only_incident(client)
    root = incident["root_cause"]
    assert incident["id"] == first["id"] and root["component"] == "node0005/gpu4" and root["cause"] == "faulty_gpu"
    assert "failed on node0005 again" in root["explanation"] and incident["interruption"]["end"] is None


def test_a_backfill_with_unpadded_glog_months_opens_nothing_at_its_receipt(client):
    """PyTorch's glog month is not padded ([E307 …] is 7 March): whatever the parsers make of
    such lines, a backfill must not become an incident at the moment it was received."""
    lines = [f"[rank{rank}]:[E307 10:00:{rank % 60:02d}.123456 4242 ProcessGroupNCCL.cpp:616] [PG ID 0 PG GUID 0(default_pg) "
             f"Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, "
             f"NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out." for rank in range(64)]
    answer = client.post("/v1/logs", json={"host": "node0001", "source": "train", "lines": lines})
    assert answer.status_code < 300
    client.post("/v1/analyze")
    for incident in client.get("/v1/incidents").json()["incidents"]:
        assert incident["interruption"]["start"][5:7] == "03", incident  # in March, or none at all


def test_the_demo_ends_with_no_incident_that_did_not_happen(db_url):
    """`faultgraph demo`'s scenario replayed live: its crashed host's agent beats, then stops
    for good when the replay ends; the lost heartbeat the service then stores is no incident."""
    import time

    from conftest import serve_in_process

    from faultgraph.service import demo
    from faultgraph.simulate import evaluate

    srv = serve_in_process(db_url, env={"FAULTGRAPH_HEARTBEAT_TIMEOUT": "1"})
    try:
        scenario = demo.scenario(16, now=datetime.now(UTC))
        evaluate.replay(srv.client, scenario)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            beats = srv.client.get("/v1/events", params={"kind": "host_heartbeat", "limit": 1000}).json()["events"]
            if any(e["attrs"].get("source") == "faultgraph" and e["attrs"]["state"] == "lost" for e in beats):
                break
            time.sleep(0.5)
        else:
            raise AssertionError("the service never marked the quiet agent lost")
        srv.client.post("/v1/analyze")
        report = evaluate.score(evaluate.incidents(srv.client), scenario.truth).as_dict()
        assert report["spurious"] == 0 and report["mechanisms"]["all"]["missed"] == 0, report
        assert report["other_types"] == {}
    finally:
        srv.stop()
