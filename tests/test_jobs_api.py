"""Jobs over HTTP: registration and validation, listing, the job an event belongs to,
state from `job_*` events, and the footprint — the app in this process over a real DuckDB file."""

import orjson
import pytest
from conftest import InProcessServer, serve_in_process
from hypothesis import given, settings
from hypothesis import strategies as st

from faultgraph.attribution.generators import rail_optimized

JOB = {
    "id": "llama-r7",
    "start": "2026-11-29T08:00:00Z",
    "gpus_per_host": 8,
    "hosts": ["node0002", "node0003", "node0000", "node0001"],
    "parallelism": {"tp": 8, "pp": 2, "dp": 2},
}


def event(**fields) -> dict:
    return {"time": "2026-11-29T09:00:00Z", "host": "node0003", "kind": "nccl_timeout", **fields}


def post_events(server: InProcessServer, *events: dict) -> None:
    answer = server.client.post("/v1/events", json=list(events)).json()
    assert answer["accepted"] == len(events), answer


def stored(server: InProcessServer, **params) -> list[dict]:
    return server.client.get("/v1/events", params=params).json()["events"]


def test_register_and_read(server: InProcessServer) -> None:
    created = server.client.post("/v1/jobs", json={**JOB, "owner": "pretraining"})
    assert created.status_code == 201, created.text
    job = server.client.get("/v1/jobs/llama-r7").json()
    assert job["state"] == "running" and job["start"] == "2026-11-29T08:00:00.000000Z"
    assert job["world_size"] == 32 and job["hosts"] == JOB["hosts"] and job["host_count"] == 4
    assert job["layout"] == {"tp": 8, "cp": 1, "dp": 2, "pp": 2, "order": "tp-dp-pp"}
    assert job["groups"]["tp"] == {"size": 8, "count": 4}
    assert job["groups"]["dp"] == {"size": 2, "count": 16}
    assert job["attrs"] == {"owner": "pretraining"}
    assert "footprint" not in job

    again = server.client.post("/v1/jobs", json={**JOB, "hosts": JOB["hosts"][:2], "parallelism": {"tp": 8}})
    assert again.status_code == 200
    assert server.client.get("/v1/jobs/llama-r7").json()["world_size"] == 16

    missing = server.client.get("/v1/jobs/nope")
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]


def test_explicit_ranks(server: InProcessServer) -> None:
    ranks = [{"rank": r, "host": f"node000{r // 2}", "gpu": 7 - r % 2} for r in range(6)]
    answer = server.client.post("/v1/jobs", json={"id": "small", "start": "2026-11-29T08:00:00Z", "ranks": ranks})
    assert answer.status_code == 201, answer.text
    job = server.client.get("/v1/jobs/small").json()
    assert job["world_size"] == 6 and job["ranks"] == ranks and job["hosts"] == ["node0000", "node0001", "node0002"]
    post_events(server, event(host="node0001", rank=3))
    [found] = stored(server, host="node0001")
    assert found["job"] == "small" and found["component"] == "node0001/gpu6"


@pytest.fixture(scope="module")
def refusing_server(tmp_path_factory) -> InProcessServer:
    """One server for the refusals: none of them may store anything."""
    server = serve_in_process(f"duckdb:///{tmp_path_factory.mktemp('refusals') / 'faultgraph.duckdb'}")
    yield server
    server.stop()


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"parallelism": {"tp": 8, "pp": 2, "dp": 4}}, "does not equal the world size 32"),
        ({"parallelism": {"tp": 8, "ep": 2}}, "unknown parallelism ep"),
        ({"parallelism": {"tp": None}}, "parallelism tp must be a positive integer, got None"),
        ({"parallelism": {"tp": 8, "dp": 4, "order": "tp-xx"}}, "order"),
        ({"hosts": ["node0000", "node0000"]}, "node0000 listed twice"),
        ({"hosts": None}, "hosts"),
        ({"gpus_per_host": 0}, "gpus_per_host"),
        ({"hosts": ["bad host"]}, "hosts.0"),
        ({"ranks": [{"rank": 1, "host": "node0000", "gpu": 0}]}, "rank 1 is not in 0..0"),
        ({"start": "yesterday"}, "start"),
        ({"end": "2026-11-29T07:00:00Z"}, "end 2026-11-29T07:00:00+00:00 is before start"),
        ({"id": ""}, "id"),
    ],
)
def test_bad_registrations_name_the_problem(refusing_server: InProcessServer, change: dict, words: str) -> None:
    answer = refusing_server.client.post("/v1/jobs", json={**JOB, **change})
    assert answer.status_code == 422, answer.text
    assert words in answer.json()["detail"]
    assert refusing_server.client.get("/v1/jobs").json()["jobs"] == []


def test_not_json_is_refused(refusing_server: InProcessServer) -> None:
    answer = refusing_server.client.post("/v1/jobs", content=b"{oops", headers={"content-type": "application/json"})
    assert answer.status_code == 422 and answer.json()["detail"]


def test_list_pages_with_a_cursor(server: InProcessServer) -> None:
    for i in range(5):
        body = {**JOB, "id": f"job-{i}", "start": f"2026-11-2{i}T08:00:00Z"}
        assert server.client.post("/v1/jobs", json=body).status_code == 201
    seen, cursor = [], None
    while True:
        page = server.client.get("/v1/jobs", params={"limit": 2, **({"cursor": cursor} if cursor else {})}).json()
        seen += [job["id"] for job in page["jobs"]]
        cursor = page["next"]
        if cursor is None:
            break
    assert seen == [f"job-{i}" for i in reversed(range(5))]
    assert server.client.get("/v1/jobs", params={"cursor": "garbage"}).status_code == 400
    post_events(server, event(kind="job_end", job="job-1", time="2026-11-21T09:00:00Z"))
    assert [j["id"] for j in server.client.get("/v1/jobs", params={"state": "ended"}).json()["jobs"]] == ["job-1"]


def test_events_find_their_job_from_host_rank_and_time(server: InProcessServer) -> None:
    server.client.post("/v1/jobs", json=JOB)
    server.client.post("/v1/jobs", json={**JOB, "id": "later", "start": "2026-11-29T10:00:00Z", "hosts": ["node0003"], "parallelism": {}})
    post_events(
        server,
        event(rank=12, message="[rank12] watchdog"),                       # node0003 is hosts[1]: ranks 8–15
        event(rank=12, time="2026-11-29T07:59:59Z"),                       # before the job started
        event(rank=2),                                                     # rank 2 runs on node0002, not here
        event(kind="gpu_xid", attrs={"xid": 79}, time="2026-11-29T09:00:01Z"),  # hardware: the host's job
        event(rank=5, time="2026-11-29T10:00:01Z"),                        # the later job on this host
        event(rank=12, job="given", time="2026-11-29T09:00:02Z"),          # a named job wins
    )
    found = sorted((e["time"][11:19], e["rank"], e["job"], e["component"]) for e in stored(server, host="node0003"))
    assert found == [
        ("07:59:59", 12, None, "node0003"),
        ("09:00:00", 2, None, "node0003"),
        ("09:00:00", 12, "llama-r7", "node0003/gpu4"),
        ("09:00:01", None, "llama-r7", "node0003"),
        ("09:00:02", 12, "given", "node0003"),
        ("10:00:01", 5, "later", "node0003/gpu5"),
    ]


def test_job_events_drive_the_state(db_url: str) -> None:
    server = serve_in_process(db_url)
    try:
        server.client.post("/v1/jobs", json=JOB)

        def state() -> tuple[str, str | None]:
            job = server.client.get("/v1/jobs/llama-r7").json()
            return job["state"], job["end"]

        post_events(server, event(kind="job_fail", job="llama-r7", attrs={"reason": "NCCL timeout"}))
        assert state() == ("failed", None)
        post_events(server, event(kind="job_restart", job="llama-r7", time="2026-11-29T09:10:00Z"))
        assert state() == ("running", None)
        post_events(server, event(kind="job_fail", job="llama-r7", time="2026-11-29T09:05:00Z"))  # late, older
        assert state() == ("running", None)
        post_events(server, event(kind="job_end", job="llama-r7", time="2026-11-29T12:00:00Z"))
        assert state() == ("ended", "2026-11-29T12:00:00.000000Z")
        post_events(server, event(rank=12, time="2026-11-29T12:00:01Z"))
        assert stored(server, since="2026-11-29T12:00:01Z")[0]["job"] is None
    finally:
        server.stop()
    server = serve_in_process(db_url)
    try:
        assert server.client.get("/v1/jobs/llama-r7").json()["state"] == "ended"
        post_events(server, event(rank=12, time="2026-11-29T11:00:00Z"))
        [found] = stored(server, since="2026-11-29T11:00:00Z", until="2026-11-29T11:00:01Z")
        assert found["job"] == "llama-r7" and found["component"] == "node0003/gpu4"
    finally:
        server.stop()


def test_footprint_on_request(server: InProcessServer) -> None:
    server.client.post("/v1/jobs", json=JOB)
    answer = server.client.get("/v1/jobs/llama-r7", params={"footprint": "true"})
    assert answer.status_code == 409 and "topology" in answer.json()["detail"]

    assert server.client.put("/v1/topology", content=orjson.dumps(rail_optimized(6, hosts_per_su=2))).status_code == 200
    footprint = server.client.get("/v1/jobs/llama-r7", params={"footprint": "true"}).json()["footprint"]
    by_type = footprint["by_type"]
    assert by_type["host"] == 4 and by_type["gpu"] == 32 and by_type["nic"] == 32
    assert by_type["switch"] > 8  # two units' leaves and the spines between them
    assert footprint["size"] == sum(by_type.values()) and footprint["topology_version"] == 1

    warned = server.client.post("/v1/jobs", json={**JOB, "id": "elsewhere", "hosts": ["node0001", "gpu-box-9"], "parallelism": {}})
    assert warned.status_code == 201 and "gpu-box-9" in warned.json()["warnings"][0]


small_ints = st.integers(-2, 9)
fuzzed_jobs = st.fixed_dictionaries(
    {"id": st.text(max_size=5) | st.integers()},
    optional={
        "start": st.sampled_from(["2026-11-29T08:00:00Z", "2026-11-29T08:00:00", 1.7e9, "x", None]),
        "gpus_per_host": small_ints | st.text(max_size=2),
        "hosts": st.lists(st.sampled_from(["node0000", "node0001", "", "a b", 3]), max_size=3),
        "ranks": st.lists(st.fixed_dictionaries({"rank": small_ints, "host": st.sampled_from(["node0000", "n1"]), "gpu": small_ints}), max_size=3),
        "parallelism": st.dictionaries(st.sampled_from(["tp", "pp", "dp", "cp", "ep", "order"]), small_ints | st.sampled_from(["tp-dp-pp", "pp-tp", 1.5]), max_size=3),
    },
)


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory) -> InProcessServer:
    server = serve_in_process(f"duckdb:///{tmp_path_factory.mktemp('fuzz') / 'faultgraph.duckdb'}")
    yield server
    server.stop()


@settings(max_examples=30, deadline=None)
@given(body=fuzzed_jobs)
def test_no_registration_gets_a_5xx(fuzz_server: InProcessServer, body: dict) -> None:
    answer = fuzz_server.client.post("/v1/jobs", json=body)
    assert answer.status_code in (200, 201, 422), answer.text
    if answer.status_code == 422:
        assert answer.json()["detail"]


def test_an_earlier_job_start_moves_the_start_back(server: InProcessServer) -> None:
    server.client.post("/v1/jobs", json={**JOB, "start": "2026-11-29T09:00:00Z"})
    post_events(
        server,
        event(kind="job_start", job="llama-r7", time="2026-11-29T08:30:00Z"),
        event(rank=12, time="2026-11-29T08:45:00Z"),
    )
    job = server.client.get("/v1/jobs/llama-r7").json()
    assert job["start"] == "2026-11-29T08:30:00.000000Z" and job["state"] == "running"
    [found] = stored(server, kind="nccl_timeout")
    assert found["job"] == "llama-r7"
