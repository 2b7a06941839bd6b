"""`POST /v1/logs` over HTTP: raw lines parsed by the agent's rules, stored once.

One server for the module (the app in this process, a real DuckDB file); each test posts for its own host and reads back only that host.
"""

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from conftest import InProcessServer, serve_in_process


def xid(host: str) -> str:
    return f"2026-11-29T08:00:00.123456+00:00 {host} kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."


def aer(host: str) -> str:
    return f"Nov 29 08:00:01 {host} kernel: pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:3b:00.0"


def nccl_warn(host: str) -> str:
    return (f"{host}:1234:5678 [3] NCCL WARN NET/IB : Got completion from peer 10.0.35.1<52646> with status=12 opcode=0 "
            "len=0 vendor err 129 (Recv) localGid ::ffff:10.0.35.2 remoteGids::ffff:10.0.35.1")


WATCHDOG = ("[rank115]:[E1129 08:00:02.000000 1234 ProcessGroupNCCL.cpp:616] [Rank 115] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.")
NOISE = ["Nov 29 08:00:00 node0042 systemd[1]: Started Session 4 of user root.", "", "hello world"]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    db: Path = tmp_path_factory.mktemp("logs") / "faultgraph.duckdb"
    server: InProcessServer = serve_in_process(f"duckdb:///{db}")
    yield server.client
    server.stop()


def events_of(client: httpx.Client, host: str, **params) -> list[dict]:
    response = client.get("/v1/events", params={"limit": 10_000, "host": host, **params})
    assert response.status_code == 200, response.text
    return response.json()["events"]


def test_json_body_counts_lines_and_stores_matches(client: httpx.Client) -> None:
    host = "json01"
    body = {"host": host, "source": "kmsg", "lines": [xid(host), *NOISE, aer("json01b"), nccl_warn(host)]}
    response = client.post("/v1/logs", json=body)
    assert response.status_code == 200, response.text
    assert response.json() == {"lines": 6, "parsed": 3, "unmatched": 3, "accepted": 3, "duplicates": 0, "rejected": []}
    stored = {e["kind"]: e for e in events_of(client, host)}
    assert set(stored) == {"gpu_xid", "nccl_error"}
    assert stored["gpu_xid"]["time"] == "2026-11-29T08:00:00.123456Z"
    assert stored["gpu_xid"]["attrs"]["xid"] == 79 and stored["gpu_xid"]["attrs"]["source"] == "kmsg"
    # the syslog header's host wins over the body's
    assert [e["kind"] for e in events_of(client, "json01b")] == ["pcie_aer"]


def test_retried_post_is_stored_once(client: httpx.Client) -> None:
    host = "retry01"
    body = {"host": host, "source": "kmsg", "lines": [xid(host), aer(host)]}
    first = client.post("/v1/logs", json=body).json()
    again = client.post("/v1/logs", json=body).json()
    assert (first["accepted"], first["duplicates"]) == (2, 0)
    assert (again["accepted"], again["duplicates"]) == (0, 2)
    assert len(events_of(client, host)) == 2


def test_identical_lines_in_one_post_are_distinct_events(client: httpx.Client) -> None:
    host = "same01"
    body = {"host": host, "source": "kmsg", "lines": [xid(host)] * 3}
    assert client.post("/v1/logs", json=body).json()["accepted"] == 3
    assert client.post("/v1/logs", json=body).json()["duplicates"] == 3
    assert len(events_of(client, host)) == 3


def test_named_batch_makes_untimestamped_lines_idempotent(client: httpx.Client) -> None:
    host = "batch01"
    body = {"host": host, "source": "train", "batch": f"{host}-train-17", "lines": [nccl_warn(host)]}
    assert client.post("/v1/logs", json=body).json()["accepted"] == 1
    assert client.post("/v1/logs", json=body).json()["duplicates"] == 1
    # without a batch name an untimestamped line takes the receive time: a later post is a new occurrence
    assert client.post("/v1/logs", json={**body, "batch": None}).json()["accepted"] == 1


def test_text_body_with_query_parameters(client: httpx.Client) -> None:
    host = "text01"
    text = "\n".join([xid(host), "noise", WATCHDOG]) + "\n"
    response = client.post("/v1/logs", params={"host": host, "source": "train", "job": "llama-405b-r7"},
                           content=text, headers={"content-type": "text/plain"})
    assert response.status_code == 200, response.text
    assert response.json()["lines"] == 3 and response.json()["accepted"] == 2
    stored = {e["kind"]: e for e in events_of(client, host, job="llama-405b-r7")}
    assert set(stored) == {"gpu_xid", "nccl_timeout"}
    assert stored["nccl_timeout"]["rank"] == 115
    # glog gives no year: the year of receipt (the one before, for a stamp more than a day ahead)
    received = datetime.now(UTC)
    year = received.year if datetime(received.year, 11, 29, 8, 0, 2, tzinfo=UTC) - received <= timedelta(days=1) \
        else received.year - 1
    assert stored["nccl_timeout"]["time"] == f"{year}-11-29T08:00:02.000000Z"


def test_text_lines_split_at_newlines_only(client: httpx.Client) -> None:
    host = "split01"
    text = "noise\fwith a form feed\u2028and a line separator\r\n" + xid(host) + "\r\n"
    response = client.post(f"/v1/logs?host={host}", content=text.encode(), headers={"content-type": "text/plain"})
    assert response.json()["lines"] == 2 and response.json()["accepted"] == 1


def test_bad_bodies_are_4xx_naming_the_problem(client: httpx.Client) -> None:
    cases = [
        (b"", "application/json"),
        (b"{not json", "application/json"),
        (b'{"host": "node0042"}', "application/json"),
        (b'{"host": "node0042", "lines": "one line"}', "application/json"),
        (b'{"host": "no spaces allowed", "lines": []}', "application/json"),
        (b"[1, 2, 3]", "application/json"),
    ]
    for body, content_type in cases:
        response = client.post("/v1/logs", content=body, headers={"content-type": content_type})
        assert 400 <= response.status_code < 500, (body, response.status_code, response.text)
        assert response.json()["detail"], body
    response = client.post("/v1/logs", content=xid("bad01"), headers={"content-type": "text/plain"})
    assert response.status_code == 422 and "host" in response.json()["detail"]


def test_a_line_that_cannot_be_read_is_refused_alone(client: httpx.Client) -> None:
    """An overlong line, or one that is not a string, is a rejection naming its index; the
    good lines beside it are stored (one such line refused the whole post, and a text body's
    overlong line was blamed on a query parameter)."""
    host = "long01"
    text = "\n".join([xid(host), "x" * 70_000, xid(host).replace("79", "48")]).encode()
    answer = client.post(f"/v1/logs?host={host}&source=kmsg", content=text, headers={"content-type": "text/plain"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["lines"], body["parsed"], body["accepted"], body["unmatched"]) == (3, 2, 2, 0)
    assert [(r["index"], r["error"]) for r in body["rejected"]] == [(1, "line 2: String should have at most 65536 characters")]
    assert len(events_of(client, host)) == 2
    answer = client.post("/v1/logs", json={"host": "long02", "lines": [None, xid("long02"), 7]})
    assert answer.status_code == 200 and answer.json()["accepted"] == 1
    assert [r["index"] for r in answer.json()["rejected"]] == [0, 2]
    for odd in (b"1e400", b"NaN", b"123456789012345678901234567890"):  # numbers orjson would not read back
        answer = client.post("/v1/logs", content=b'{"host": "long04", "lines": [' + odd + b", " + json.dumps(xid("long04")).encode() + b"]}",
                             headers={"content-type": "application/json"})
        assert answer.status_code == 200 and [r["index"] for r in answer.json()["rejected"]] == [0], answer.text
    answer = client.post("/v1/logs", json={"host": "long03", "lines": [1, 2]})  # nothing readable: 422, each named
    assert answer.status_code == 422 and [r["index"] for r in answer.json()["rejected"]] == [0, 1]


def test_undecodable_bytes_and_odd_lines_never_fail(client: httpx.Client) -> None:
    host = "odd01"
    text = (b"\xff\xfe\x00garbage\n" + xid(host).encode() + b"\n\x00\x01\x02\n"
            + b"NVRM: Xid (PCI:0000:3b:00): " + b"9" * 400 + b"\n")
    response = client.post(f"/v1/logs?host={host}&source=kmsg", content=text, headers={"content-type": "text/plain"})
    assert response.status_code == 200, response.text
    assert response.json()["accepted"] == 1
    assert [r["index"] for r in response.json()["rejected"]] == [3]  # the Xid number past 64 bits


def test_rejected_event_names_its_line(client: httpx.Client) -> None:
    # A syslog header host the envelope refuses (too long) rejects that line only.
    bad_host = aer("n" * 300)
    response = client.post("/v1/logs", json={"host": "reject01", "lines": ["noise", bad_host, xid("reject01")]})
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["accepted"] == 1
    assert [r["index"] for r in result["rejected"]] == [1]


def _record(name: str) -> list[str]:
    import json

    records = json.loads((Path(__file__).parent / "data" / "records.json").read_text())
    return next(r for r in records if r["name"] == name)["lines"]


def test_multi_line_records_become_one_event_each(client: httpx.Client) -> None:
    """Real kernel reports posted as they sit in a log (node-problem-detector's hung-task
    and divide-error fixtures, tests/data/records.json): one event per report with its call
    trace, nothing from the frames; a retry of the same text is stored once."""
    host = "records01"
    lines = _record("npd-docker_hung") + NOISE + _record("npd-divide_zero")
    body = {"host": host, "source": "kmsg", "batch": "b-1", "lines": lines}
    response = client.post("/v1/logs", json=body)
    assert response.status_code == 200, response.text
    result = response.json()
    assert (result["lines"], result["parsed"], result["accepted"]) == (len(lines), 2, 2)
    assert result["unmatched"] == len(NOISE)  # the reports' own lines are neither
    stored = sorted(events_of(client, host), key=lambda e: e["attrs"]["event"])
    assert [e["attrs"]["event"] for e in stored] == ["hung_task", "oops"]
    assert "copy_net_ns+0x6c/0x130" in stored[0]["attrs"]["call_trace"]
    assert stored[1]["attrs"]["record_lines"] == len(_record("npd-divide_zero"))
    again = client.post("/v1/logs", json=body).json()
    assert (again["accepted"], again["duplicates"]) == (0, 2)


def test_traceback_posted_as_text_keeps_rank_and_frames(client: httpx.Client) -> None:
    host = "records02"
    text = "\n".join(_record("megatron-nan-traceback")) + "\n"
    response = client.post("/v1/logs", params={"host": host, "source": "stdout"}, content=text.encode(),
                           headers={"content-type": "text/plain"})
    assert response.status_code == 200, response.text
    (event,) = events_of(client, host)
    assert event["kind"] == "train_anomaly" and event["rank"] == 3
    assert event["attrs"]["exception"] == "AssertionError" and len(event["attrs"]["frames"]) == 1
