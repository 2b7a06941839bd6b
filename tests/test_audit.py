"""The audit trail (SPEC §1 `audit`, §10): each admin action, over HTTP and from the CLI,
is stored as an `audit` event that readers read like any other and nobody can post."""

import getpass

import pytest
from conftest import serve_in_process
from test_auth import bearer, cli, create_token
from test_incidents_api import gpu_falls_off

from faultgraph.attribution.generators import rail_optimized
from faultgraph.service import store
from faultgraph.service.auth import service as tokens


@pytest.fixture
def admin_server(db_url):
    engine = store.make_engine(db_url)
    store.init_schema(engine)
    with engine.begin() as conn:
        made = {role: tokens.create(conn, role=role, name=f"on-call-{role}")[0] for role in ("admin", "reader", "agent")}
    engine.dispose()
    srv = serve_in_process(db_url)
    yield srv, made
    srv.stop()


def audit_trail(srv, token: str) -> list[dict]:
    answer = srv.client.get("/v1/events", params={"kind": "audit", "limit": 100}, headers=bearer(token))
    assert answer.status_code == 200, answer.text
    return [event["attrs"] for event in answer.json()["events"]]


def test_every_admin_action_leaves_an_audit_event(admin_server):
    srv, made = admin_server
    admin = bearer(made["admin"])
    created = srv.client.post("/v1/tokens", json={"role": "agent", "name": "node0007", "expires": "30d"}, headers=admin).json()
    rotated = srv.client.post(f"/v1/tokens/{created['id']}/rotate", json={"overlap": "1h"}, headers=admin).json()
    assert srv.client.delete(f"/v1/tokens/{rotated['id']}", headers=admin).status_code == 204
    assert srv.client.put("/v1/topology", json=rail_optimized(hosts=4), headers=admin).status_code == 200
    assert srv.client.post("/v1/events", json=gpu_falls_off(), headers=bearer(made["agent"])).status_code == 200
    srv.client.post("/v1/analyze", headers=admin)
    [incident] = srv.client.get("/v1/incidents", headers=admin).json()["incidents"]
    patch = {"root_cause": {"cause": "gpu_hbm"}, "status": "acknowledged", "note": "HBM per nvidia-smi"}
    assert srv.client.patch(f"/v1/incidents/{incident['id']}", json=patch, headers=admin).status_code == 200
    assert srv.client.patch("/v1/incidents/inc-999999", json={"status": "resolved"}, headers=admin).status_code == 404

    trail = audit_trail(srv, made["reader"])
    assert [(a["action"], a["target"]) for a in trail] == [
        ("token.create", created["id"]),
        ("token.rotate", created["id"]),
        ("token.revoke", rotated["id"]),
        ("topology.replace", "version 1"),
        ("incident.patch", incident["id"]),
    ]
    assert {a["actor"] for a in trail} == {"on-call-admin"}
    assert trail[0]["detail"]["role"] == "agent" and trail[0]["detail"]["name"] == "node0007"
    assert trail[1]["detail"]["new"] == rotated["id"]
    assert trail[3]["detail"]["hosts"] == 4
    assert trail[4]["detail"] == {**patch, "root_cause": {"cause": "gpu_hbm", "category": "gpu"}}  # as applied
    everything = srv.client.get("/v1/events", params={"kind": "audit"}, headers=admin).text
    assert created["token"].split("_", 2)[2] not in everything and rotated["token"].split("_", 2)[2] not in everything


def test_readers_read_the_trail_and_nobody_posts_to_it(admin_server):
    srv, made = admin_server
    srv.client.post("/v1/tokens", json={"role": "reader"}, headers=bearer(made["admin"]))
    assert srv.client.get("/v1/events", params={"kind": "audit"}, headers=bearer(made["agent"])).status_code == 403
    forged = {"time": "2026-11-29T08:00:00Z", "host": "node0001", "kind": "audit",
              "attrs": {"actor": "someone-else", "action": "token.create"}}
    answer = srv.client.post("/v1/events", json=[forged], headers=bearer(made["admin"]))
    assert answer.status_code == 422 and "written by the service itself" in answer.json()["rejected"][0]["error"]
    assert [a["actor"] for a in audit_trail(srv, made["reader"])] == ["on-call-admin"]


def test_the_cli_records_its_token_changes_with_the_local_user(db_url):
    token = create_token(db_url, "--role", "admin", "--name", "bootstrap")
    rotated = cli("token", "rotate", token, "--overlap", "1h", "--db", db_url)
    assert rotated.exit_code == 0, rotated.stderr
    assert cli("token", "revoke", token, "--db", db_url).exit_code == 0
    srv = serve_in_process(db_url)
    try:
        # revoked inside its overlap window: a revocation ends it at once
        assert srv.client.get("/v1/events", headers=bearer(token)).status_code == 401
        trail = audit_trail(srv, rotated.stdout.strip())
    finally:
        srv.stop()
    token_id = token.split("_")[1]
    assert [(a["action"], a["target"]) for a in trail] == [
        ("token.create", token_id), ("token.rotate", token_id), ("token.revoke", token_id)]
    assert {a["actor"] for a in trail} == {f"local:{getpass.getuser()}"}
    assert trail[0]["detail"]["name"] == "bootstrap"
