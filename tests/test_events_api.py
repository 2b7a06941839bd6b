"""The event timeline over HTTP, on a real DuckDB file: the app in this process, a real server
process where a crash or the server's own output is what is tested."""

import json

import orjson
import pytest
from conftest import serve_in_process, start_server, stored_ids
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

T0 = "2026-11-29T08:00:00.123456Z"

# One valid event per kind of SPEC §1.
SAMPLES: dict[str, dict] = {
    "gpu_xid": {"xid": 79, "pci": "0000:3b:00", "pid": 12, "process": "python", "text": "GPU has fallen off the bus."},
    "gpu_ecc": {"type": "dbe", "count": 2},
    "gpu_thermal": {"temp_c": 91.5, "throttle": True},
    "nvlink_error": {"link": 3, "peer": "node0042/nvswitch1", "counter": "replay", "count": 10},
    "nvswitch_error": {"sxid": 20034, "text": "LTSSM Fault Up"},
    "nic_link": {"device": "mlx5_2", "port": 1, "state": "down"},
    "nic_error": {"device": "mlx5_2", "port": 1, "counter": "symbol_error", "count": 7},
    "pcie_aer": {"bdf": "0000:3b:00.0", "severity": "fatal", "text": "Uncorrected (Fatal) error"},
    "nccl_timeout": {"rank": 5, "op": "ALLREDUCE", "seq": 808, "timeout_ms": 600000, "elapsed_ms": 600020, "pg": "0"},
    "nccl_error": {"rank": 5, "peer": "10.0.35.1", "code": "ncclRemoteError", "transport": "ib", "text": "x"},
    "host_mce": {"text": "mce: [Hardware Error]"},
    "host_mem_ecc": {"text": "EDAC MC0: 1 CE"},
    "host_kernel": {"text": "Kernel panic"},
    "host_oom": {"text": "Out of memory: Killed process 1"},
    "host_disk": {"text": "I/O error, dev nvme0n1"},
    "host_power": {"text": "PSU 1 failed"},
    "host_heartbeat": {"state": "lost"},
    "job_start": {"reason": "submitted"},
    "job_end": {},
    "job_fail": {"reason": "NCCL timeout"},
    "job_restart": {"reason": "from checkpoint"},
    "checkpoint_save": {"step": 1000, "duration_s": 42.0},
    "checkpoint_load": {"step": 1000, "duration_s": 30.5},
    "maintenance": {"planned": True, "scope": "node0042", "text": "firmware"},
    "train_anomaly": {"type": "loss_spike", "step": 1001, "value": 9.1, "baseline": 2.3},
    "train_step": {"step": 1001, "duration_ms": 10234.5, "compute_ms": 8100.0, "wait_ms": 2100.0, "tokens": 4194304},
    "gpu_perf": {"sm_clock_mhz": 1410, "max_sm_clock_mhz": 1980, "power_w": 700.0, "throttle": ["hw_thermal"], "util": 99},
    "pcie_link": {"bdf": "0000:3b:00.0", "width": 8, "max_width": 16, "speed_gts": 16.0, "max_speed_gts": 32.0},
    "component_state": {"state": "in_repair", "cause": "gpu_hbm", "reason": "RMA", "ticket": "HW-1234"},
}

# For each kind, one wrong attr value and the field the error must name.
BAD_ATTRS: dict[str, tuple[dict, str]] = {
    "gpu_xid": ({"xid": "seventy-nine"}, "attrs.xid"),
    "gpu_ecc": ({"type": "triple"}, "attrs.type"),
    "gpu_thermal": ({"temp_c": "hot"}, "attrs.temp_c"),
    "nvlink_error": ({"link": -1}, "attrs.link"),
    "nvswitch_error": ({"sxid": "twenty"}, "attrs.sxid"),
    "nic_link": ({"device": "mlx5_0", "state": "sideways"}, "attrs.state"),
    "nic_error": ({"count": -5}, "attrs.count"),
    "pcie_aer": ({"severity": "mild"}, "attrs.severity"),
    "nccl_timeout": ({"seq": "abc"}, "attrs.seq"),
    "nccl_error": ({"rank": -1}, "attrs.rank"),
    "host_mce": ({"text": 12}, "attrs.text"),
    "host_mem_ecc": ({"text": ["x"]}, "attrs.text"),
    "host_kernel": ({"text": {"a": 1}}, "attrs.text"),
    "host_oom": ({"text": 1.5}, "attrs.text"),
    "host_disk": ({"text": False}, "attrs.text"),
    "host_power": ({"text": None}, "attrs.text"),
    "host_heartbeat": ({"state": "sleepy"}, "attrs.state"),
    "job_start": ({"reason": 7}, "attrs.reason"),
    "job_end": ({"reason": []}, "attrs.reason"),
    "job_fail": ({"reason": {}}, "attrs.reason"),
    "job_restart": ({"reason": 1}, "attrs.reason"),
    "checkpoint_save": ({"duration_s": -1}, "attrs.duration_s"),
    "checkpoint_load": ({"step": "last"}, "attrs.step"),
    "maintenance": ({"planned": "perhaps"}, "attrs.planned"),
    "train_anomaly": ({"type": "vibes"}, "attrs.type"),
    "train_step": ({"step": 3}, "attrs.duration_ms"),
    "gpu_perf": ({"throttle": ["sleepy"]}, "attrs.throttle.0"),
    "pcie_link": ({"width": "x16"}, "attrs.width"),
    "component_state": ({"state": "healthy", "cause": "gremlins"}, "attrs.cause"),
}


def event(kind: str = "gpu_xid", **fields) -> dict:
    return {"time": T0, "host": "node0042", "kind": kind, "attrs": SAMPLES[kind], **fields}


def test_every_kind_is_accepted_and_read_back(client):
    batch = [event(kind, id=f"ok-{kind}", message=f"sample {kind}") for kind in SAMPLES]
    answer = client.post("/v1/events", json=batch)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"accepted": len(SAMPLES), "duplicates": 0, "rejected": []}
    stored = {e["kind"]: e for e in client.get("/v1/events", params={"limit": 100}).json()["events"]}
    assert set(stored) == set(SAMPLES)
    for kind, attrs in SAMPLES.items():
        assert stored[kind]["attrs"] == attrs
        assert stored[kind]["id"] == f"ok-{kind}"
        assert stored[kind]["time"] == T0
        assert stored[kind]["received"].endswith("Z")
        assert stored[kind]["severity"]


def test_audit_events_cannot_be_posted(client):
    answer = client.post("/v1/events", json=[event("gpu_ecc", attrs={"type": "sbe"}),
                                             {"time": T0, "host": "node0042", "kind": "audit",
                                              "attrs": {"actor": "me", "action": "token.revoke"}}])
    assert answer.status_code == 200, answer.text
    assert answer.json()["accepted"] == 1
    assert answer.json()["rejected"] == [{"index": 1, "error": "kind: audit events are written by the service itself and cannot be posted"}]


@pytest.mark.parametrize("kind", sorted(BAD_ATTRS))
def test_bad_attrs_are_rejected_naming_the_field(client, kind):
    attrs, field = BAD_ATTRS[kind]
    answer = client.post("/v1/events", json=[{"time": T0, "host": "node0042", "kind": kind, "attrs": attrs}])
    assert answer.status_code == 422
    [rejected] = answer.json()["rejected"]
    assert rejected["index"] == 0 and rejected["error"].startswith(field + ":"), rejected


def test_mixed_batch_keeps_the_good_events(client):
    batch = [
        event(id="good-1"),
        {"time": T0, "host": "node0042", "kind": "no_such_kind"},
        {"host": "node0042", "kind": "gpu_xid", "attrs": {"xid": 1}},
        event(id="good-2", time="2026-11-29T08:00:01+02:00"),
        {"time": "2026-11-29T08:00:00", "host": "node0042", "kind": "job_end"},
        "not an object",
        event(id="good-3", time=1764403200.5),
    ]
    answer = client.post("/v1/events", json=batch).json()
    assert answer["accepted"] == 3
    errors = {r["index"]: r["error"] for r in answer["rejected"]}
    assert set(errors) == {1, 2, 4, 5}
    assert "unknown kind no_such_kind" in errors[1]
    assert errors[2].startswith("time:")
    assert "timezone" in errors[4]
    times = {e["id"]: e["time"] for e in client.get("/v1/events").json()["events"]}
    assert times == {"good-1": T0, "good-2": "2026-11-29T06:00:01.000000Z", "good-3": "2025-11-29T08:00:00.500000Z"}


@pytest.mark.parametrize("form", ["array", "object", "ndjson"])
def test_a_number_the_store_cannot_hold_is_refused_with_its_event_alone(client, form):
    """Beside another bad event (so the batch is validated one event at a time), an integer
    past 64 bits is refused by name, not stored as a float, and the good event is kept."""
    items = [event(id=f"{form}-good"), {"time": T0, "host": "node0042", "kind": "no_such_kind"},
             event(kind="host_kernel", id=f"{form}-big", attrs={"text": "x", "n": 2**64})]
    encoded = [json.dumps(item).encode() for item in items]
    body = {"array": b"[" + b",".join(encoded) + b"]", "object": b'{"events": [' + b",".join(encoded) + b"]}",
            "ndjson": b"\n".join(encoded)}[form]
    kind = "application/x-ndjson" if form == "ndjson" else "application/json"
    answer = client.post("/v1/events", content=body, headers={"content-type": kind}).json()
    assert answer["accepted"] == 1
    assert "attrs.n is an integer outside 64 bits" in {r["index"]: r["error"] for r in answer["rejected"]}[2]
    assert [e["id"] for e in client.get("/v1/events").json()["events"]] == [f"{form}-good"]


def test_reposting_is_idempotent_with_and_without_ids(client):
    with_id = [event(id="abc")]
    without_id = [event(kind="nic_link"), event(kind="host_oom")]
    assert client.post("/v1/events", json=with_id + without_id).json()["accepted"] == 3
    again = client.post("/v1/events", json=with_id + without_id).json()
    assert again == {"accepted": 0, "duplicates": 3, "rejected": []}
    within = client.post("/v1/events", json=[event(kind="gpu_ecc")] * 3).json()
    assert within == {"accepted": 1, "duplicates": 2, "rejected": []}
    assert len(client.get("/v1/events").json()["events"]) == 4
    # the same instant written with another offset is the same event
    shifted = client.post("/v1/events", json=[event(kind="gpu_ecc", time="2026-11-29T09:00:00.123456+01:00")]).json()
    assert shifted == {"accepted": 0, "duplicates": 1, "rejected": []}


def test_body_forms_ndjson_and_object(client):
    lines = b"\n".join(orjson.dumps(event(id=f"nd-{i}")) for i in range(3))
    answer = client.post("/v1/events", content=lines + b"\n{broken\n", headers={"content-type": "application/x-ndjson"})
    assert answer.json()["accepted"] == 3 and answer.json()["rejected"][0]["index"] == 3
    answer = client.post("/v1/events", json={"events": [event(id="obj-1")]})
    assert answer.json()["accepted"] == 1
    # rejections in line order, a line that is JSON but no object said in words
    mixed = b"\n".join([orjson.dumps(event(id="nd-ok")), b"[1, 2]", b"{broken", b'"text"'])
    answer = client.post("/v1/events", content=mixed, headers={"content-type": "application/x-ndjson"})
    assert [(r["index"], r["error"].split(":")[0]) for r in answer.json()["rejected"]] == [
        (1, "an event must be a JSON object"), (2, "line 3 is not valid JSON"), (3, "an event must be a JSON object")]


@pytest.mark.parametrize(
    "body, status, words",
    [
        (b"garbage", 400, "not valid JSON"),
        (b"[1, 2", 400, "not valid JSON"),
        (b"", 400, "empty body"),
        (b"42", 400, "expected a JSON array"),
        (b"null", 400, "expected a JSON array"),
        (b'{"events": 5}', 400, '"events" must be'),
    ],
)
def test_malformed_bodies_get_a_4xx_naming_the_problem(client, body, status, words):
    answer = client.post("/v1/events", content=body, headers={"content-type": "application/json"})
    assert answer.status_code == status and words in answer.json()["detail"]


def test_too_large_body_is_413(db_url):
    srv = serve_in_process(db_url, env={"FAULTGRAPH_MAX_BODY_BYTES": "2000", "FAULTGRAPH_MAX_BATCH_EVENTS": "5"})
    try:
        big = srv.client.post("/v1/events", json=[event(message="x" * 3000)])
        assert big.status_code == 413 and "limit" in big.json()["detail"]
        many = srv.client.post("/v1/events", json=[{"time": T0, "host": "h", "kind": "job_end"}] * 6)
        assert many.status_code == 413 and "limit of 5" in many.json()["detail"]
    finally:
        srv.stop()


def test_paging_and_filters(client):
    batch = [
        {"time": f"2026-11-29T08:{minute:02d}:00Z", "host": f"node{minute % 3}", "kind": "job_end", "id": f"p{minute:02d}",
         "job": "j1" if minute < 30 else "j2", "component": f"node{minute % 3}/gpu{minute % 8}"}
        for minute in range(60)
    ]
    client.post("/v1/events", json=list(reversed(batch)))
    seen, cursor = [], None
    while True:
        page = client.get("/v1/events", params={"limit": 7, **({"cursor": cursor} if cursor else {})}).json()
        seen += [e["id"] for e in page["events"]]
        cursor = page["next"]
        if cursor is None:
            break
    assert seen == [f"p{m:02d}" for m in range(60)]
    window = client.get("/v1/events", params={"since": "2026-11-29T08:10:00Z", "until": "2026-11-29T08:20:00Z"}).json()
    assert [e["id"] for e in window["events"]] == [f"p{m:02d}" for m in range(10, 20)]
    assert len(client.get("/v1/events", params={"host": "node1,node2"}).json()["events"]) == 40
    assert len(client.get("/v1/events", params={"job": "j2"}).json()["events"]) == 30
    inside = client.get("/v1/events", params={"component": "node0"}).json()["events"]
    assert len(inside) == 20 and all(e["component"].startswith("node0/") for e in inside)
    assert client.get("/v1/events", params={"since": "yesterday"}).status_code == 400
    assert client.get("/v1/events", params={"cursor": "!!"}).status_code == 400
    assert client.get("/v1/events", params={"limit": 0}).status_code == 422


@pytest.mark.slow
def test_restart_keeps_every_acknowledged_event(db_url):
    srv = start_server(db_url)
    acknowledged = 0
    for start in range(0, 5000, 500):
        batch = [{"time": 1764403200 + i, "host": f"node{i % 50:04d}", "kind": "nic_error", "id": f"r{i}",
                  "attrs": {"device": "mlx5_0", "count": i}} for i in range(start, start + 500)]
        acknowledged += srv.client.post("/v1/events", json=batch).json()["accepted"]
    srv.stop(kill=True)
    srv = serve_in_process(db_url)  # the store must reopen with every acknowledged event
    try:
        ids = stored_ids(srv.client)
        assert acknowledged == 5000 and sorted(ids) == sorted(f"r{i}" for i in range(5000))
    finally:
        srv.stop()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
event_like = st.fixed_dictionaries(
    {},
    optional={
        "time": st.one_of(st.just(T0), st.integers(), st.floats(allow_nan=False), st.text(max_size=30)),
        "host": st.one_of(st.just("node1"), st.text(max_size=10), st.integers()),
        "kind": st.one_of(st.sampled_from(sorted(SAMPLES)), st.text(max_size=10)),
        "attrs": json_values,
        "rank": json_values,
        "id": json_values,
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.one_of(json_values, st.lists(event_like, max_size=5), st.binary(max_size=64)))
def test_random_bodies_never_get_a_5xx(client, body):
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    answer = client.post("/v1/events", content=content, headers={"content-type": "application/json"})
    assert answer.status_code < 500, answer.text


def test_ok_heartbeats_are_host_state_and_only_transitions_are_events(db_url):
    """An `ok` heartbeat updates its host's row (last seen, clock offset) instead of being
    stored; going quiet stores `lost`, beating again stores `ok` with `back`."""
    import time
    from datetime import UTC, datetime, timedelta

    import sqlalchemy as sa

    from faultgraph.service import store
    from faultgraph.service.events.models import hosts_seen

    def beat(host: str, skew: float = 0.0) -> dict:
        at = datetime.now(UTC) - timedelta(seconds=skew)
        return {"time": at.isoformat(), "host": host, "kind": "host_heartbeat", "attrs": {"state": "ok"}}

    def transitions() -> list[tuple[str, str, bool]]:
        found = srv.client.get("/v1/events", params={"kind": "host_heartbeat"}).json()["events"]
        return [(e["host"], e["attrs"]["state"], bool(e["attrs"].get("back"))) for e in found]

    srv = serve_in_process(db_url, env={"FAULTGRAPH_HEARTBEAT_TIMEOUT": "1"})
    try:
        nic = {"time": T0, "host": "node0001", "kind": "nic_error", "attrs": {"count": 1}}
        answer = srv.client.post("/v1/events", json=[beat("node0001", skew=5.0), beat("node0002"), nic])
        assert answer.json() == {"accepted": 3, "duplicates": 0, "rejected": []}
        assert [e["kind"] for e in srv.client.get("/v1/events").json()["events"]] == ["nic_error"]
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and len(transitions()) < 2:
            time.sleep(0.2)
        assert sorted(transitions()) == [("node0001", "lost", False), ("node0002", "lost", False)]
        srv.client.post("/v1/events", json=[beat("node0002")]).raise_for_status()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and ("node0002", "ok", True) not in transitions():
            time.sleep(0.2)
        assert ("node0002", "ok", True) in transitions()
    finally:
        srv.stop()
    engine = store.make_engine(db_url)
    try:
        with engine.connect() as conn:
            seen = {row.host: row for row in conn.execute(sa.select(hosts_seen))}
    finally:
        engine.dispose()
    assert set(seen) == {"node0001", "node0002"}
    assert 4.0 < seen["node0001"].clock_offset_s < 10.0  # its agent's clock runs 5 s behind
    assert seen["node0002"].last_seen > seen["node0001"].last_seen


def test_a_client_gone_mid_body_is_one_line_not_a_traceback(db_url):
    """A post whose sender disconnects before the body is complete stores nothing and is
    not logged as a server error (the server's own output, so its own process)."""
    import socket
    import time

    server = start_server(db_url)
    try:
        host, port = server.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(b"POST /v1/events HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                         b"content-length: 100000\r\n\r\n[{\"time\": \"2026-11-29T08:00:00Z\", ")
            time.sleep(0.5)
        time.sleep(0.5)
        assert server.client.get("/v1/events").json()["events"] == []
    finally:
        server.stop()
    output = server.process.stdout.read().decode(errors="replace")
    assert "Traceback" not in output and "ERROR" not in output, output[-2000:]
