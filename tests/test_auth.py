"""Tokens and roles (SPEC §9), expiry and rotation (§10): the app in this process, and a real
`faultgraph serve` process for the module's secured server (its store is held by another process)."""

import time
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from click.testing import Result
from conftest import serve_in_process, start_server
from typer.testing import CliRunner

from faultgraph.service import store
from faultgraph.service.auth import service as tokens
from faultgraph.service.auth.models import Principal
from faultgraph.service.batches import Decoded
from faultgraph.service.cli import app

T0 = "2026-11-29T08:00:00Z"
OPEN_PATHS = {"/healthz"}  # liveness probes carry no token; everything else declares a role
ANY_CALLER_POSTS = {"/v1/diagnose"}  # SPEC §5: reader or agent; stores nothing


def cli(*args: str, env: dict[str, str] | None = None) -> Result:
    """The `faultgraph` command in-process (stdout and stderr apart, as a shell sees them)."""
    return CliRunner().invoke(app, list(args), env=env)


def create_token(db_url: str, *args: str) -> str:
    done = cli("token", "create", "--db", db_url, *args)
    assert done.exit_code == 0, done.stderr
    return done.stdout.strip()


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def event(host: str = "node0001", **fields) -> dict:
    return {"time": T0, "host": host, "kind": "host_oom", **fields}


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """One server for this module whose store holds a token of each role and a host-bound
    agent token (made through the library: the CLI has its own test)."""
    db_url = f"duckdb:///{tmp_path_factory.mktemp('secured') / 'faultgraph.duckdb'}"
    engine = store.make_engine(db_url)
    store.init_schema(engine)
    with engine.begin() as conn:
        made = {role: tokens.create(conn, role=role, name=f"test-{role}")[0] for role in ("agent", "reader", "admin")}
        made["bound"] = tokens.create(conn, role="agent", host_pattern="node00[0-4]?")[0]
    engine.dispose()
    srv = start_server(db_url)
    yield srv, made
    srv.stop()


def test_create_prints_the_token_alone_and_list_never_shows_secrets(db_url):
    token = create_token(db_url, "--role", "agent", "--name", "rack-7", "--host-pattern", "node07*")
    assert token.startswith("fg_") and "\n" not in token and len(token) > 40
    listing = cli("token", "list", "--db", db_url)
    assert listing.exit_code == 0
    [header, row] = listing.stdout.strip().splitlines()
    token_id, secret = token.split("_", 2)[1:]
    assert row.split("\t")[:4] == [token_id, "agent", "rack-7", "node07*"]
    assert secret not in listing.stdout
    engine = sa.create_engine(db_url)
    with engine.connect() as conn:  # only the hash is stored
        stored = conn.execute(sa.text("SELECT * FROM tokens")).mappings().one()
    engine.dispose()
    assert secret not in str(dict(stored))
    assert cli("token", "revoke", "--db", db_url, token_id).exit_code == 0
    assert token_id not in cli("token", "list", "--db", db_url).stdout
    assert token_id in cli("token", "list", "--all", "--db", db_url).stdout
    again = cli("token", "revoke", "--db", db_url, token_id)
    assert again.exit_code == 1 and "no live token" in again.stderr


@pytest.mark.parametrize(
    "args, words",
    [
        (("--role", "root"), "role must be one of"),
        (("--role", "reader", "--host-pattern", "node*"), "only agent tokens"),
        (("--role", "agent", "--host-pattern", "node; rm -rf /"), "shell glob"),
    ],
)
def test_create_refuses_bad_arguments(db_url, args, words):
    done = cli("token", "create", "--db", db_url, *args)
    assert done.exit_code == 2 and words in done.stderr and done.stdout == ""


def test_serve_refuses_other_than_loopback_without_tokens(db_url):
    done = cli("serve", "--host", "0.0.0.0", "--port", "1", "--db", db_url)
    assert done.exit_code == 2
    assert "refusing to listen on 0.0.0.0" in done.stderr and "faultgraph token create" in done.stderr


def test_token_commands_explain_a_database_held_by_the_server(secured):
    done = cli("token", "list", "--db", secured[0].db_url)
    assert done.exit_code == 1 and "held by another process" in done.stderr and "/v1/tokens" in done.stderr


def test_roles(secured):
    srv, made = secured
    post = lambda token: srv.client.post("/v1/events", json=[event()], headers=bearer(token))  # noqa: E731
    read = lambda token: srv.client.get("/v1/events", headers=bearer(token))  # noqa: E731
    admin = lambda token: srv.client.get("/v1/tokens", headers=bearer(token))  # noqa: E731
    assert [post(made[r]).status_code for r in ("agent", "reader", "admin")] == [200, 403, 200]
    assert [read(made[r]).status_code for r in ("agent", "reader", "admin")] == [403, 200, 200]
    assert [admin(made[r]).status_code for r in ("agent", "reader", "admin")] == [403, 403, 200]
    assert srv.client.get("/healthz").status_code == 200
    assert srv.client.get("/docs").status_code == 200 and srv.client.get("/openapi.json").status_code == 200


def test_bad_tokens_get_the_same_401(secured):
    srv, made = secured
    real_id = made["reader"].split("_")[1]
    attempts = [
        {},
        {"authorization": "Bearer"},
        {"authorization": "Basic dXNlcjpwYXNz"},
        bearer("garbage"),
        bearer(f"fg_{real_id}_wrongsecret"),
        bearer(made["reader"][:-1]),
        bearer("fg_" + "x" * 10_000),
        {"authorization": "Bearer " + made["reader"] + " extra"},
    ]
    answers = [srv.client.get("/v1/events", headers=headers) for headers in attempts]
    assert {a.status_code for a in answers} == {401}
    assert len({a.text for a in answers}) == 1  # nothing tells a probe how close it came
    assert all(a.headers["www-authenticate"] == "Bearer" for a in answers)


def test_anonymous_callers_learn_nothing_before_the_401(secured):
    """Authentication comes before routing and body parsing: no 404 to map the paths, no
    422 describing what a body should look like."""
    srv, made = secured
    garbage = {"content-type": "application/json"}
    assert srv.client.post("/v1/tokens", content=b"{not json", headers=garbage).status_code == 401
    assert srv.client.get("/v1/no-such-thing").status_code == 401
    assert srv.client.get("/v1/no-such-thing", headers=bearer(made["reader"])).status_code == 404
    assert srv.client.post("/v1/tokens", content=b"{not json", headers={**garbage, **bearer(made["admin"])}).status_code == 422


def test_every_endpoint_declares_a_role(secured):
    """Walks the OpenAPI: each operation refuses no token (401), and the reader and agent
    roles reach only what SPEC §9 gives them (reader: reads; agent: no reads)."""
    srv, made = secured
    spec = srv.client.get("/openapi.json").json()
    checked = 0
    for path, operations in spec["paths"].items():
        if path in OPEN_PATHS:
            continue
        url = path.replace("{", "").replace("}", "")  # any value: auth answers before lookup
        for method in operations:
            anonymous = srv.client.request(method, url)
            assert anonymous.status_code == 401, (method, path)
            if path in ANY_CALLER_POSTS:
                for role in ("reader", "agent"):
                    assert srv.client.request(method, url, headers=bearer(made[role])).status_code != 403, (path, role)
                continue
            role = "agent" if method == "get" else "reader"
            assert srv.client.request(method, url, headers=bearer(made[role])).status_code == 403, (method, path, role)
            checked += 1
    assert checked >= 5


def test_host_bound_agent_is_refused_other_hosts_per_event(secured):
    srv, made = secured
    batch = [event("node0042", id="a"), event("node0999", id="b"), {"kind": "nope"}, event("node0007", id="c"), event("node00420", id="d")]
    answer = srv.client.post("/v1/events", json=batch, headers=bearer(made["bound"])).json()
    assert answer["accepted"] == 2
    assert [r["index"] for r in answer["rejected"]] == [1, 2, 4]
    assert answer["rejected"][0]["error"].startswith("host:")
    stored = srv.client.get("/v1/events", headers=bearer(made["reader"])).json()["events"]
    ids = {e["id"] for e in stored}
    assert {"a", "c"} <= ids and not {"b", "d"} & ids
    ndjson = b'{"time": "2026-11-29T08:00:00Z", "host": "evil", "kind": "host_oom"}\n'
    refused = srv.client.post("/v1/events", content=ndjson, headers={**bearer(made["bound"]), "content-type": "application/x-ndjson"})
    assert refused.status_code == 422 and refused.json()["rejected"][0]["index"] == 0
    assert srv.client.post("/v1/events", json=[event("anything")], headers=bearer(made["agent"])).json()["accepted"] == 1


def test_tokens_over_http_and_revocation_takes_effect_at_once(secured):
    srv, made = secured
    admin = bearer(made["admin"])
    created = srv.client.post("/v1/tokens", json={"role": "reader", "name": "dashboards"}, headers=admin)
    assert created.status_code == 201
    new = created.json()
    assert srv.client.get("/v1/events", headers=bearer(new["token"])).status_code == 200
    listed = srv.client.get("/v1/tokens", headers=admin).json()["tokens"]
    assert new["id"] in {t["id"] for t in listed} and all("token" not in t for t in listed)
    assert srv.client.delete(f"/v1/tokens/{new['id']}", headers=admin).status_code == 204
    assert srv.client.get("/v1/events", headers=bearer(new["token"])).status_code == 401
    assert srv.client.delete(f"/v1/tokens/{new['id']}", headers=admin).status_code == 404
    bad = srv.client.post("/v1/tokens", json={"role": "reader", "host_pattern": "node*"}, headers=admin)
    assert bad.status_code == 422 and "only agent tokens" in bad.json()["detail"]


def test_loopback_without_tokens_is_open_until_the_first_token(server):
    assert server.client.post("/v1/events", json=[event()]).status_code == 200
    assert server.client.get("/v1/events").status_code == 200
    made = server.client.post("/v1/tokens", json={"role": "admin"})
    assert made.status_code == 201
    assert server.client.get("/v1/events").status_code == 401
    assert server.client.get("/v1/events", headers=bearer(made.json()["token"])).status_code == 200


def test_revoking_every_token_does_not_reopen_the_server(db_url):
    token = create_token(db_url, "--role", "admin")
    cli("token", "revoke", "--db", db_url, token)
    srv = serve_in_process(db_url)
    try:
        assert srv.client.get("/v1/events").status_code == 401
    finally:
        srv.stop()


def test_an_app_not_told_it_is_on_loopback_is_closed(tmp_path):
    engine = store.make_engine(f"duckdb:///{tmp_path / 'x.duckdb'}")
    store.init_schema(engine)
    assert tokens.Authenticator(engine, open_without_tokens=False).authenticate(None) is None
    assert tokens.Authenticator(engine, open_without_tokens=True).authenticate(None).role == "admin"
    engine.dispose()


@pytest.mark.parametrize(
    "host, loopback",
    [("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("[::1]", True), ("localhost", True),
     ("0.0.0.0", False), ("::", False), ("10.0.0.5", False), ("node0042", False), ("", False)],
)
def test_is_loopback(host, loopback):
    assert tokens.is_loopback(host) is loopback


def test_reject_foreign_hosts_keeps_indices_of_the_posted_batch():
    decoded = Decoded(valid=[event("a1"), event("b1"), event("a2")], rejected=[{"index": 1, "error": "x"}])
    tokens.reject_foreign_hosts(decoded, principal=Principal("t", None, "agent", "a*"))
    assert [e["host"] for e in decoded.valid] == ["a1", "a2"]
    assert decoded.rejected == [{"index": 1, "error": "x"}, {"index": 2, "error": "host: this token may not post events for this host"}]
    unbound = Decoded(valid=[event("z")])
    tokens.reject_foreign_hosts(unbound, principal=Principal("t", None, "agent"))
    assert len(unbound.valid) == 1


FIXED = datetime(2026, 1, 1, 12, 0)  # naive UTC, as the store keeps times


def test_an_expired_token_gets_the_same_401_as_a_wrong_one(tmp_path):
    engine = store.make_engine(f"duckdb:///{tmp_path / 'expiry.duckdb'}")
    store.init_schema(engine)
    with engine.begin() as conn:
        old, _ = tokens.create(conn, role="reader", expires_in=timedelta(days=1), now=FIXED)  # expired 2026-01-02
        live, _ = tokens.create(conn, role="reader")
    engine.dispose()
    other = serve_in_process(f"duckdb:///{tmp_path / 'expiry.duckdb'}")
    try:
        expired = other.client.get("/v1/events", headers=bearer(old))
        wrong = other.client.get("/v1/events", headers=bearer(live[:-3] + "abc"))
        assert expired.status_code == wrong.status_code == 401 and expired.text == wrong.text
        assert other.client.get("/v1/events", headers=bearer(live)).status_code == 200
    finally:
        other.stop()


def test_expiry_follows_the_authenticators_clock(tmp_path):
    engine = store.make_engine(f"duckdb:///{tmp_path / 'x.duckdb'}")
    store.init_schema(engine)
    with engine.begin() as conn:
        token, info = tokens.create(conn, role="agent", expires_in=timedelta(hours=1), now=FIXED)
    ends = info.expires.replace(tzinfo=UTC).timestamp()
    now = [ends - 1]
    auth = tokens.Authenticator(engine, open_without_tokens=False, clock=lambda: now[0])
    assert auth.authenticate(token).token_id == info.id
    now[0] = ends
    assert auth.authenticate(token) is None
    engine.dispose()


def test_create_with_expiry_and_list_shows_expiry_and_last_use(db_url):
    token = create_token(db_url, "--role", "agent", "--name", "rack-7", "--expires", "30d", "--cert-name", "node0042")
    [header, row] = cli("token", "list", "--db", db_url).stdout.strip().splitlines()
    fields = dict(zip(header.split("\t"), row.split("\t")))
    assert fields["id"] == token.split("_")[1] and fields["cert_name"] == "node0042" and fields["last_used"] == "-"
    created, expires = (datetime.fromisoformat(fields[name]) for name in ("created", "expires"))
    assert expires - created == timedelta(days=30)
    bad = cli("token", "create", "--db", db_url, "--role", "agent", "--expires", "soon")
    assert bad.exit_code == 2 and "expected a number and a unit" in bad.stderr
    forever = cli("token", "create", "--db", db_url, "--role", "agent", "--expires", "999999w")
    assert forever.exit_code == 2 and "longer than 3650 days" in forever.stderr


def test_last_use_is_recorded(server):
    admin = server.client.post("/v1/tokens", json={"role": "admin"}).json()["token"]
    made = server.client.post("/v1/tokens", json={"role": "reader", "name": "dash"}, headers=bearer(admin)).json()
    assert made["last_used"] is None
    assert server.client.get("/v1/events", headers=bearer(made["token"])).status_code == 200
    time.sleep(2.1)  # past the authenticator's 2 s TTL a request starts a reload, which writes last use back
    deadline = time.monotonic() + 10
    while True:
        listed = {t["id"]: t for t in server.client.get("/v1/tokens", headers=bearer(admin)).json()["tokens"]}
        if listed[made["id"]]["last_used"] is not None:
            break
        assert time.monotonic() < deadline, "last use not written back 10 s after the TTL"
        time.sleep(0.2)


def test_rotation_keeps_both_tokens_valid_for_the_overlap(secured):
    srv, made = secured
    admin = bearer(made["admin"])
    old = srv.client.post("/v1/tokens", json={"role": "agent", "name": "node0100", "host_pattern": "node0100"}, headers=admin).json()
    rotated = srv.client.post(f"/v1/tokens/{old['id']}/rotate", json={"overlap": "1h", "expires": "30d"}, headers=admin)
    assert rotated.status_code == 201, rotated.text
    new = rotated.json()
    assert new["name"] == "node0100" and new["host_pattern"] == "node0100" and new["replaces"]["expires"] is not None
    for token in (old["token"], new["token"]):  # both work during the window
        assert srv.client.post("/v1/events", json=[event("node0100")], headers=bearer(token)).status_code == 200
    again = srv.client.post(f"/v1/tokens/{new['id']}/rotate", json={"overlap": "0s"}, headers=admin).json()
    assert srv.client.post("/v1/events", json=[event("node0100")], headers=bearer(new["token"])).status_code == 401
    assert srv.client.post("/v1/events", json=[event("node0100")], headers=bearer(again["token"])).status_code == 200
    assert srv.client.post("/v1/tokens/nope/rotate", headers=admin).status_code == 404
    endless = srv.client.post(f"/v1/tokens/{again['id']}/rotate", json={"overlap": "999999w"}, headers=admin)
    assert endless.status_code == 422 and "longer than" in endless.json()["detail"]


def test_cli_rotate_by_name(db_url):
    first = create_token(db_url, "--role", "agent", "--name", "node0200")
    done = cli("token", "rotate", "node0200", "--overlap", "2h", "--db", db_url)
    assert done.exit_code == 0, done.stderr
    second = done.stdout.strip()
    assert second.startswith("fg_") and second != first and "stays valid until" in done.stderr
    rows = [line.split("\t") for line in cli("token", "list", "--db", db_url).stdout.strip().splitlines()[1:]]
    assert sorted(row[2] for row in rows) == ["node0200", "node0200"]  # two valid tokens for one name
    ambiguous = cli("token", "rotate", "node0200", "--db", db_url)
    assert ambiguous.exit_code == 2 and "2 live tokens are named" in ambiguous.stderr


def test_serve_on_a_port_in_use_fails_before_saying_it_listens(live_server, tmp_path):
    """It said "faultgraph listening on …" and then failed to bind."""
    import subprocess
    import sys

    port = live_server.url.rsplit(":", 1)[1]
    done = subprocess.run([sys.executable, "-m", "faultgraph.service.cli", "serve", "--port", port,
                           "--db", f"duckdb:///{tmp_path / 'second.duckdb'}"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 3 and "address already in use" in done.stderr.lower(), done.stderr
    assert "listening on" not in done.stderr + done.stdout
