"""Fair ingest (service/auth/limits.py): one agent posting in a loop gets 429 with
Retry-After while the others keep every acknowledgement."""

import threading
import time

import httpx
import pytest
from conftest import serve_in_process, start_server
from test_auth import bearer

from faultgraph.service import store
from faultgraph.service.auth import service as tokens
from faultgraph.service.auth.limits import IngestLimiter, retry_after

T0 = "2026-11-29T08:00:00Z"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_bucket_refills_at_the_rate_and_says_how_long_to_wait():
    clock = Clock()
    limiter = IngestLimiter(rate=10, burst=3, max_in_flight=8, clock=clock)
    for _ in range(3):
        assert limiter.admit("a") is None
        limiter.release("a", 0)
    wait = limiter.admit("a")
    assert wait == pytest.approx(0.1) and retry_after(wait) == "1"
    assert limiter.admit("b") is None  # another caller is not affected
    clock.now += 0.1
    assert limiter.admit("a") is None
    assert limiter.refused == 1


def test_bodies_are_charged_by_size_and_in_flight_requests_by_share():
    clock = Clock()
    limiter = IngestLimiter(rate=1, burst=10, max_in_flight=2, unit_bytes=1000, clock=clock)
    assert limiter.admit("a") is None and limiter.admit("a") is None
    assert limiter.admit("a") == 1.0  # its share of the queue is taken
    limiter.release("a", 0)
    limiter.release("a", 20_000)  # 20 units of debt: 10 - 2 - 20 = -12
    wait = limiter.admit("a")
    assert wait == pytest.approx(13.0)
    clock.now += 13
    assert limiter.admit("a") is None


def test_idle_callers_are_forgotten_only_when_that_costs_them_nothing():
    clock = Clock()
    limiter = IngestLimiter(rate=1, burst=2, max_in_flight=1, max_callers=2, clock=clock)
    assert limiter.admit("busy") is None  # in flight, kept
    assert limiter.admit("idle") is None
    limiter.release("idle", 0)
    clock.now += 5  # idle's bucket is full again
    assert limiter.admit("new") is None
    assert limiter.admit("busy") == 1.0  # still counted in flight


def event(host: str, index: int, tag: str) -> dict:
    return {"time": T0, "host": host, "kind": "host_oom", "id": f"{tag}-{host}-{index}", "attrs": {"text": "x"}}


@pytest.fixture
def limited(db_url):
    """A server with tight limits (a steady agent's 8 posts fit in the burst of 10) and
    nine agent tokens, one per host."""
    engine = store.make_engine(db_url)
    store.init_schema(engine)
    with engine.begin() as conn:
        made = {f"node{n:04d}": tokens.create(conn, role="agent", name=f"node{n:04d}")[0] for n in range(9)}
        made["reader"] = tokens.create(conn, role="reader")[0]
    engine.dispose()
    srv = start_server(db_url, env={"FAULTGRAPH_INGEST_RATE": "5", "FAULTGRAPH_INGEST_BURST": "10"})
    yield srv, made
    srv.stop()


def test_a_flooding_agent_is_throttled_while_eight_others_lose_nothing(limited):
    srv, made = limited
    stop = threading.Event()
    flood: list[httpx.Response] = []

    def flooder() -> None:
        with httpx.Client(base_url=srv.url, headers=bearer(made["node0000"]), timeout=30) as http:
            index = 0
            deadline = time.monotonic() + 60
            # until the others are done and it has been refused at least once
            while not (stop.is_set() and any(r.status_code == 429 for r in flood)) and time.monotonic() < deadline:
                flood.append(http.post("/v1/events", json=[event("node0000", index, "flood")]))
                index += 1

    answers: dict[str, list[dict]] = {}

    def steady(host: str) -> None:
        with httpx.Client(base_url=srv.url, headers=bearer(made[host]), timeout=30) as http:
            for batch in range(8):
                response = http.post("/v1/events", json=[event(host, batch * 5 + i, "steady") for i in range(5)])
                answers.setdefault(host, []).append({"status": response.status_code, **response.json()})
                time.sleep(0.1)

    flooders = [threading.Thread(target=flooder) for _ in range(2)]
    for thread in flooders:
        thread.start()
    others = [threading.Thread(target=steady, args=(f"node{n:04d}",)) for n in range(1, 9)]
    for thread in others:
        thread.start()
    for thread in others:
        thread.join()
    stop.set()
    for thread in flooders:
        thread.join()

    throttled = [r for r in flood if r.status_code == 429]
    assert throttled and {r.status_code for r in flood} <= {200, 429}
    assert all(int(r.headers["retry-after"]) >= 1 and "retry in" in r.json()["detail"] for r in throttled)
    assert all(r.headers["connection"] == "close" for r in throttled)  # the refused body is never read
    assert len(answers) == 8
    for host, replies in answers.items():
        assert [(a["status"], a["accepted"]) for a in replies] == [(200, 5)] * 8, host
    stored = srv.client.get("/v1/events", params={"kind": "host_oom", "limit": 10_000}, headers=bearer(made["reader"]))
    ids = {e["id"] for e in stored.json()["events"]}
    assert all(f"steady-node{n:04d}-{i}" in ids for n in range(1, 9) for i in range(40))


def test_the_open_loopback_server_is_not_limited(db_url):
    srv = serve_in_process(db_url, env={"FAULTGRAPH_INGEST_RATE": "1", "FAULTGRAPH_INGEST_BURST": "1"})
    try:
        codes = {srv.client.post("/v1/events", json=[event("node0001", i, "dev")]).status_code for i in range(10)}
    finally:
        srv.stop()
    assert codes == {200}
