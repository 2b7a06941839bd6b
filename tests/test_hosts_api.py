"""`GET /v1/hosts` on a real server: heartbeats are state, and this is where they are read —
last seen, last beat, clock offset, silence and lost per host, paged, role reader."""

import time
from datetime import UTC, datetime, timedelta

import pytest
from conftest import start_server

from faultgraph.service import store
from faultgraph.service.auth import service as tokens


def beat(host: str, *, ahead_s: float) -> dict:
    """An `ok` heartbeat whose agent clock runs `ahead_s` seconds ahead of the server's."""
    at = datetime.now(UTC) + timedelta(seconds=ahead_s)
    return {"time": at.isoformat(), "host": host, "kind": "host_heartbeat", "attrs": {"state": "ok"}}


@pytest.fixture
def secured(db_url):
    """A server whose heartbeat timeout is 1 s, with an agent and a reader token."""
    engine = store.make_engine(db_url)
    store.init_schema(engine)
    with engine.begin() as conn:
        made = {role: tokens.create(conn, role=role)[0] for role in ("agent", "reader")}
    engine.dispose()
    server = start_server(db_url, env={"FAULTGRAPH_HEARTBEAT_TIMEOUT": "3"})
    yield server, {role: {"authorization": f"Bearer {token}"} for role, token in made.items()}
    server.stop()


def test_hosts_show_last_seen_beat_offset_and_who_went_silent(secured):
    server, auth = secured
    client = server.client
    answer = client.post("/v1/events", json=[beat("node0001", ahead_s=-30.0)], headers=auth["agent"])
    assert answer.status_code == 200 and answer.json()["accepted"] == 1
    time.sleep(3.5)  # node0001 is now silent past the timeout
    answer = client.post("/v1/events", json=[beat("node0002", ahead_s=5.0), beat("node0003", ahead_s=0.0)],
                         headers=auth["agent"])
    assert answer.status_code == 200 and answer.json()["accepted"] == 2

    hosts = client.get("/v1/hosts", headers=auth["reader"]).json()
    assert [h["host"] for h in hosts["hosts"]] == ["node0001", "node0002", "node0003"] and hosts["next"] is None
    one, two, three = hosts["hosts"]
    assert 29.0 < one["clock_offset_s"] < 31.0  # the agent's clock 30 s behind: received − beat
    assert -5.0 < two["clock_offset_s"] < -4.0
    assert one["lost"] and one["silent_s"] > 1.0
    assert not two["lost"] and two["silent_s"] < 1.0
    seen, beaten = (datetime.fromisoformat(one[k]) for k in ("last_seen", "last_beat"))
    assert abs((seen - beaten).total_seconds() - one["clock_offset_s"]) < 1e-3

    lost = client.get("/v1/hosts", params={"lost": "true"}, headers=auth["reader"]).json()["hosts"]
    assert [h["host"] for h in lost] == ["node0001"]
    alive = client.get("/v1/hosts", params={"lost": "false"}, headers=auth["reader"]).json()["hosts"]
    assert [h["host"] for h in alive] == ["node0002", "node0003"]

    # `ok` heartbeats are state, not events: none of them is listed as an event
    listed = client.get("/v1/events", params={"kind": "host_heartbeat"}, headers=auth["reader"]).json()["events"]
    assert [e for e in listed if (e.get("attrs") or {}).get("state") == "ok" and not e["attrs"].get("back")] == []


def test_hosts_page_by_cursor_and_refuse_bad_input(secured):
    server, auth = secured
    client = server.client
    names = [f"node{i:04d}" for i in range(5)]
    assert client.post("/v1/events", json=[beat(h, ahead_s=0.0) for h in names], headers=auth["agent"]).status_code == 200
    seen, cursor = [], None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = client.get("/v1/hosts", params=params, headers=auth["reader"]).json()
        seen += [h["host"] for h in page["hosts"]]
        cursor = page["next"]
        if cursor is None:
            break
    assert seen == names

    bad = client.get("/v1/hosts", params={"cursor": "%%%"}, headers=auth["reader"])
    assert bad.status_code == 400 and "cursor" in bad.json()["detail"]
    assert client.get("/v1/hosts", params={"limit": 0}, headers=auth["reader"]).status_code == 422
    assert client.get("/v1/hosts", headers=auth["agent"]).status_code == 403  # reading is the reader's
    assert client.get("/v1/hosts").status_code == 401
