"""Webhooks against a real local HTTP receiver: open, root-cause change, resolve; retried
after a 5xx; deduplicated; never holding up ingest; not repeated after a restart."""

import json
import os
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import serve_in_process
from test_incidents_api import T0, gpu_falls_off, iso

from faultgraph.service.alerts import AlertConfig, changes, parse_target
from faultgraph.service.config import Settings


class Receiver:
    """Records every POST; `fail` answers 503 to the next n posts of a path; `gate` holds a path."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict]] = []
        self.fail: dict[str, int] = {}
        self.gates: dict[str, threading.Event] = {}
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                gate = receiver.gates.get(self.path)
                if gate is not None:
                    gate.wait(30)
                with receiver.lock:
                    failing = receiver.fail.get(self.path, 0)
                    if failing:
                        receiver.fail[self.path] = failing - 1
                    else:
                        receiver.posts.append((self.path, body))
                self.send_response(503 if failing else 202)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def bodies(self, path: str) -> list[dict]:
        with self.lock:
            return [body for p, body in self.posts if p == path]

    def wait_for(self, path: str, count: int, timeout: float = 20) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.bodies(path)) >= count:
                return self.bodies(path)
            time.sleep(0.05)
        raise AssertionError(f"{path}: expected {count} posts, got {self.bodies(path)}")


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    for gate in receiver.gates.values():
        gate.set()
    receiver.server.shutdown()


def alerting_env(receiver: Receiver) -> dict[str, str]:
    return {
        "FAULTGRAPH_WEBHOOKS": f"json={receiver.url}/json, slack={receiver.url}/slack,pagerduty={receiver.url}/pd",
        "FAULTGRAPH_PAGERDUTY_ROUTING_KEY": "R0UT1NGKEY",
        "FAULTGRAPH_PUBLIC_URL": "https://faultgraph.example/",
        "FAULTGRAPH_ALERT_BACKOFF_SECONDS": "0.1",
    }


def test_open_change_resolve_with_retry_dedup_and_restart(db_url, receiver):
    receiver.fail["/json"] = 2  # the generic hook is down for two attempts
    receiver.gates["/slack"] = threading.Event()  # Slack hangs until released
    server = serve_in_process(db_url, env=alerting_env(receiver))
    try:
        client = server.client
        storm = [e for e in gpu_falls_off() if e["kind"] != "job_restart"]
        assert client.post("/v1/events", json=storm).status_code == 200
        client.post("/v1/analyze")
        [opened] = receiver.wait_for("/json", 1)
        incident_id = opened["incident"]["id"]
        assert opened["event"] == "incident.opened"
        assert opened["incident"]["root_cause"]["component"] == "node0042/gpu3"
        assert opened["url"] == f"https://faultgraph.example/ui/incident.html?id={incident_id}"
        # Slack is still hanging: ingest and analysis go on regardless
        more = [{"time": iso(T0 + timedelta(minutes=1)), "host": "node0042", "kind": "gpu_ecc", "attrs": {"type": "sbe", "count": 1}}]
        assert client.post("/v1/events", json=more).json()["accepted"] == 1
        client.post("/v1/analyze")
        assert receiver.bodies("/slack") == []
        receiver.gates["/slack"].set()
        [slack] = receiver.wait_for("/slack", 1)
        assert incident_id in slack["text"] and "gpu_fell_off_bus" in slack["text"] and "node0042/gpu3" in slack["text"]
        assert "<https://faultgraph.example/ui/incident.html?id=" in slack["text"]
        [page] = receiver.wait_for("/pd", 1)
        assert page["routing_key"] == "R0UT1NGKEY" and page["event_action"] == "trigger"
        assert page["dedup_key"] == f"faultgraph-{incident_id}"
        assert page["payload"]["severity"] == "critical" and page["payload"]["source"] == "node0042/gpu3"
        assert page["payload"]["class"] == "gpu_fell_off_bus" and page["links"][0]["href"].endswith(incident_id)

        # on-call says it was the NVSwitch: a root-cause change
        patched = client.patch(f"/v1/incidents/{incident_id}", json={"root_cause": {"component": "node0042/nvswitch1", "cause": "nvswitch"}})
        assert patched.status_code == 200
        changed = receiver.wait_for("/json", 2)[1]
        assert changed["event"] == "incident.root_cause_changed"
        assert changed["previous_root_cause"]["component"] == "node0042/gpu3"
        assert changed["incident"]["root_cause"]["component"] == "node0042/nvswitch1"
        assert receiver.wait_for("/pd", 2)[1]["event_action"] == "trigger"

        # the job restarts: resolved
        client.post("/v1/events", json=[e for e in gpu_falls_off() if e["kind"] == "job_restart"])
        client.post("/v1/analyze")
        resolved = receiver.wait_for("/json", 3)[2]
        assert resolved["event"] == "incident.resolved" and resolved["incident"]["status"] == "resolved"
        assert receiver.wait_for("/pd", 3)[2]["event_action"] == "resolve"
        assert ":white_check_mark:" in receiver.wait_for("/slack", 3)[2]["text"]

        client.post("/v1/analyze")  # a pass that changes nothing sends nothing
        metrics = client.get("/metrics").text
        assert 'faultgraph_alerts_total{outcome="retried",target="json"} 2.0' in metrics
        assert 'faultgraph_alerts_total{outcome="sent",target="pagerduty"} 3.0' in metrics
    finally:
        server.stop()
    assert [b["event"] for b in receiver.bodies("/json")] == ["incident.opened", "incident.root_cause_changed", "incident.resolved"]

    # a restart on the same store pages nobody again
    server = serve_in_process(db_url, env=alerting_env(receiver))
    try:
        server.client.post("/v1/events", json=more + [{"time": iso(T0 + timedelta(minutes=2)), "host": "node0042",
                                                      "kind": "gpu_ecc", "attrs": {"type": "sbe", "count": 2}}])
        server.client.post("/v1/analyze")
        time.sleep(3)  # longer than a scan period: anything to send would have been sent
    finally:
        server.stop()
    assert len(receiver.posts) == 9


def test_configuration_from_environment():
    config = AlertConfig.from_settings(settings_from({
        "FAULTGRAPH_WEBHOOKS": "https://a.example/hook, slack=https://hooks.slack.example/x,pagerduty",
        "FAULTGRAPH_PAGERDUTY_ROUTING_KEY": "k"}))
    assert [(t.format, t.url) for t in config.targets] == [
        ("json", "https://a.example/hook"), ("slack", "https://hooks.slack.example/x"),
        ("pagerduty", "https://events.pagerduty.com/v2/enqueue")]
    assert AlertConfig.from_settings(settings_from({})).targets == ()
    with pytest.raises(ValueError, match="ROUTING_KEY"):
        AlertConfig.from_settings(settings_from({"FAULTGRAPH_WEBHOOKS": "pagerduty"}))
    with pytest.raises(ValueError, match="format 'teams'"):
        parse_target("teams=https://x")
    with pytest.raises(ValueError, match="http"):
        parse_target("slack=ftp://x")
    with pytest.raises(ValueError, match="FAULTGRAPH_ALERT_ATTEMPTS"):
        settings_from({"FAULTGRAPH_ALERT_ATTEMPTS": "many"})


def settings_from(env: dict[str, str]) -> Settings:
    """Settings read from exactly `env`, as `faultgraph serve` reads its environment."""
    with pytest.MonkeyPatch.context() as patch:
        for name in [n for n in os.environ if n.startswith("FAULTGRAPH_")]:
            patch.delenv(name)
        for name, value in env.items():
            patch.setenv(name, value)
        return Settings()


def test_changes_between_scans():
    incident = {"status": "open", "root_cause": {"component": "n1/gpu0", "cause": "gpu_hbm"}}
    assert changes(None, incident) == ["opened"]
    assert changes(("open", "n1/gpu0|gpu_hbm"), incident) == []
    assert changes(("open", "n1/gpu1|gpu_hbm"), incident) == ["root_cause_changed"]
    assert changes(None, {**incident, "status": "resolved"}) == ["opened", "resolved"]
    assert changes(("resolved", "n1/gpu0|gpu_hbm"), {**incident, "status": "resolved"}) == []
