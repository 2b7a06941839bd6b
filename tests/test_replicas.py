"""Replicas: two `faultgraph serve` processes on one PostgreSQL, the leader killed mid-storm.

Only meaningful on a shared store, so skipped unless FAULTGRAPH_TEST_DB is PostgreSQL (CI
runs the suite on both backends).
"""

import threading
import time
from datetime import UTC, datetime

import httpx
import pytest
from conftest import Server, chosen_backend, start_server, stored_ids, wait_until
from test_incidents_api import gpu_falls_off

pytestmark = pytest.mark.skipif(chosen_backend() == "duckdb", reason="replicas share a PostgreSQL store")

BATCH = 200
WRITERS_PER_REPLICA = 2


def leading(srv: Server) -> bool:
    return srv.client.get("/healthz").json()["leader"]


def noise(ids: list[str]) -> list[dict]:
    """Background traffic the engine reads past: informational, a year before the storm."""
    return [{"time": 1764403200 + i, "host": f"node{i % 64:04d}", "kind": "nic_error", "severity": "info",
             "id": event_id, "attrs": {"device": "mlx5_0", "count": i}} for i, event_id in enumerate(ids)]


def incidents_of(srv: Server) -> list[dict]:
    return srv.client.get("/v1/incidents").json()["incidents"]


def test_leader_killed_mid_storm_survivor_takes_over_nothing_lost(db_url):
    first = start_server(db_url)
    servers = [first]
    try:
        second = start_server(db_url)
        servers.append(second)
        wait_until(lambda: leading(first) or leading(second), within=10, what="a leader")
        leader, survivor = (first, second) if leading(first) else (second, first)
        assert not leading(survivor), "two leaders"

        lock = threading.Lock()
        acknowledged: set[str] = set()
        stop = threading.Event()

        def writer(srv: Server, name: str) -> None:
            with httpx.Client(base_url=srv.url, timeout=30) as client:
                n = 0
                while not stop.is_set():
                    ids = [f"{name}-{n}-{i}" for i in range(BATCH)]
                    n += 1
                    try:
                        answer = client.post("/v1/events", json=noise(ids))
                    except httpx.TransportError:
                        return  # its replica was killed: this batch is unacknowledged
                    if answer.status_code == 200:
                        with lock:
                            acknowledged.update(ids)
                    else:
                        assert answer.status_code == 503, answer.text

        threads = [threading.Thread(target=writer, args=(srv, f"{label}{w}"))
                   for srv, label in ((leader, "l"), (survivor, "s")) for w in range(WRITERS_PER_REPLICA)]
        for thread in threads:
            thread.start()

        # The storm starts through both replicas; the leader's engine opens the incident.
        storm = gpu_falls_off()
        assert leader.client.post("/v1/events", json=storm[:20]).status_code == 200
        assert survivor.client.post("/v1/events", json=storm[20:40]).status_code == 200
        wait_until(lambda: len(incidents_of(survivor)) == 1, within=20, what="the leader opens the incident")
        [opened] = incidents_of(survivor)

        leader.process.kill()  # SIGKILL mid-storm: no shutdown hook, the lease is not given up
        killed_at = time.monotonic()
        leader.process.wait(timeout=30)
        assert survivor.client.post("/v1/events", json=storm[40:]).status_code == 200
        wait_until(lambda: leading(survivor), within=10, what="the survivor takes the lease")
        takeover = time.monotonic() - killed_at

        # The survivor's engine (no POST /v1/analyze) folds the rest of the storm in.
        wait_until(lambda: [i["symptoms"] for i in incidents_of(survivor)] == [63], within=20, what="the survivor's engine")
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        assert len(acknowledged) >= BATCH * WRITERS_PER_REPLICA

        stored = stored_ids(survivor.client)
        assert len(stored) == len(set(stored)), "an event is stored twice"
        missing = acknowledged - set(stored)
        assert not missing, f"{len(missing)} acknowledged events were lost"

        [incident] = incidents_of(survivor)
        assert incident["id"] == opened["id"], "the survivor re-created the incident instead of updating it"
        assert incident["root_cause"]["component"] == "node0042/gpu3"
        assert incident["root_cause"]["cause"] == "gpu_fell_off_bus"
        assert incident["status"] == "resolved" and incident["hosts"] == 8

        # The killed replica comes back as a follower, and both serve the same incidents.
        restarted = start_server(db_url)
        servers.append(restarted)
        assert not leading(restarted) and leading(survivor)
        assert incidents_of(restarted) == incidents_of(survivor)
        print(f"\nreplicas: lease taken over {takeover:.1f} s after SIGKILL; {len(acknowledged)} acknowledged, "
              f"{len(stored)} stored, 0 lost, 0 duplicated; one incident, {incident['symptoms']} symptoms")
    finally:
        for srv in servers:
            srv.stop()


def test_only_the_leader_reports_a_lost_host_seen_by_any_replica(db_url):
    """Heartbeats reach the follower only; the leader still marks the quiet host lost, once."""
    fast = {"FAULTGRAPH_HEARTBEAT_TIMEOUT": "3"}  # room for a loaded CI between node0002's beats
    servers = [start_server(db_url, env=fast)]
    try:
        servers.append(start_server(db_url, env=fast))
        wait_until(lambda: any(leading(s) for s in servers), within=10, what="a leader")
        follower = next(s for s in servers if not leading(s))

        def beat(host: str) -> dict:
            return {"time": datetime.now(UTC).isoformat(), "host": host, "kind": "host_heartbeat",
                    "attrs": {"state": "ok"}}

        def lost() -> list[str]:
            found = follower.client.get("/v1/events", params={"kind": "host_heartbeat"}).json()["events"]
            return [e["host"] for e in found if e["attrs"]["state"] == "lost"]

        follower.client.post("/v1/events", json=[beat("node0001"), beat("node0002")])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # node0002 keeps beating, node0001 has gone quiet
            follower.client.post("/v1/events", json=[beat("node0002")])
            time.sleep(0.2)
        assert lost() == ["node0001"]
    finally:
        for srv in servers:
            srv.stop()
