"""Multi-line records: real kernel reports, hardware-error blocks and tracebacks (verbatim,
`tests/data/records.json`, each with its source) grouped into one event each; launcher
prefixes; the bounds on a record's lines and wall time."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faultgraph.ingest.prefixes import strip_prefix
from faultgraph.ingest.records import RecordGrouper, group_lines

RECORDS = json.loads((Path(__file__).parent / "data" / "records.json").read_text())
RECEIVED = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)


def _events(lines: list[str], **kwargs: Any) -> tuple[list[dict[str, Any]], list[Any]]:
    records = list(group_lines(lines, host="node0042", received=RECEIVED, **kwargs))
    records.sort(key=lambda r: r.tags[0])
    return [r.event for r in records if r.event is not None], records


@pytest.mark.parametrize("fixture", RECORDS, ids=lambda f: f["name"])
def test_real_records_give_one_event_each(fixture: dict[str, Any]) -> None:
    events, records = _events(fixture["lines"])
    # every line lands in exactly one record
    assert sorted(t for r in records for t in r.tags) == list(range(len(fixture["lines"])))
    assert len(events) == len(fixture["expect"]), [(e["kind"], e["attrs"].get("rule")) for e in events]
    for event, want in zip(events, fixture["expect"], strict=True):
        assert event["kind"] == want["kind"]
        attrs = event["attrs"]
        for name, value in want.items():
            if name in ("kind", "rank", "severity"):
                assert event.get(name) == value if name != "kind" else True, (name, event)
            elif name.endswith("_min"):
                field = name[:-4]
                assert len(attrs.get(field, [])) >= value, (field, attrs)
            elif name == "pci":
                assert attrs["pci"] == value
            else:
                assert attrs.get(name) == value, (name, attrs)


def test_kernel_report_keeps_its_call_trace_and_frames_give_no_events() -> None:
    npd = next(f for f in RECORDS if f["name"] == "npd-divide_zero")
    events, records = _events(npd["lines"])
    assert len(records) == 1 and records[0].kind == "kernel"
    trace = events[0]["attrs"]["call_trace"]
    assert "table_load+0x330/0x330" in trace and "pool_io_hints+0xf0/0x1a0" not in trace[:0]
    assert events[0]["attrs"]["record_lines"] == len(npd["lines"])


def test_traceback_event_is_its_exception_line_with_frames() -> None:
    fixture = next(f for f in RECORDS if f["name"] == "megatron-nan-traceback")
    events, records = _events(fixture["lines"])
    (event,) = events
    head = next(r for r in records if r.event is event)
    assert head.kind == "traceback" and head.lines[head.head].startswith("AssertionError: Rank 3")
    assert event["attrs"]["frames"] == [
        "/workdir/fengyu05/Pai-Megatron-Patch/examples/baichuan2/pretrain_megatron_baichuan.py:101 in <module>"]


def test_interleaved_ranks_are_grouped_apart() -> None:
    """Real lines of two ranks (diffusers#10160's rank-1 traceback, lmdeploy#3048's rank-0
    watchdog line) interleaved as they would be in one job log."""
    rank1 = next(f for f in RECORDS if f["name"] == "accelerate-rank1-traceback")["lines"]
    rank0 = ("[rank0]:[E117 11:40:54.259889664 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID "
             "0(default_pg) Rank 0] Process group watchdog thread terminated with exception: CUDA "
             "error: an illegal memory access was encountered")
    lines = rank1[:3] + [rank0] + rank1[3:]
    events, records = _events(lines)
    assert [(e["kind"], e.get("rank")) for e in events] == [("nccl_error", 0)]
    traceback = next(r for r in records if r.kind == "traceback")
    assert traceback.key == "[rank1]:" and len(traceback.lines) == len(rank1)


def test_a_record_closes_at_max_lines() -> None:
    npd = next(f for f in RECORDS if f["name"] == "npd-divide_zero")["lines"]
    events, records = _events(npd, max_lines=5)
    assert sorted(t for r in records for t in r.tags) == list(range(len(npd)))
    assert all(len(r.lines) <= 5 for r in records)
    assert events[0]["attrs"]["event"] == "oops"  # the head still gives its event


def test_a_stuck_record_is_released_after_max_wait() -> None:
    grouper = RecordGrouper(host="node0042", max_wait_s=2.0)
    rank1 = next(f for f in RECORDS if f["name"] == "accelerate-rank1-traceback")["lines"]
    for line in rank1:
        assert grouper.feed(line, received=RECEIVED, now=0.0) == []
    assert len(grouper) == 1
    assert grouper.expire(now=1.0) == []
    (record,) = grouper.expire(now=2.5)
    assert len(record.lines) == len(rank1) and record.event is None and len(grouper) == 0


def test_driver_three_line_notice_is_one_xid_79() -> None:
    fixture = next(f for f in RECORDS if f["name"] == "gpud-fallen-off-bus-3-lines")
    events, records = _events(fixture["lines"])
    assert len(records) == 1 and records[0].kind == "nvrm"
    assert events[0]["attrs"]["xid"] == 79 and "\n" not in events[0]["message"]


@pytest.mark.parametrize(("line", "text", "rank", "local_rank", "task", "host"), [
    ("42: [rank42]:[E207 12:25:57.436 ProcessGroupNCCL.cpp:697] x", "[E207 12:25:57.436 ProcessGroupNCCL.cpp:697] x", 42, None, 42, None),
    ("  7: hello", "hello", 7, None, 7, None),
    ("[default3]:[rank11]: Traceback (most recent call last):", "Traceback (most recent call last):", 11, 3, None, None),
    ("3: [default1]:x", "x", None, 1, 3, None),
    ("[1,42]<stdout>:node7:1:2 [0] NCCL WARN x", "node7:1:2 [0] NCCL WARN x", 42, None, None, None),
    ("worker-3: [rank9]: x", "x", 9, None, None, "worker-3"),
    ("rdma-gpu-train-worker-0:   File \"/x.py\", line 1, in f", "  File \"/x.py\", line 1, in f", None, None, None, "rdma-gpu-train-worker-0"),
    ("NVRM: Xid (PCI:0000:01:00): 79, x", "NVRM: Xid (PCI:0000:01:00): 79, x", None, None, None, None),
    ("ib0: lost carrier", "ib0: lost carrier", None, None, None, None),
    ("[  123.4] x", "[  123.4] x", None, None, None, None),
])
def test_strip_prefix(line: str, text: str, rank: int | None, local_rank: int | None,
                      task: int | None, host: str | None) -> None:
    p = strip_prefix(line)
    assert (p.text, p.rank, p.local_rank, p.task, p.host) == (text, rank, local_rank, task, host)


# -- the agent groups before it parses ------------------------------------------------


def _agent(state: Path, log: Path, **settings: Any):
    from faultgraph.ingest.agent.run import Agent, AgentConfig

    return Agent(AgentConfig(url="http://127.0.0.1:9", files=[str(log)], state_dir=state,
                             read_from="beginning", checkpoint_interval_s=0.0, **settings))


def test_agent_queues_one_event_per_kernel_report(tmp_path: Path) -> None:
    import orjson

    hung = next(f for f in RECORDS if f["name"] == "npd-docker_hung")["lines"]
    oops = next(f for f in RECORDS if f["name"] == "npd-divide_zero")["lines"]
    log = tmp_path / "kern.log"
    log.write_text("\n".join(hung + ["an ordinary line"] + oops) + "\n")
    ids = []
    for state in ("state-a", "state-b"):  # two agents reading the same file from its start
        agent = _agent(tmp_path / state, log)
        agent.step()
        agent.flush()
        queued = [orjson.loads(e) for _, e in agent.spool.peek(100)]
        agent.close()
        assert sorted(e["attrs"]["event"] for e in queued) == ["hung_task", "oops"]
        hung_event = next(e for e in queued if e["attrs"]["event"] == "hung_task")
        assert "copy_net_ns+0x6c/0x130" in hung_event["attrs"]["call_trace"]
        ids.append(sorted(e["id"] for e in queued))
    assert ids[0] == ids[1]  # an event's id is its record's first line's: a re-read repeats it


def test_agent_holds_its_position_while_a_record_is_open_then_releases_it(tmp_path: Path) -> None:
    rank1 = next(f for f in RECORDS if f["name"] == "accelerate-rank1-traceback")["lines"]
    log = tmp_path / "train.log"
    log.write_text("starting\n" + "\n".join(rank1) + "\n")
    agent = _agent(tmp_path / "state", log, record_max_wait_s=0.2)
    agent.step()
    held = dict(agent.committed)
    assert held and sum(len(g) for g in agent._groupers.values()) == 1  # the traceback is open
    time.sleep(0.3)
    agent.step()  # caught up and past the wait: the record closes (no event) and the position moves
    assert agent.committed != held and len(agent.spool) == 0
    agent.close()


_PIECES = ["Traceback (most recent call last):", '  File "x.py", line 1, in f', "    f()",
           "RuntimeError: CUDA error: uncorrectable ECC error encountered", "[rank3]: ", "42: ",
           "Call Trace:", " func+0x1/0x2", "INFO: task a:1 blocked for more than 9 seconds.",
           "{1}[Hardware Error]: event severity: fatal", "NVRM: The NVIDIA GPU 0000:01:00.0",
           "NVRM: fallen off the bus and is not responding to commands.", "", "\r", "worker-1: "]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_PIECES) | st.text(max_size=15), max_size=3).map("".join),
                max_size=30))
def test_grouping_never_loses_or_duplicates_a_line(lines: list[str]) -> None:
    records = list(group_lines(lines, received=RECEIVED, max_lines=7))
    assert sorted(t for r in records for t in r.tags) == list(range(len(lines)))
    assert all(len(r.lines) <= 7 for r in records)
