"""POST /v1/flight-recorder: the first collective the ranks disagree on, the ranks that never
entered it, and that evidence in the engine's incident."""

from datetime import UTC, datetime, timedelta

from faultgraph.attribution.flight_recorder import first_mismatches

T0 = datetime(2026, 11, 29, 8, tzinfo=UTC)
HOSTS = ["node0000", "node0001"]


def entry(record: int, seq: int, state: str, op: str = "all_reduce", sizes=((4096, 4096),)) -> dict:
    """One record as the flight recorder's JSON dump holds it (torch/distributed/flight_recorder)."""
    return {"record_id": record, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": seq,
            "p2p_seq_id": 0, "op_id": seq, "profiling_name": f"nccl:{op}", "is_p2p": False,
            "time_created_ns": int((T0 + timedelta(seconds=10 * seq)).timestamp() * 1e9),
            "input_sizes": [list(s) for s in sizes], "input_dtypes": ["Float"], "output_sizes": [list(s) for s in sizes],
            "output_dtypes": ["Float"], "state": state, "time_discovered_started_ns": None,
            "time_discovered_completed_ns": None, "retired": state == "completed", "timeout_ms": 600000, "frames": []}


def dumps(world: int = 16, stuck: int = 11, last: int = 6, buffer: int = 4) -> list[dict]:
    """Every rank completed all_reduce 1..last-1 and started `last`, except `stuck`, which never
    entered it; each ring buffer holds its last `buffer` records."""
    out = []
    for rank in range(world):
        top = last - 1 if rank == stuck else last
        entries = [entry(s, s, "completed" if s < last else "started") for s in range(1, top + 1)][-buffer:]
        out.append({"version": "2.8", "rank": rank, "entries": entries,
                    "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(world)))}}})
    return out


def test_the_rank_that_never_entered_is_found():
    [mismatch] = first_mismatches(dumps())
    assert (mismatch.seq, mismatch.op, mismatch.reason, mismatch.missing) == (6, "nccl:all_reduce", "never_entered", [11])
    assert len(mismatch.entered) == 15


def test_a_rank_that_entered_another_collective_is_named():
    odd = dumps(stuck=99)
    odd[5]["entries"][-1] = entry(6, 6, "started", op="all_gather")
    [mismatch] = first_mismatches(odd)
    assert mismatch.reason == "op_mismatch" and mismatch.odd == {5: "nccl:all_gather"} and mismatch.missing == []


def test_agreeing_ranks_give_nothing():
    assert first_mismatches(dumps(stuck=99)) == []


def test_flight_recorder_evidence_decides_the_incident(server):
    client = server.client
    job = {"id": "fr-job", "start": T0.isoformat(), "gpus_per_host": 8, "hosts": HOSTS, "parallelism": {"tp": 8, "dp": 2}}
    assert client.post("/v1/jobs", json=job).status_code < 300
    # Every rank times out (rank 11 in a collective of its own); no line says which sequence
    # number it was at, so neither silence nor sequence lag can tell rank 11 apart.
    hang = T0 + timedelta(seconds=60)
    timeouts = [{"time": (hang + timedelta(minutes=10, milliseconds=rank)).isoformat(), "host": HOSTS[rank // 8],
                 "kind": "nccl_timeout", "job": "fr-job", "rank": rank,
                 "attrs": {"rank": rank, "op": "ALLREDUCE", "timeout_ms": 600000, "elapsed_ms": 600000}}
                for rank in range(16)]
    assert client.post("/v1/events", json=timeouts).json()["accepted"] == 16
    client.post("/v1/analyze")
    [before] = client.get("/v1/incidents", params={"job": "fr-job"}).json()["incidents"]
    assert before["root_cause"]["component"] != "node0001/gpu3"
    answer = client.post("/v1/flight-recorder", json={"job": "fr-job", "dumps": dumps()})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["events"] == 1 and body["mismatches"][0]["missing_ranks"] == [11]
    again = client.post("/v1/flight-recorder", json={"job": "fr-job", "dumps": dumps()})
    assert again.status_code == 200
    client.post("/v1/analyze")
    [incident] = client.get("/v1/incidents", params={"job": "fr-job"}).json()["incidents"]
    assert incident["id"] == before["id"] and incident["root_cause"]["component"] == "node0001/gpu3"  # rank 11
    timeline = client.get(f"/v1/incidents/{incident['id']}/timeline").json()
    kinds = [e["kind"] for e in (timeline["events"] if isinstance(timeline, dict) else timeline)]
    assert kinds.count("flight_recorder") == 1  # kept with the incident, stored once


def test_bad_dumps_are_refused_with_the_reason(server):
    bad = dumps()
    del bad[3]["pg_config"]
    answer = server.client.post("/v1/flight-recorder", json={"job": "x", "host": "node0000", "dumps": bad})
    assert answer.status_code == 422 and "dumps[3]: pg_config" in answer.json()["detail"]
    assert server.client.post("/v1/flight-recorder", json={"job": "x", "dumps": []}).status_code == 422
    unregistered = server.client.post("/v1/flight-recorder", json={"job": "nobody", "dumps": dumps()})
    assert unregistered.status_code == 422 and "not registered" in unregistered.json()["detail"]
