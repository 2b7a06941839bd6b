"""Hostile input: schemathesis over the service's own OpenAPI, and hand-written attacks.
None may get a 5xx; what is stored must come back exactly as sent."""

import asyncio
import json
import socket
import threading
import time
import urllib.parse

import httpx
import pyarrow as pa
import pytest
import schemathesis
from conftest import Server, serve_in_process, start_server, stored_ids
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import ignored_auth, response_schema_conformance

from faultgraph.service import store
from faultgraph.service.app import create_app
from faultgraph.service.auth import service as tokens
from faultgraph.service.config import Settings
from faultgraph.service.incidents import flows
from faultgraph.service.writer import GroupWriter, WriterBusy

T0 = "2026-11-29T08:00:00Z"
SQL = "'; DROP TABLE events; --"


@pytest.fixture(scope="module")
def secured_server(tmp_path_factory) -> Server:
    """A server with one admin token, so the fuzzing also goes through authentication."""
    db_url = f"duckdb:///{tmp_path_factory.mktemp('fuzz') / 'faultgraph.duckdb'}"
    engine = store.make_engine(db_url)
    store.init_schema(engine)
    with engine.begin() as conn:
        token, _ = tokens.create(conn, role="admin", name="fuzz")
    engine.dispose()
    srv = start_server(db_url)
    srv.client.headers["authorization"] = f"Bearer {token}"
    yield srv
    srv.stop()


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx, value) -> bytes:
    """NDJSON bodies are documented as a string; anything else generated goes as one line.
    Lone surrogates go out as the invalid UTF-8 they encode: hostile input too."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return json.dumps(value).encode()


# The app's own OpenAPI, read without starting it: every router included in `create_app`
# is fuzzed as soon as it lands.
SCHEMA = schemathesis.openapi.from_dict(create_app().openapi())
OPERATIONS = [result.ok() for result in SCHEMA.get_all_operations()]
# (operation, mode) pairs; an operation that takes no input has no invalid request to make.
CASES = [
    pytest.param(op, mode, id=f"{op.label} {mode.value}")
    for op in OPERATIONS
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    if mode is GenerationMode.POSITIVE or op.body or list(op.iter_parameters())
]


@pytest.mark.slow
@pytest.mark.parametrize("operation, mode", CASES)
def test_openapi_fuzz(secured_server, operation, mode):
    """Valid and invalid requests to every operation: no 5xx, documented answers match
    their schema, and an operation that declares auth refuses the request without it."""
    token = secured_server.client.headers["authorization"]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    def fuzz(case):
        case.headers = {**(case.headers or {}), "Authorization": token}
        # Negative cases may carry a generated Authorization header, replaced here by the real
        # token: the auth probe only means something for positive ones.
        checks = [not_a_server_error, response_schema_conformance]
        if mode is GenerationMode.POSITIVE:
            checks.append(ignored_auth)
        case.call_and_validate(base_url=secured_server.url, checks=checks)

    fuzz()


def raw_event(**fields: str) -> bytes:
    """One event as raw JSON text, so a field can hold what no JSON encoder would write."""
    base = {"time": '"2026-11-29T08:00:00Z"', "host": '"node0001"', "kind": '"host_oom"', **fields}
    return b"[{" + ", ".join(f'"{k}": {v}' for k, v in base.items()).encode("latin-1") + b"}]"


def nested(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


# name → (body, content type, the statuses a correct service may give)
HOSTILE: dict[str, tuple[bytes, str, set[int]]] = {
    "integer past 64 bits in a typed attr": (raw_event(kind='"gpu_xid"', attrs='{"xid": %d}' % 10**30), "json", {422}),
    "integer past 64 bits in an unknown attr": (raw_event(attrs='{"x": %d}' % 10**30), "json", {200, 400, 422}),
    "400-digit integer": (raw_event(attrs='{"x": 1%s}' % ("0" * 400)), "json", {200, 400, 422}),
    "integer past 64 bits as rank": (raw_event(rank=str(10**30)), "json", {400, 422}),
    "watchdog wait of 2,000 years": (raw_event(kind='"nccl_timeout"', attrs='{"elapsed_ms": %d}' % 10**14), "json", {422}),
    "count of 2**64": (raw_event(kind='"nic_error"', attrs='{"count": %d}' % 2**64), "json", {400, 422}),
    "float overflowing to infinity": (raw_event(attrs='{"x": 1e999}'), "json", {400, 422}),
    "epoch 1e300": (raw_event(time="1e300"), "json", {422}),
    "epoch -1e300": (raw_event(time="-1e300"), "json", {422}),
    "NaN attr": (raw_event(attrs='{"x": NaN}'), "json", {400, 422}),
    "Infinity attr": (raw_event(attrs='{"x": -Infinity}'), "json", {400, 422}),
    "NaN time": (raw_event(time="NaN"), "json", {400, 422}),
    "Infinity rank": (raw_event(rank="Infinity"), "json", {400, 422}),
    "NaN in NDJSON": (raw_event(attrs='{"x": NaN}')[1:-1] + b"\n", "ndjson", {422}),
    "attrs nested 10 deep": (raw_event(attrs=nested(10)), "json", {422}),
    "attrs nested 300 deep": (raw_event(attrs=nested(300)), "json", {400, 422}),
    "attrs nested 5000 deep in NDJSON": (raw_event(attrs=nested(5000))[1:-1], "ndjson", {400, 422}),
    "body of 100,000 open brackets": (b"[" * 100_000 + b"]" * 100_000, "json", {400, 422}),
    "attrs of 1 MB": (raw_event(attrs='{"x": "%s"}' % ("a" * 1_000_000)), "json", {422}),
    "attrs with 100,000 keys": (raw_event(attrs="{%s}" % ",".join(f'"k{i}": {i}' for i in range(100_000))), "json", {422}),
    "message of 1 MB": (raw_event(message='"%s"' % ("m" * 1_000_000)), "json", {422}),
    "invalid UTF-8 in message": (raw_event(message='"\xff\xfe"'), "json", {400, 422}),
    "invalid UTF-8 in host": (raw_event(host='"node\xc0\xaf"'), "json", {400, 422}),
    "invalid UTF-8 in NDJSON": (raw_event(message='"\xff"')[1:-1] + b"\n", "ndjson", {400, 422}),
    "lone surrogate escape": (raw_event(message='"\\ud800"'), "json", {400, 422}),
    "NUL in job": (raw_event(job='"a\\u0000b"'), "json", {422}),
    "year 1": (raw_event(time='"0001-01-01T00:00:00Z"'), "json", {422}),
    "year 9999": (raw_event(time='"9999-12-31T23:59:59Z"'), "json", {422}),
    "year 275760": (raw_event(time='"+275760-09-13T00:00:00Z"'), "json", {422}),
    "February 30": (raw_event(time='"2026-02-30T00:00:00Z"'), "json", {422}),
    "leap second": (raw_event(time='"2026-06-30T23:59:60Z"'), "json", {422}),
    "time without a zone": (raw_event(time='"2026-11-29T08:00:00"'), "json", {422}),
    "epoch before 1970": (raw_event(time="-86400"), "json", {422}),
    "SQL as host": (raw_event(host=json.dumps(SQL)), "json", {422}),
    "SQL as kind": (raw_event(kind=json.dumps(SQL)), "json", {422}),
    "SQL as severity": (raw_event(severity=json.dumps(SQL)), "json", {422}),
    "path traversal as host": (raw_event(host='"../../etc/passwd"'), "json", {422}),
    "JSON array sent as NDJSON": (raw_event(), "ndjson", {422}),
    "gzip bytes as JSON": (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", "json", {400}),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_bodies_get_a_4xx_or_are_stored_safely(secured_server, name):
    body, kind, expected = HOSTILE[name]
    content_type = {"json": "application/json", "ndjson": "application/x-ndjson"}[kind]
    answer = secured_server.client.post("/v1/events", content=body, headers={"content-type": content_type})
    assert answer.status_code in expected, answer.text[:300]
    assert answer.json()  # an explanation, in JSON, even for garbage


@pytest.mark.parametrize("wrap", [lambda items: b"[" + items + b"]", lambda items: b'{"events": [' + items + b"]}"])
def test_an_event_nested_too_deep_is_refused_alone(secured_server, wrap):
    """Deeper than pydantic's JSON reader goes (about 200): the batch was a 400, and the
    good event beside the deep one was lost."""
    good = b'{"time": "2026-11-29T08:00:00Z", "host": "node0001", "kind": "job_end", "id": "beside-the-deep-one"}'
    deep = raw_event(attrs=nested(300), id='"the-deep-one"')[1:-1]
    answer = secured_server.client.post("/v1/events", content=wrap(good + b", " + deep),
                                        headers={"content-type": "application/json"})
    body = answer.json()
    assert answer.status_code == 200 and body["accepted"] + body["duplicates"] == 1, answer.text  # stored once, by either case
    assert [r["index"] for r in body["rejected"]] == [1] and "nests deeper" in body["rejected"][0]["error"]
    stored = secured_server.client.get("/v1/events", params={"host": "node0001", "kind": "job_end", "limit": 10_000}).json()
    assert "beside-the-deep-one" in {e["id"] for e in stored["events"]}


STRING_FIELDS = ("component", "message", "job", "id")


@pytest.mark.parametrize("text", [SQL, "1' OR '1'='1", '"); DELETE FROM tokens; --', "../../../etc/passwd", "..\\..\\boot.ini", "%2e%2e%2f%00"])
def test_sql_and_traversal_strings_are_stored_verbatim(secured_server, text):
    client = secured_server.client
    sent = {"time": T0, "host": "node0001", "kind": "gpu_xid", "attrs": {"xid": 79, "pci": text, text: text},
            **{name: f"{name}:{text}" for name in STRING_FIELDS}}
    assert client.post("/v1/events", json=[sent]).json()["accepted"] == 1
    for name in ("component", "job"):  # the string fields that are also filters
        found = client.get("/v1/events", params={name: f"{name}:{text}"}).json()["events"]
        assert [e["id"] for e in found] == [f"id:{text}"], name
    [stored] = [e for e in client.get("/v1/events", params={"job": f"job:{text}"}).json()["events"]]
    assert {k: stored[k] for k in ("component", "message", "job", "attrs")} == {
        "component": f"component:{text}", "message": f"message:{text}", "job": f"job:{text}", "attrs": sent["attrs"]}
    for param in ("host", "kind", "since", "until", "cursor", "limit"):
        assert client.get("/v1/events", params={param: text}).status_code < 500, param
    for method in ("GET", "DELETE"):
        assert client.request(method, f"/v1/tokens/{urllib.parse.quote(text, safe='')}").status_code < 500
        assert client.request(method, f"/v1/tokens/{text}").status_code < 500
    assert client.get("/v1/tokens").json()["tokens"], "the tokens table survived"


@pytest.mark.parametrize("value", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"])
@pytest.mark.parametrize("path", ["/v1/events", "/v1/incidents", "/v1/stats/mtbf", "/v1/stats/fleet"])
def test_a_time_beyond_utc_s_range_is_named(secured_server, path, value):
    """Valid RFC 3339, but before year 1 or after 9999 once in UTC: it was a 500."""
    for name in ("since", "until"):
        answer = secured_server.client.get(path, params={name: value})
        assert answer.status_code == 400 and answer.json()["detail"].startswith(f"{name}: "), answer.text


def test_hostile_headers(secured_server):
    client = secured_server.client
    assert client.get("/v1/events", headers={"authorization": "Bearer " + "x" * 60_000}).status_code < 500
    assert client.post("/v1/events", content=b"[]", headers={"content-type": "application/json; charset=ebcdic"}).status_code < 500
    for length in ("99999999999999999999", "-5", "abc", "2, 2"):  # lies an HTTP client library will not tell
        assert raw_status(secured_server, f"Content-Length: {length}") < 500, length


def raw_status(srv: Server, header: str) -> int:
    """Send a POST with a hand-written header over a bare socket; the status code answered."""
    host, port = srv.url.removeprefix("http://").split(":")
    lines = [
        "POST /v1/events HTTP/1.1", f"Host: {host}", f"Authorization: {srv.client.headers['authorization']}",
        "Content-Type: application/json", header, "Connection: close", "", "[]",
    ]
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall("\r\n".join(lines).encode())
        reply = sock.recv(4096)
    return int(reply.split(b" ", 2)[1])


def test_the_service_is_still_healthy_afterwards(secured_server):
    client = secured_server.client
    assert client.get("/healthz").status_code == 200
    assert client.post("/v1/events", json=[{"time": T0, "host": "node0001", "kind": "job_end", "id": "after"}]).json()["accepted"] == 1


def test_writer_refuses_past_its_queue_and_drains_what_it_took(tmp_path):
    """Backpressure without timing luck: a store that blocks fills the bounded queue, the
    next submit is refused (the route answers 503 + Retry-After), and what was taken commits."""
    engine = store.make_engine(f"duckdb:///{tmp_path / 'w.duckdb'}")
    release = threading.Event()

    def slow_insert(conn, rows: pa.Table) -> list[str]:
        release.wait(timeout=30)
        return rows.column("id").to_pylist()

    writer = GroupWriter(engine, slow_insert, first_seq=1, max_queue=3, max_group_rows=1)
    batch = lambda i: pa.table({"id": [f"b{i}"]})  # noqa: E731
    futures = [writer.submit(batch(0))]
    deadline = time.monotonic() + 10
    while writer.depth and time.monotonic() < deadline:  # the thread has taken batch 0 and blocks
        time.sleep(0.01)
    futures += [writer.submit(batch(i)) for i in range(1, 4)]
    with pytest.raises(WriterBusy):
        writer.submit(batch(4))
    release.set()
    assert [f.result(timeout=30) for f in futures] == [1, 1, 1, 1]
    writer.close()
    engine.dispose()


def test_writer_survives_a_store_outage(tmp_path):
    """A failing commit fails only the batches in it (the route answers 503 + Retry-After);
    the writer goes on and the next batch commits, with sequence numbers left unconsumed."""
    engine = store.make_engine(f"duckdb:///{tmp_path / 'o.duckdb'}")
    down = threading.Event()
    down.set()
    seen_seq: list[list[int]] = []

    def flaky_insert(conn, rows: pa.Table) -> list[str]:
        if down.is_set():
            down.clear()
            raise OSError("No space left on device")
        seen_seq.append(rows.column("seq").to_pylist())
        return rows.column("id").to_pylist()

    writer = GroupWriter(engine, flaky_insert, first_seq=10, max_queue=4, max_group_rows=1)
    with pytest.raises(OSError):
        writer.submit(pa.table({"id": ["lost"]})).result(timeout=30)
    assert writer.submit(pa.table({"id": ["kept"]})).result(timeout=30) == 1
    assert seen_seq == [[10]]
    writer.close()
    engine.dispose()


def test_writer_answers_coroutines_on_their_loop_and_skips_a_cancelled_one(tmp_path):
    """`submit_async`: a group's outcomes reach the event loop together; a request that went
    away (its await cancelled) neither loses its rows nor stops the others' answers, and a
    failed commit reaches every coroutine waiting on it."""
    engine = store.make_engine(f"duckdb:///{tmp_path / 'a.duckdb'}")
    inserting, release = threading.Event(), threading.Event()
    committed: list[list[str]] = []

    def held_insert(conn, rows: pa.Table) -> list[str]:
        inserting.set()
        release.wait(timeout=30)
        ids = rows.column("id").to_pylist()
        if "broken" in ids:
            raise OSError("No space left on device")
        committed.append(ids)
        return ids

    writer = GroupWriter(engine, held_insert, first_seq=1, max_queue=8, max_group_rows=100)

    async def storm() -> list:
        first = writer.submit_async(pa.table({"id": ["first"]}))  # taken at once; the insert holds
        # Its group is closed once the insert runs (an empty queue is not enough: the writer
        # still gathers what arrives before it starts the insert).
        while not inserting.is_set():
            await asyncio.sleep(0.01)
        waiters = [writer.submit_async(pa.table({"id": [f"b{i}"]})) for i in range(3)]
        waiters[1].cancel()  # its client went away
        release.set()
        answers = await asyncio.wait_for(asyncio.gather(first, waiters[0], waiters[2]), timeout=30)
        broken = writer.submit_async(pa.table({"id": ["broken"]}))
        with pytest.raises(OSError):
            await broken
        return answers

    assert asyncio.run(storm()) == [1, 1, 1]
    assert committed == [["first"], ["b0", "b1", "b2"]]  # one group, the cancelled post's row too
    assert writer.submit(pa.table({"id": ["after"]})).result(timeout=30) == 1
    writer.close()
    engine.dispose()


@pytest.mark.slow
def test_storm_of_concurrent_agents(tmp_path):
    """Many agents at once against a small writer queue: answers are 200 or 503 with
    Retry-After, agents that honour it get everything in, and nothing is stored twice."""
    srv = start_server(f"duckdb:///{tmp_path / 's.duckdb'}", env={"FAULTGRAPH_WRITER_QUEUE": "2"})
    agents, batches, size = 12, 4, 1000
    statuses: list[int] = []
    lock = threading.Lock()

    def agent(n: int) -> None:
        with httpx.Client(base_url=srv.url, timeout=60) as client:
            for b in range(batches):
                body = [{"time": 1764403200 + i, "host": f"node{n:04d}", "kind": "gpu_ecc", "id": f"s{n}-{b}-{i}",
                         "attrs": {"type": "sbe", "count": i}} for i in range(size)]
                while True:
                    answer = client.post("/v1/events", json=body)
                    with lock:
                        statuses.append(answer.status_code)
                    if answer.status_code != 503:
                        break
                    time.sleep(min(float(answer.headers["retry-after"]), 0.2))
                assert answer.status_code == 200, answer.text

    started = time.monotonic()
    threads = [threading.Thread(target=agent, args=(n,)) for n in range(agents)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.monotonic() - started
    try:
        total = agents * batches * size
        assert set(statuses) <= {200, 503}
        ids = stored_ids(srv.client)
        assert len(ids) == len(set(ids)) == total
        print(f"\nstorm: {agents} agents, {total} events in {seconds:.1f} s ({total / seconds:,.0f}/s), "
              f"{statuses.count(503)} answers 503 + Retry-After, 0 lost, 0 duplicated")
    finally:
        srv.stop()


def test_a_failing_engine_pass_shows_in_healthz_until_a_pass_succeeds(db_url, monkeypatch):
    """A pass that raises (a store fault, an input the engine trips on) stops incidents while
    ingest goes on; /healthz says so instead of `ok`, and clears once a pass succeeds."""
    real = flows.analyze_pending

    def tripping(*args, **kwargs):
        raise RuntimeError("the engine trips on something")

    def health(client, until) -> dict:
        deadline = time.monotonic() + 30
        while not until(answer := client.get("/healthz").json()) and time.monotonic() < deadline:
            time.sleep(0.1)
        return answer

    with TestClient(create_app(Settings(db_url=db_url), open_without_tokens=True)) as client:
        monkeypatch.setattr(flows, "analyze_pending", tripping)
        client.app.state.runner.wake()
        failing = health(client, lambda a: a["engine_failures"] > 0)
        assert failing["status"] == "degraded" and failing["engine_failures"] >= 1
        monkeypatch.setattr(flows, "analyze_pending", real)
        client.app.state.runner.wake()
        assert health(client, lambda a: a["engine_failures"] == 0)["status"] == "ok"


def test_an_event_that_fails_to_resolve_is_stored_as_sent_with_the_rest(db_url, monkeypatch, caplog):
    """A fault in resolving one event (a topology attr of the wrong type did it, before
    uploads checked them) failed the whole commit group: 503 for every agent in it."""
    from faultgraph.attribution.resolve import Resolver

    resolve = Resolver.resolve

    def failing(self, event, placement=None):
        if event["kind"] == "nvswitch_error":
            raise ValueError("invalid literal for int() with base 10: 'abc'")
        return resolve(self, event, placement)

    monkeypatch.setattr(Resolver, "resolve", failing)
    srv = serve_in_process(db_url)
    try:
        sent = [{"time": T0, "host": "node0001", "kind": "host_oom", "id": "good"},
                {"time": T0, "host": "nvsw01", "kind": "nvswitch_error", "id": "odd", "attrs": {"sxid": 12028}}]
        answer = srv.client.post("/v1/events", json=sent)
        assert answer.status_code == 200 and answer.json()["accepted"] == 2, answer.text
        stored = {e["id"]: e["component"] for e in srv.client.get("/v1/events").json()["events"]}
        assert stored == {"good": "node0001", "odd": "nvsw01"}
        assert "resolving a nvswitch_error event of nvsw01 failed" in caplog.text
    finally:
        srv.stop()
