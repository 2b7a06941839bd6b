"""The log parsers against real lines: the reference corpus (`tests/data/reference/real-logs.jsonl`),
the long-tail corpus (`tests/data/long-tail.jsonl`, every line with its public source),
more lines found in public issues (each cited), every timestamp format, and arbitrary text."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faultgraph.ingest import catalogue
from faultgraph.ingest.parse import parse_line, parse_lines
from faultgraph.ingest.timestamps import split_timestamp

DATA = Path(__file__).parent / "data"
CORPUS = DATA / "reference" / "real-logs.jsonl"
LONG_TAIL = DATA / "long-tail.jsonl"
RECEIVED = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _corpus() -> list[dict[str, Any]]:
    return _jsonl(CORPUS)


def _dbd(pci: str) -> str:
    """domain:bus:device of a PCI address, the corpus's comparison key."""
    return ":".join(pci.lower().split(".", 1)[0].split(":")[:3])


def check_spec(line: str, spec: dict[str, Any] | None) -> None:
    """Assert the event parse_line gives for `line` satisfies the corpus `spec`."""
    event = parse_line(line, host="node0042", received=RECEIVED)
    if spec is None:
        assert event is None, f"expected no event, got {event}"
        return
    if spec.get("skip"):
        return
    assert event is not None, "expected an event, got none"
    assert event["kind"] in spec["kinds"]
    for name, want in spec["attrs"].items():
        got = event["attrs"].get(name)
        if name == "pci":
            assert got is not None and _dbd(got) == _dbd(want)
        else:
            assert got == want, f"attrs.{name}: {got!r} != {want!r}"
    if "rank" in spec:
        assert event.get("rank") == spec["rank"]
    for name in ("peer", "device"):
        if name in spec:
            assert event["attrs"].get(name) == spec[name]


@pytest.mark.parametrize("record", _corpus(), ids=lambda r: f"{r['kind']}:{r['line'][:40]}")
def test_shared_corpus(record: dict[str, Any]) -> None:
    check_spec(record["line"], record["spec"])


def check_expect(line: str, expect: dict[str, Any] | None) -> None:
    """Assert the event parse_line gives for `line` is what the long-tail corpus expects:
    None for no event; else its kind, attrs (pci on domain:bus:device), and where given
    its rank, time (RFC 3339), severity and component."""
    event = parse_line(line, host="node0042", received=RECEIVED)
    if expect is None:
        assert event is None, f"expected no event, got {event}"
        return
    if "not_kind" in expect:
        assert event is None or event["kind"] != expect["not_kind"]
        return
    assert event is not None, "expected an event, got none"
    assert event["kind"] == expect["kind"], event
    for name, want in expect["attrs"].items():
        got = event["attrs"].get(name)
        if name == "pci":
            assert got is not None and _dbd(got) == _dbd(want), f"pci {got!r} != {want!r}"
        else:
            assert got == want, f"attrs.{name}: {got!r} != {want!r} in {event['attrs']}"
    if "rank" in expect:
        assert event.get("rank") == expect["rank"], event
    if "time" in expect:
        assert event["time"] == datetime.fromisoformat(expect["time"]), event["time"]
    for name in ("severity", "component"):
        if name in expect:
            assert event.get(name) == expect[name], f"{name}: {event.get(name)!r}"


@pytest.mark.parametrize("record", _jsonl(LONG_TAIL),
                         ids=lambda r: f"{r['class']}:{r['line'][:50]}")
def test_long_tail_corpus(record: dict[str, Any]) -> None:
    """Lines of other projects' fixtures and of public bug reports, verbatim (`source`)."""
    check_expect(record["line"], record["expect"])


def test_corpora_cite_their_sources() -> None:
    for record in _jsonl(LONG_TAIL):
        assert record["source"].startswith("https://github.com/"), record  # a public file, pinned
        assert record["class"] in ("gpu", "nic", "host", "training", "noise")
    assert sum(r["expect"] is None for r in _jsonl(LONG_TAIL)) >= 80  # noise stays noise


# More real lines, from public issues and code (source on each), with what they must give.
EXTRA: list[tuple[str, dict[str, Any] | None]] = [
    # docker/for-linux#1001
    ("May 15 23:09:30 ubuntu-s-1vcpu-2gb-ams3-01 kernel: [  518.050606] Out of memory: Killed "
     "process 15784 (python3) total-vm:11964kB, anon-rss:4288kB, file-rss:3028kB, shmem-rss:0kB",
     {"kinds": ["host_oom"], "attrs": {"pid": 15784, "process": "python3", "cgroup": False}}),
    ("May 15 23:09:30 ubuntu-s-1vcpu-2gb-ams3-01 kernel: [  518.053407] oom_reaper: reaped process "
     "15784 (python3), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB", None),
    # cPanelSSP/SSP#76 (older kernels print the UID)
    ("Mar  2 17:35:10 server1 kernel: [2858609.598568] Killed process 11726, UID 498, (mysqld) "
     "total-vm:7823732kB, anon-rss:2539268kB, file-rss:768kB",
     {"kinds": ["host_oom"], "attrs": {"pid": 11726, "process": "mysqld"}}),
    # leptonai/gpud#1160: a Nonfatal NVLink Xid is a warning, Fatal is critical
    ("NVRM: Xid (PCI:0000:01:00): 144, SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008 "
     "0x00000000 0x00000000 0x00000000 0x00000000)",
     {"kinds": ["gpu_xid"], "attrs": {"xid": 144, "pci": "0000:01:00", "link": 0, "unit": "SAW_MVB"}}),
    # leptonai/gpud#1271 (link-training failure, no Xid number; gpud's nvlink kmsg_test.go
    # raises it as an incident signature)
    ("Jul 09 10:42:47 pool0-0082 kernel: NVRM: knvlinkDiscoverPostRxDetLinks_GH100: Getting "
     "peer0's postRxDetLinkMask failed!",
     {"kinds": ["nvlink_error"], "attrs": {"counter": "rx_detect_link_mask"}}),
    # NVIDIA/open-gpu-kernel-modules#1150
    ("kernel: NVRM: Xid (PCI:0000:ba:00): 45, pid=1818989, name=python3, Ch 00000002 caused by "
     "previous Xid 145",
     {"kinds": ["gpu_xid"], "attrs": {"xid": 45, "caused_by_xid": 145, "process": "python3"}}),
    # prometheus/node_exporter#3511 (APEI/GHES)
    ("Dec 29 05:24:23 proxmox kernel: {35}[Hardware Error]: event severity: corrected",
     {"kinds": ["host_mce"], "attrs": {"hw_severity": "corrected"}}),
    ("Dec 29 05:24:23 proxmox kernel: {35}[Hardware Error]:   physical_address: 0x0000006a47d1f540",
     None),  # a detail line of the same record
    # radiasoft/devops#134 (syslog header without host; EDAC detail line without a count)
    ("Feb 23 03:28:16  kernel: EDAC MC1: 1 CE memory scrubbing error on CPU_SrcID#1_Ha#0_Chan#0_"
     "DIMM#0 (channel:0 slot:0 page:0xee30a0 offset:0x0 grain:32 syndrome:0x0 -  area:DRAM "
     "err_code:0008:00c2 socket:1 ha:0 channel_mask:1 rank:0)",
     {"kinds": ["host_mem_ecc"], "attrs": {"count": 1, "type": "ce"}}),
    ("Feb 23 03:28:16 kernel: EDAC sbridge MC1: HANDLING MCE MEMORY ERROR", None),
    # jishuzhan.net/article/1911252493641777153 (mlx5 cable plug log)
    ("[32710.060490] mlx5_core 0000:01:00.0 enp1s0f0: Link up",
     {"kinds": ["nic_link"], "attrs": {"state": "up", "pci": "0000:01:00"}, "device": "enp1s0f0"}),
    ("[32710.060509] IPv6: ADDRCONF(NETDEV_CHANGE): enp1s0f0: link becomes ready", None),
    # hiyouga/LlamaFactory#6953
    ("[rank144]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 144] Heartbeat monitor timed out! Process "
     "will be terminated after dumping debug info. workMetaList_.size()=1",
     {"kinds": ["nccl_timeout"], "attrs": {"event": "heartbeat_monitor_timeout", "pg": "0",
                                           "pg_rank": 144}, "rank": 144}),
    ("[rank144]:[F ProcessGroupNCCL.cpp:1169] [PG 0 Rank 144] [PG 0 Rank 144] ProcessGroupNCCL's "
     "watchdog got stuck for 600 seconds without making progress in monitoring enqueued "
     "collectives. workMetaList_.size() = 1",
     {"kinds": ["nccl_timeout"], "attrs": {"stuck_s": 600}, "rank": 144}),
    # huggingface/open-r1#620 (the what() of the watchdog's exception, default PG, no [rankN])
    ("  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated "
     "with exception: [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, "
     "OpType=BROADCAST, NumelIn=112, NumelOut=112, Timeout(ms)=1800000) ran for 1800011 "
     "milliseconds before timing out.",
     {"kinds": ["nccl_timeout"], "attrs": {"seq": 4, "op": "BROADCAST", "timeout_ms": 1800000,
                                           "elapsed_ms": 1800011, "pg": "default_pg"}, "rank": 3}),
    # modelscope/ms-swift#7992 (corpus line): a non-default group's rank is not the global one
    ("[PG ID 12 PG GUID 99(EXPERT_MODEL_PARALLEL_GROUP) Rank 4] ProcessGroupNCCL's watchdog got "
     "stuck for 480 seconds without making progress",
     {"kinds": ["nccl_timeout"], "attrs": {"pg": "EXPERT_MODEL_PARALLEL_GROUP", "pg_rank": 4}}),
    # AWS SageMaker HyperPod docs (corpus): Xid 74-style NVLink text names the link
    ("NVRM: Xid (PCI:0000:b9:00): 74, pid=<unknown>, name=<unknown>, NVLink: fatal error detected "
     "on link 6(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)",
     {"kinds": ["gpu_xid"], "attrs": {"xid": 74, "link": 6, "cause": "nvlink"}}),
    # pytorch/pytorch#58155, NVIDIA/srt-slurm#307: the job's own view of a hardware fault
    ("RuntimeError: CUDA error: uncorrectable NVLink error detected during the execution",
     {"kinds": ["nvlink_error"], "attrs": {"cause": "nvlink"}}),
    # voidlinux/void-packages#4804 (a syslog line with an RFC 3339 stamp)
    ("2016-09-12T14:15:22.100770+01:00 ok kernel: [ 1099.228378] EXT4-fs error (device sda1): "
     "ext4_lookup:1607: inode #525615: comm Cache2 I/O: deleted inode referenced: 530632",
     {"kinds": ["host_disk"], "attrs": {"device": "sda1"}}),
    # axboe/fio#862
    ("[ 1993.291923] print_req_error: I/O error, dev nvme0n1, sector 12534528 flags 104001",
     {"kinds": ["host_disk"], "attrs": {"device": "nvme0n1", "sector": 12534528}}),
    # Joshua-Riek/ubuntu-rockchip#155
    ("May 21 18:07:14 sangje-desktop kernel: [   40.991192] nvme nvme0: controller is down; will reset: "
     "CSTS=0xffffffff, PCI_STATUS read failed (134)",
     {"kinds": ["host_disk"], "attrs": {"device": "nvme0"}}),
    # systemd/systemd-centos-ci#660
    ("[   36.560762] Kernel panic - not syncing: softlockup: hung tasks",
     {"kinds": ["host_kernel"], "attrs": {"event": "panic"}}),
    # TobleMiner/wintron7.0#2 and aabc/ipt-ratelimit#3
    ("NMI watchdog: Watchdog detected hard LOCKUP on cpu 3",
     {"kinds": ["host_kernel"], "attrs": {"event": "hard_lockup", "cpu": 3}}),
    ("[86185.359253] Watchdog detected hard LOCKUP on cpu 1",
     {"kinds": ["host_kernel"], "attrs": {"event": "hard_lockup", "cpu": 1}}),
    # openbmc/openbmc#3192
    ("[   91.153715] NETDEV WATCHDOG: eth0 (ftgmac100): transmit queue 0 timed out",
     {"kinds": ["nic_error"], "attrs": {"driver": "ftgmac100", "queue": 0}, "device": "eth0"}),
    # NVIDIA/nccl#2076: the lines PyTorch prints after a remote failure, one per line as an
    # agent reads them
    ("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
     "NCCLUtils.hpp:268, remote process exited or there was a network error, NCCL version 2.21.5",
     {"kinds": ["nccl_error"], "attrs": {"code": "ncclRemoteError", "nccl_version": "2.21.5"}}),
    ("ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
     "prematurely.", {"kinds": ["nccl_error"], "attrs": {"code": "ncclRemoteError"}}),
    ("Last error:", None),
    # pytorch/pytorch#150916: the watchdog's what() for the same failure, and the socket line
    # under its "Last error:"
    ("  what():  [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread terminated with "
     "exception: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5",
     {"kinds": ["nccl_error"], "attrs": {"code": "ncclRemoteError", "pg_rank": 1}, "rank": 1}),
    ("socketProgress: Connection closed by remote peer ip-172-31-36-217.eu-north-1.compute.internal<59116>",
     {"kinds": ["nccl_error"], "attrs": {"transport": "socket", "peer_port": 59116},
      "peer": "ip-172-31-36-217.eu-north-1.compute.internal"}),
    # NVIDIA/nccl-tests#166
    ("gpu004:2200689:2200706 [3] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by "
     "remote peer gpu004.ds-a4-r02.abc.com<55693>",
     {"kinds": ["nccl_error"], "attrs": {"transport": "socket", "peer_port": 55693},
      "peer": "gpu004.ds-a4-r02.abc.com"}),
    # vllm-project/vllm#5342, after Ray's "(RayWorkerWrapper pid=142935) " prefix: newer NCCL
    # names the device and port
    ("07d92dd514d4:142935:143254 [0] transport/net_ib.cc:100 NCCL WARN NET/IB : mlx5_3:1 Got "
     "async event : GID table change",
     {"kinds": ["nic_error"], "attrs": {"port": 1, "text": "GID table change"}, "device": "mlx5_3"}),
]


@pytest.mark.parametrize(("line", "spec"), EXTRA, ids=lambda v: v[:40] if isinstance(v, str) else "")
def test_more_real_lines(line: str, spec: dict[str, Any] | None) -> None:
    check_spec(line, spec)


# Everyday lines that share a word with some rule but report nothing wrong.
BENIGN = [
    "[    1.234567] pcieport 0000:00:01.0: AER: enabled with IRQ 26",
    "[    2.345678] nvme nvme0: pci function 0000:01:00.0",
    "[    2.400000] nvme nvme0: 32/0/0 default/read/poll queues",
    "[    3.000000] EDAC MC: Ver: 3.0.0",
    "[    3.100000] EDAC MC0: Giving out device to module skx_edac controller Skylake Socket#0 IMC#0",
    "[    5.000000] mlx5_core 0000:0c:00.0: firmware version: 28.39.1002",
    "[    6.000000] EXT4-fs (nvme0n1p2): mounted filesystem with ordered data mode.",
    "[    7.000000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15",
    "[    8.000000] nvidia-nvswitch0: using MSI",
    "node0042:77777:77790 [3] NCCL INFO Channel 07/0 : 3[3] -> 11[3] [send] via NET/IB/3/GDRDMA",
    "node0042:77777:77777 [3] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB ; OOB ib0:10.0.0.42<0>",
    "Nov 29 08:00:00 node0042 systemd-networkd[812]: ib0: Link UP",
    "Nov 29 08:00:00 node0042 kernel: [ 12.0] mce: CPU0: Thermal monitoring enabled (TM1)",
    "Nov 29 08:00:00 node0042 kernel: [ 13.0] nfs: server 10.0.0.2 OK",
    "[rank0]:[I1129 08:00:00.000000000 ProcessGroupNCCL.cpp:852] [PG ID 0 PG GUID 0 Rank 0] "
    "ProcessGroupNCCL initialization options: size: 1024, global rank: 0, TIMEOUT(ms): 600000",
]


@pytest.mark.parametrize("line", BENIGN, ids=lambda v: v[:40])
def test_benign_lines_make_no_event(line: str) -> None:
    assert parse_line(line) is None


def test_envelope_shape_and_catalogue_hints() -> None:
    event = parse_line("2026-11-29T08:00:00.123456+00:00 node0007 kernel: NVRM: Xid "
                       "(PCI:0000:3B:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off "
                       "the bus.", host="ignored", source="kmsg", received=RECEIVED)
    assert event is not None
    assert event["time"] == datetime(2026, 11, 29, 8, 0, 0, 123456, tzinfo=UTC)
    assert event["host"] == "node0007"  # the syslog header wins over the caller's host
    assert event["kind"] == "gpu_xid" and event["severity"] == "critical"
    assert event["message"].startswith("NVRM: Xid")
    assert event["attrs"]["pci"] == "0000:3b:00"
    assert "pid" not in event["attrs"] and "process" not in event["attrs"]
    assert event["attrs"]["cause"] == "gpu_fell_off_bus"
    assert event["attrs"]["source"] == "kmsg"
    assert "component" not in event  # a PCI address is the topology's to resolve


def test_line_word_sets_severity() -> None:
    nonfatal = parse_line("NVRM: Xid (PCI:0000:04:00): 144, SAW_EGR Nonfatal XC0 i0 Link 00 (0x0)")
    fatal = parse_line("NVRM: Xid (PCI:0000:04:00): 149, NETIR Fatal XC0 i0 Link 02 (0x0)")
    assert nonfatal and nonfatal["severity"] == "warning"
    assert fatal and fatal["severity"] == "critical" and fatal["attrs"]["link"] == 2
    ue = parse_line("EDAC MC0: 1 UE memory read error on CPU_SrcID#0_MC#0_Chan#0_DIMM#0")
    assert ue and ue["severity"] == "critical" and ue["attrs"]["type"] == "ue"


def test_unknown_xid_and_sxid_still_give_events() -> None:
    xid = parse_line("NVRM: Xid (PCI:0000:01:00): 999, something new")
    assert xid and xid["attrs"]["xid"] == 999 and xid["attrs"]["cause"] == "unknown"
    sxid = parse_line("nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20037, Fatal, Link 12 TX PL error")
    assert sxid and sxid["attrs"]["cause"] == "nvlink"  # DLPL unit
    assert sxid["severity"] == "critical"


def test_nic_component_from_device_name() -> None:
    event = parse_line("node0042:1:2 [0] transport/net_ib.cc:100 NCCL WARN NET/IB : mlx5_2:1 Got "
                       "async event : port error", host="node0042")
    assert event and event["component"] == "node0042/mlx5_2" and event["severity"] == "error"


def test_nccl_prefix_after_launcher_rank_prefix() -> None:
    event = parse_line("[rank11]:node0042:77:90 [3] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got "
                       "completion from peer 10.0.0.7<5000> with error 12, opcode 0, len 0, vendor "
                       "err 129 (Recv)")
    assert event and event["rank"] == 11 and event["attrs"]["peer"] == "10.0.0.7"
    assert (event["attrs"]["nccl_host"], event["attrs"]["cuda_dev"]) == ("node0042", 3)


def test_parse_lines_counts_unmatched() -> None:
    lines = ["NVRM: Xid (PCI:0000:01:00): 48, pid=1, name=x, DBE\n", "nothing to see\n",
             "Linux version 6.8.0\r\n", "soft lockup"]
    events, unmatched = parse_lines(lines, host="h", received=RECEIVED)
    assert [e["attrs"]["xid"] for e in events] == [48]
    assert unmatched == 3
    assert events[0]["time"] == RECEIVED and events[0]["host"] == "h"


# ------------------------------------------------------------------ timestamps

@pytest.mark.parametrize(("line", "time", "host", "rest"), [
    ("2026-11-29T08:00:00.123456+00:00 node0042 kernel: NVRM: x",
     datetime(2026, 11, 29, 8, 0, 0, 123456, tzinfo=UTC), "node0042", "NVRM: x"),
    ("2026-11-29T09:00:00.5+0100 node0042 systemd-networkd[12]: ib0: Lost carrier",
     datetime(2026, 11, 29, 8, 0, 0, 500000, tzinfo=UTC), "node0042",
     "systemd-networkd[12]: ib0: Lost carrier"),
    ("2026-11-29T08:00:00Z NVRM: x", datetime(2026, 11, 29, 8, tzinfo=UTC), None, "NVRM: x"),
    ("2025-01-21T04:41:44,283390+00:00 NVRM: x",
     datetime(2025, 1, 21, 4, 41, 44, 283390, tzinfo=UTC), None, "NVRM: x"),
    ("kern  :warn  : 2025-01-21T04:41:44,283390+00:00 nvme nvme4: x",
     datetime(2025, 1, 21, 4, 41, 44, 283390, tzinfo=UTC), None, "nvme nvme4: x"),
    ("Nov 29 08:00:00 node0042 kernel: [ 1234.5678] NVRM: x",
     datetime(2026, 11, 29, 8, tzinfo=UTC), "node0042", "NVRM: x"),
    ("Nov  9 08:00:00 node0042 sshd[1]: x",
     datetime(2026, 11, 9, 8, tzinfo=UTC), "node0042", "sshd[1]: x"),
    ("Feb 23 03:28:16  kernel: x",  # empty host field
     datetime(2026, 2, 23, 3, 28, 16, tzinfo=UTC), None, "x"),
    ("Dec 31 23:59:59 node0042 kernel: x",  # stamped last year, received just after New Year
     datetime(2025, 12, 31, 23, 59, 59, tzinfo=UTC), "node0042", "x"),
    ("[rank3]:[E1129 07:59:59.123456789 ProcessGroupNCCL.cpp:1] [Rank 3] x",
     datetime(2026, 11, 29, 7, 59, 59, 123456, tzinfo=UTC), None,
     "[rank3]:[E1129 07:59:59.123456789 ProcessGroupNCCL.cpp:1] [Rank 3] x"),
    ("[Fri Oct 14 14:56:49 2022] NVRM: x",
     datetime(2022, 10, 14, 14, 56, 49, tzinfo=UTC), None, "NVRM: x"),
    # PyTorch's glog month is not zero-padded: E207 is 7 February, E1218 18 December
    # (stamped last year when received in November), E110 10 January, E1110 10 November
    ("[rank5]:[E207 12:25:57.436 ProcessGroupNCCL.cpp:697] x",
     datetime(2026, 2, 7, 12, 25, 57, 436000, tzinfo=UTC), None,
     "[rank5]:[E207 12:25:57.436 ProcessGroupNCCL.cpp:697] x"),
    ("[E1218 20:27:21.484903450 ProcessGroupNCCL.cpp:2168] x",
     datetime(2025, 12, 18, 20, 27, 21, 484903, tzinfo=UTC), None,
     "[E1218 20:27:21.484903450 ProcessGroupNCCL.cpp:2168] x"),
    ("[E110 00:00:01.000000 c.cpp:1] x", datetime(2026, 1, 10, 0, 0, 1, tzinfo=UTC), None,
     "[E110 00:00:01.000000 c.cpp:1] x"),
    ("[E1110 00:00:01.000000 c.cpp:1] x", datetime(2026, 11, 10, 0, 0, 1, tzinfo=UTC), None,
     "[E1110 00:00:01.000000 c.cpp:1] x"),
    ("42: [rank42]:[E207 12:25:57.436 ProcessGroupNCCL.cpp:697] x",  # srun --label first
     datetime(2026, 2, 7, 12, 25, 57, 436000, tzinfo=UTC), None,
     "42: [rank42]:[E207 12:25:57.436 ProcessGroupNCCL.cpp:697] x"),
    ("[Sun Dec 1 14:54:40 2024] x",  # dmesg -T with an unpadded day (gpud's fixtures)
     datetime(2024, 12, 1, 14, 54, 40, tzinfo=UTC), None, "x"),
    ("[Jul 23 2024 07:53:55] [ERROR] [tid 841] x",  # fabric manager's own log
     datetime(2024, 7, 23, 7, 53, 55, tzinfo=UTC), None, "[ERROR] [tid 841] x"),
    ("[2024-02-27T21:35:28.705869Z] fa88a9df [rank=1] || x",  # Python-style bracketed stamp
     datetime(2024, 2, 27, 21, 35, 28, 705869, tzinfo=UTC), None,
     "[2024-02-27T21:35:28.705869Z] fa88a9df [rank=1] || x"),
    ("<4>[  201.670809] Oops: 0002 [#1] SMP", None, None, "Oops: 0002 [#1] SMP"),  # printk level
    ("[171167.620236] NVRM: x", None, None, "NVRM: x"),
    ("[   32.298491][  T896] kexec[896]: x", None, None, "kexec[896]: x"),
    ("[  +0.000004] pcieport x", None, None, "pcieport x"),
    ("6,1227,437812449932,-;NVRM: x", None, None, "NVRM: x"),
    ("no timestamp here", None, None, "no timestamp here"),
    ("2026-02-30T08:00:00Z impossible date", None, None, "2026-02-30T08:00:00Z impossible date"),
])
def test_split_timestamp(line: str, time: datetime | None, host: str | None, rest: str) -> None:
    received = (datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC) if line.startswith("Dec 31")
                else RECEIVED)
    assert split_timestamp(line, received=received) == (time, host, rest)


def test_configured_zone_for_stamps_without_one() -> None:
    cest = timezone(timedelta(hours=2))
    time, _, _ = split_timestamp("Jun  1 10:00:00 node0042 kernel: x", received=RECEIVED, zone=cest)
    assert time == datetime(2026, 6, 1, 8, tzinfo=UTC)
    time, _, _ = split_timestamp("2026-06-01T10:00:00+00:00 node0042 kernel: x", zone=cest)
    assert time == datetime(2026, 6, 1, 10, tzinfo=UTC)  # its own zone wins


def test_kmsg_with_boot_time() -> None:
    boot = datetime(2026, 11, 20, tzinfo=UTC)
    time, host, rest = split_timestamp("4,1227,437812449932,c;NVRM: x", boot_time=boot)
    assert time == boot + timedelta(microseconds=437812449932)
    assert (host, rest) == (None, "NVRM: x")


def test_line_without_time_gets_receive_time() -> None:
    event = parse_line("[171167.620236] NVRM: Xid (PCI:0000:01:00): 48, DBE", received=RECEIVED)
    assert event and event["time"] == RECEIVED


# ------------------------------------------------------------------ robustness

_KEYWORDS = sorted({k for r in catalogue.load().rules for k in r.keywords})
_FRAGMENTS = ["NVRM: Xid (PCI:0000:01:00): ", "[rank", "]:", "[PG ID ", " Rank ", "WorkNCCL(",
              "SeqNum=", "Timeout(ms)=", "mlx5_core 0000:01:00.0 ", "{", "}", "(", ")", "\n",
              "Nov 29 08:00:00 ", "2026-11-29T08:00:00Z ", "[Fri Oct 14 14:56:49 2022] "]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=20), st.sampled_from(_KEYWORDS),
                          st.sampled_from(_FRAGMENTS), st.integers().map(str)), max_size=12)
       .map(" ".join))
def test_parse_line_never_raises(text: str) -> None:
    event = parse_line(text, received=RECEIVED)
    assert event is None or event["kind"] in catalogue.LOG_KINDS


def test_non_str_line_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="must be a str"):
        parse_line(b"NVRM: Xid (PCI:0000:01:00): 79, x")  # type: ignore[arg-type]


def test_naive_received_is_utc() -> None:
    event = parse_line("NVRM: Xid (PCI:0000:01:00): 48, DBE", received=datetime(2026, 11, 29, 9))
    assert event and event["time"] == RECEIVED


def test_absurd_numbers_are_not_events() -> None:
    assert parse_line("NVRM: Xid (PCI:0000:01:00): " + "9" * 5000 + ", x") is None


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_split_timestamp_never_raises(text: str) -> None:
    time, _, rest = split_timestamp(text, received=RECEIVED)
    assert time is None or time.tzinfo is not None
    assert isinstance(rest, str)
