"""The host agent: its parts on real files, then the whole agent against a real server
through rotation, truncation, SIGKILL and an outage, counting every line once."""

import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import conftest
import httpx
import orjson
import pytest
import sqlalchemy as sa
from conftest import Server, free_port, start_server
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultgraph.ingest.agent.client import Backoff, Sender, retry_after
from faultgraph.ingest.agent.coalesce import Coalescer
from faultgraph.ingest.agent.kmsg import JournalReader, KmsgReader, boot_id
from faultgraph.ingest.agent.run import Agent, AgentConfig, load_config
from faultgraph.ingest.agent.spool import Spool
from faultgraph.ingest.agent.tail import FileSources, FileTail
from faultgraph.service import store
from faultgraph.service.events.models import hosts_seen

T0 = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)


def xid_line(i: int, host: str = "node0001", xid: int = 79) -> str:
    """A distinct matching line per i: its own second and its own PCI address."""
    when = (T0 + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")
    return f"{when} {host} kernel: NVRM: Xid (PCI:0000:{i >> 8:02x}:{i & 255:02x}): {xid}, pid=1, GPU has fallen off the bus.\n"


def texts(lines) -> list[str]:
    return [line.text for line in lines]


def read_all(tail: FileTail) -> list:
    out = []
    while True:
        lines, at_end = tail.read(1 << 16)
        out += lines
        if at_end and not lines:
            return out


# -- tail ------------------------------------------------------------------------------


def test_tail_holds_partial_lines_and_resumes_from_saved_state(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_text("one\ntw")
    tail = FileTail(str(path), None, from_start=True)
    lines = read_all(tail)
    assert texts(lines) == ["one"]
    with path.open("a") as f:
        f.write("o\nthree\n")
    lines = read_all(tail)
    assert texts(lines) == ["two", "three"]
    saved = lines[0].resume  # as if the agent stopped after "two"
    again = FileTail(str(path), saved, from_start=False)
    resumed = read_all(again)
    assert texts(resumed) == ["three"]
    assert (resumed[0].stream, resumed[0].pos) == (lines[1].stream, lines[1].pos)


def test_tail_starts_at_end_unless_told(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_text("old\n")
    tail = FileTail(str(path), None, from_start=False)
    assert read_all(tail) == []
    with path.open("a") as f:
        f.write("new\n")
    assert texts(read_all(tail)) == ["new"]


def test_tail_follows_rotation_and_finishes_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("faultgraph.ingest.agent.tail.ROTATION_GRACE_S", 0.0)
    path = tmp_path / "a.log"
    writer = path.open("a", buffering=1)
    writer.write("1\n")
    tail = FileTail(str(path), None, from_start=True)
    assert texts(read_all(tail)) == ["1"]
    path.rename(tmp_path / "a.log.1")
    writer.write("2\n3")  # the writer still holds the old file; its last line has no newline
    writer.close()
    with path.open("w") as f:
        f.write("4\n")
    lines = read_all(tail)
    assert texts(lines) == ["2", "3", "4"]
    assert lines[0].stream != lines[2].stream  # another inode, another stream


def test_tail_restarts_a_truncated_file_under_a_new_identity(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_text("first line\nsecond line\n")
    tail = FileTail(str(path), None, from_start=True)
    before = read_all(tail)
    shutil.copy(path, tmp_path / "a.log.1")
    with path.open("r+") as f:
        f.truncate(0)
    assert read_all(tail) == []  # this pass notices the truncation
    with path.open("a") as f:
        f.write("first line\n")
    after = read_all(tail)
    assert texts(after) == ["first line"]
    assert after[0].pos == before[0].pos and after[0].stream != before[0].stream


def test_tail_finds_a_file_rotated_while_the_agent_was_down(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_text("1\n2\n")
    tail = FileTail(str(path), None, from_start=True)
    saved = read_all(tail)[0].resume  # stopped after "1"
    tail.close()
    path.rename(tmp_path / "a.log.1")
    path.write_text("3\n")
    resumed = FileTail(str(path), saved, from_start=False)
    time.sleep(1.1)  # the rotation grace period
    assert texts(read_all(resumed) + read_all(resumed)) == ["2", "3"]


def test_file_sources_pick_up_new_files_from_their_start(tmp_path: Path) -> None:
    (tmp_path / "old.log").write_text("before\n")
    sources = FileSources([str(tmp_path / "*.log")], {}, read_from="end", rescan_s=0.0)
    assert [line for tail in sources.refresh() for line in read_all(tail)] == []
    (tmp_path / "new.log").write_text("hello\n")
    assert [line.text for tail in sources.refresh() for line in read_all(tail)] == ["hello"]


# -- kernel log ---------------------------------------------------------------------------


def test_kmsg_records_skip_continuations_and_resume_after_saved_seq(tmp_path: Path) -> None:
    fake = tmp_path / "kmsg"
    fake.write_bytes(b"6,10,1000,-;first\n SUBSYSTEM=pci\n3,11,2000,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n")
    reader = KmsgReader(None, from_start=True, path=str(fake))
    lines, at_end = reader.read(1 << 16)
    assert at_end and [line.pos for line in lines] == ["10", "11"]
    assert lines[1].stream == f"kmsg:{boot_id()}" and lines[1].boot_time is not None
    again = KmsgReader(lines[0].resume, from_start=True, path=str(fake))
    assert [line.pos for line in again.read(1 << 16)[0]] == ["11"]


def test_journal_reader_resumes_after_its_cursor(tmp_path: Path) -> None:
    fake = tmp_path / "journalctl"
    records = [{"__CURSOR": f"s=1;i={i}", "__REALTIME_TIMESTAMP": str(1_795_000_000_000_000 + i), "MESSAGE": f"line {i}"}
               for i in range(3)]
    (tmp_path / "out").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    fake.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/args\ncat {tmp_path}/out\nexec sleep 30\n')
    fake.chmod(0o755)
    reader = JournalReader(None, from_start=False, command=(str(fake),))
    lines: list = []
    deadline = time.monotonic() + 10
    while len(lines) < 3 and time.monotonic() < deadline:
        lines += reader.read(1 << 16)[0]
        time.sleep(0.05)
    reader.close()
    assert texts(lines) == ["line 0", "line 1", "line 2"]
    assert lines[0].time == datetime.fromtimestamp(1_795_000_000, UTC)
    again = JournalReader(lines[1].resume, from_start=False, command=(str(fake),))
    while len((tmp_path / "args").read_text().splitlines()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    again.close()
    args = (tmp_path / "args").read_text().splitlines()
    assert "-n 0" in args[0] and "--after-cursor s=1;i=1" in args[1]


# -- coalescing ------------------------------------------------------------------------


def event(i: int, *, seconds: float = 0.0, pci: str = "0000:3b:00", count: int | None = None) -> dict:
    attrs = {"xid": 79, "pci": pci, "pid": i}
    if count is not None:
        attrs["count"] = count
    return {"time": T0 + timedelta(seconds=seconds), "host": "node0001", "kind": "gpu_xid", "attrs": attrs, "id": f"e{i}"}


def test_a_storm_within_the_window_becomes_one_event_with_a_count() -> None:
    coalescer = Coalescer(window_s=1.0)
    out = []
    for i in range(10_000):
        out += coalescer.add(event(i, seconds=i / 10_001), now=0.0)
    assert out == [] and len(coalescer) == 1
    (storm,) = coalescer.drain()
    assert storm["id"] == "e0" and storm["attrs"]["count"] == 10_000


def test_coalescing_keeps_distinct_lines_and_windows_apart() -> None:
    coalescer = Coalescer(window_s=1.0)
    assert coalescer.add(event(0), now=0.0) == []
    assert coalescer.add(event(1, pci="0000:3c:00"), now=0.0) == []  # another GPU: its own event
    closed = coalescer.add(event(2, seconds=1.5), now=0.0)  # past the window: the first closes
    assert [e["id"] for e in closed] == ["e0"] and "count" not in closed[0]["attrs"]
    assert {e["id"] for e in coalescer.expire(now=1.0)} == {"e1", "e2"}


def test_coalesced_counts_add_up_the_lines_own_counts() -> None:
    coalescer = Coalescer(window_s=1.0)
    for i in range(3):
        coalescer.add(event(i, count=5), now=0.0)
    assert coalescer.drain()[0]["attrs"]["count"] == 15


# -- spool and sender ------------------------------------------------------------------


def test_spool_keeps_events_and_positions_across_reopen(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "s.sqlite", max_events=3)
    spool.commit([{"n": 1}, {"n": 2}], {"file:a": "p1"})
    spool.commit([{"n": 3}], {"file:a": "p2"})
    assert spool.full
    spool.close()
    spool = Spool(tmp_path / "s.sqlite", max_events=3)
    assert spool.positions() == {"file:a": "p2"} and len(spool) == 3
    batch = spool.peek(2)
    assert [orjson.loads(e)["n"] for _, e in batch] == [1, 2]
    spool.remove_through(batch[-1][0])
    assert [orjson.loads(e)["n"] for _, e in spool.peek(10)] == [3]


def sender_with(tmp_path: Path, handler) -> tuple[Sender, Spool]:
    spool = Spool(tmp_path / "s.sqlite", max_events=100)
    spool.commit([{"n": i} for i in range(4)], {})
    sender = Sender(url="http://faultgraph", token="tok", spool=spool, dead_letter=tmp_path / "dead.ndjson",
                    batch_size=4, transport=httpx.MockTransport(handler))
    return sender, spool


def test_sender_honours_retry_after_and_keeps_the_batch(tmp_path: Path) -> None:
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(429, headers={"retry-after": "7"})

    sender, spool = sender_with(tmp_path, handler)
    assert sender.send_once() == 7.0 and len(spool) == 4
    assert seen[0].headers["authorization"] == "Bearer tok" and seen[0].url.path == "/v1/events"
    assert [e["n"] for e in orjson.loads(seen[0].content)["events"]] == [0, 1, 2, 3]


def test_sender_backs_off_on_outage_and_config_errors(tmp_path: Path) -> None:
    sender, spool = sender_with(tmp_path, lambda request: httpx.Response(401, text="bad token"))
    waits = [sender.send_once() for _ in range(4)]
    assert len(spool) == 4 and waits == sorted(waits) and waits[-1] > waits[0]

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    sender, spool = sender_with(tmp_path / "x" if (tmp_path / "x").mkdir() is None else tmp_path, refuse)
    assert sender.send_once() > 0 and len(spool) == 4


def test_sender_dead_letters_refused_batches_and_rejected_events(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if len(orjson.loads(request.content)["events"]) == 4:
            return httpx.Response(413)
        return httpx.Response(200, json={"accepted": 1, "duplicates": 0, "rejected": [{"index": 1, "error": "kind: unknown"}]})

    sender, spool = sender_with(tmp_path, handler)
    assert sender.send_once() == 0.0 and len(spool) == 4  # halves the batch
    sender.send_once()
    assert len(spool) == 2
    dead = [orjson.loads(line) for line in (tmp_path / "dead.ndjson").read_bytes().splitlines()]
    assert dead == [{"error": "kind: unknown", "event": {"n": 1}}]
    sender, spool = sender_with(tmp_path / "y" if (tmp_path / "y").mkdir() is None else tmp_path,
                                lambda request: httpx.Response(400, json={"detail": "body is not valid JSON"}))
    sender.send_once()
    assert len(spool) == 0 and "not valid JSON" in (tmp_path / "y" / "dead.ndjson").read_text()


def test_heartbeat_when_due_and_not_through_the_spool(tmp_path: Path) -> None:
    posted = []

    def handler(request: httpx.Request) -> httpx.Response:
        posted.append(orjson.loads(request.content)["events"])
        return httpx.Response(200, json={"accepted": 1, "duplicates": 0, "rejected": []})

    spool = Spool(tmp_path / "s.sqlite", max_events=10)
    sender = Sender(url="http://faultgraph", token=None, spool=spool, dead_letter=tmp_path / "dead.ndjson",
                    host="node0001", heartbeat_s=60, transport=httpx.MockTransport(handler))
    sender.heartbeat()
    sender.heartbeat()  # not due again yet
    assert len(posted) == 1 and len(spool) == 0
    (beat,) = posted[0]
    assert (beat["host"], beat["kind"], beat["attrs"]["state"]) == ("node0001", "host_heartbeat", "ok")


def test_retry_after_forms_and_backoff_growth() -> None:
    assert retry_after("3") == 3.0 and retry_after(None) is None and retry_after("soon") is None
    later = (datetime.now(UTC) + timedelta(seconds=60)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert 50 < retry_after(later) <= 60
    backoff = Backoff(base_s=1, cap_s=8)
    waits = [backoff.next() for _ in range(6)]
    assert all(0.5 <= w <= 1 for w in waits[:1]) and all(4 <= w <= 8 for w in waits[3:])
    assert all(4 <= backoff.next() <= 8 for _ in range(5000))  # a week-long outage stays capped
    assert retry_after("86400") == 600.0


def test_config_file_and_flags(tmp_path: Path) -> None:
    config = tmp_path / "agent.toml"
    config.write_text('url = "http://a:8080"\nfiles = ["/var/log/syslog"]\nkmsg = true\nbatch_size = 100\n')
    settings = load_config(config, url="http://b:8080", files=None)
    assert (settings.url, settings.files, settings.kmsg, settings.batch_size) == ("http://b:8080", ["/var/log/syslog"], True, 100)
    config.write_text('url = "http://a"\nfile = ["x"]\n')
    with pytest.raises(ValueError, match="unknown settings file"):
        load_config(config)
    with pytest.raises(ValueError, match="nothing to follow"):
        load_config(None, url="http://a")


def test_a_garbled_line_is_skipped_not_fatal(tmp_path: Path) -> None:
    log = tmp_path / "k.log"
    log.write_text("NVRM: Xid (PCI:0000:3b:00): " + "9" * 40 + ", GPU has fallen off the bus.\n" + xid_line(1))
    agent = Agent(AgentConfig(url="http://127.0.0.1:9", files=[str(log)], state_dir=tmp_path / "state",
                              read_from="beginning"))
    agent.step()
    agent.flush()
    assert [orjson.loads(e)["attrs"]["pci"] for _, e in agent.spool.peek(10)] == [pci(1)]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chunks=st.lists(st.binary(max_size=300) | st.sampled_from([xid_line(7).encode(), b"\n", b"\r\n"]), max_size=12))
def test_any_bytes_in_a_followed_file_never_stop_the_agent(tmp_path: Path, chunks: list[bytes]) -> None:
    work = Path(tempfile.mkdtemp(dir=tmp_path))
    log = work / "k.log"
    log.touch()
    agent = Agent(AgentConfig(url="http://127.0.0.1:9", files=[str(log)], state_dir=work / "state",
                              read_from="beginning"))
    for chunk in chunks:
        with log.open("ab") as f:
            f.write(chunk)
        agent.step()
    agent.flush()
    assert all(orjson.loads(e)["kind"] for _, e in agent.spool.peek(1000))
    agent.close()


# -- restart in the middle of storms, in process ----------------------------------------


def test_restart_mid_storm_rebuilds_the_same_events(tmp_path: Path) -> None:
    """Positions are saved only at quiet points, so a crash (no flush) and re-read gives
    events with the ids already queued: nothing missing, and a resend only repeats an id."""
    log = tmp_path / "k.log"

    def storm(second: int) -> str:
        """50 lines in one second from two GPUs taking turns, with noise between."""
        when = (T0 + timedelta(seconds=second)).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")
        return "".join(f"{when} node0001 kernel: NVRM: Xid (PCI:0000:00:{second * 2 + r % 2:02x}): 48, pid={r}, DBE\nnoise\n"
                       for r in range(50))

    config = AgentConfig(url="http://127.0.0.1:9", files=[str(log)], state_dir=tmp_path / "state",
                         read_from="beginning", read_chunk_bytes=4096, checkpoint_interval_s=0.0)
    log.write_text(storm(0) + storm(1))
    first = Agent(config)
    for _ in range(20):
        first.step()
    time.sleep(1.1)
    first.step()  # the storms' window has passed: groups close, a quiet point is saved
    quiet = dict(first.committed)
    with log.open("a") as f:
        f.write(storm(2) + storm(3) + storm(4)[:3000])
    for _ in range(20):
        first.step()
    first.close()  # crash: the open groups are lost, the position stays at the quiet point
    with log.open("a") as f:
        f.write(storm(4)[3000:] + storm(5))
    second = Agent(config)
    assert second.committed == quiet and quiet
    for _ in range(20):
        second.step()
    second.flush()
    queued = [orjson.loads(e) for _, e in second.spool.peek(10_000)]
    by_id: dict[str, list[dict]] = {}
    for e in queued:
        by_id.setdefault(e["id"], []).append(e)
    assert {(e["time"], e["attrs"]["pci"]) for e in queued} == {
        ((T0 + timedelta(seconds=s)).isoformat(), f"0000:00:{s * 2 + r:02x}") for s in range(6) for r in range(2)}
    assert len(by_id) == 12
    for copies in by_id.values():
        assert {c["attrs"]["count"] for c in copies} == {25}
    before_quiet = {e["id"] for e in queued if e["time"] < (T0 + timedelta(seconds=2)).isoformat()}
    assert all(len(by_id[i]) == 1 for i in before_quiet)  # nothing before the quiet point is resent


# -- the whole agent against a real server ------------------------------------------------


def start_agent(url: str, log: Path, state: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "faultgraph.service.cli", "agent", "--url", url, "--file", str(log), "--state-dir", str(state),
         "--host", "node0001", "--read-from", "beginning"],
        stdout=subprocess.DEVNULL, stderr=(state.parent / "agent.log").open("ab"))


def stored_pcis(server: Server) -> list[str]:
    response = server.client.get("/v1/events", params={"host": "node0001", "kind": "gpu_xid", "limit": 10_000})
    assert response.status_code == 200, response.text
    return [e["attrs"]["pci"] for e in response.json()["events"]]


def pci(i: int) -> str:
    return f"0000:{i >> 8:02x}:{i & 255:02x}"


def wait_for(server: Server, count: int, timeout: float = 60) -> list[str]:
    """The stored PCIs once `count` have arrived, or what has by `timeout` (a deadline for a
    loaded machine, not a speed check: the agent restarts import the whole CLI)."""
    deadline = time.monotonic() + timeout
    while True:
        found = stored_pcis(server)
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def append(log: Path, lines: range) -> None:
    with log.open("a") as f:
        for i in lines:
            f.write(xid_line(i) + "an ordinary line between\n")


@pytest.mark.slow
def test_every_line_arrives_once_through_rotation_truncation_kill_and_outage(
        tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    monkeypatch.setattr(conftest, "free_port", lambda: port)  # restarts come back on the same address
    server = start_server(db_url)
    log, state = tmp_path / "train.log", tmp_path / "state"
    log.touch()
    agent = start_agent(server.url, log, state)
    try:
        append(log, range(0, 100))
        assert len(wait_for(server, 100)) == 100

        # rotation: the writer keeps appending to the renamed file a moment, then a new file
        writer = log.open("a")
        log.rename(tmp_path / "train.log.1")
        writer.write("".join(xid_line(i) for i in range(100, 120)))
        writer.close()
        append(log, range(120, 200))
        assert len(wait_for(server, 200)) == 200

        # copytruncate: copied away, emptied in place, written again (shorter than before)
        shutil.copy(log, tmp_path / "train.log.2")
        with log.open("r+") as f:
            f.truncate(0)
        append(log, range(200, 240))
        assert len(wait_for(server, 240)) == 240

        # SIGKILL mid-stream while a writer keeps going, then a restart
        feeder = threading.Thread(target=lambda: [append(log, range(i, i + 10)) or time.sleep(0.02)
                                                  for i in range(240, 540, 10)])
        feeder.start()
        time.sleep(0.3)
        agent.send_signal(signal.SIGKILL)
        agent.wait()
        feeder.join()
        agent = start_agent(server.url, log, state)
        assert len(wait_for(server, 540)) == 540

        # the service goes away for a while; the agent spools and resends when it is back
        server.stop()
        append(log, range(540, 700))
        time.sleep(2)
        server = start_server(db_url)
        found = wait_for(server, 700, timeout=90)
        stored_beats = server.client.get("/v1/events", params={"host": "node0001", "kind": "host_heartbeat"}).json()
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.wait(timeout=20)
        server.stop()
    assert sorted(found) == sorted(pci(i) for i in range(700)), (tmp_path / "agent.log").read_text()[-3000:]
    assert agent.returncode == 0
    # the agent's heartbeats are host state, not rows: none stored, the host's last beat kept
    assert stored_beats["events"] == []
    engine = store.make_engine(db_url)
    try:
        with engine.connect() as conn:
            seen = conn.execute(sa.select(hosts_seen.c.host, hosts_seen.c.last_seen)).all()
    finally:
        engine.dispose()
    assert [host for host, _ in seen] == ["node0001"]
    spool = Spool(state / "spool.sqlite", max_events=1)
    assert len(spool) == 0
    assert not (state / "dead-letter.ndjson").exists()
