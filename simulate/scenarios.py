"""Fault simulator: what a cluster's hosts and services would send while faults happen,
with the ground truth of every fault, to test and score the attribution engine.

Hosts write raw log lines as real ones do — kernel lines under an RFC 3339 (rsyslog) or
classic syslog header naming the host, PyTorch's glog lines behind torchrun's `[rankN]:`
prefix, NCCL `WARN` lines — so replaying a scenario exercises the parsers too. What
services post as JSON is a SPEC §1 event: job lifecycle, checkpoints, lost heartbeats,
maintenance, and the readings agents poll from DCGM and port counters (GPU temperature
and throttling, single-bit ECC counts, InfiniBand symbol errors), which no kernel line
reports.

A record is `{"type": "log", "time", "host", "source", "line", "expect"}` or
`{"type": "event", "time", "event"}`; `time` is when it is written (RFC 3339, UTC) and
`expect` is what the parsers should make of the line (`{"kind", "rank"?, "attrs"}`, or
null for a line no rule should match). A truth entry is `{"id", "type", "mechanism",
"job", "time", "onset", "root_component", "category", "cause", "action", "decoys",
"related"}`: `type` is the scenario (a mechanism, `concurrent` or `red_herring`),
`mechanism` what broke, `time` the moment it broke the job, `onset` its first trace (a
thermal climb or a cable's first flaps come minutes earlier; else equal to `time`),
`decoys` components that drew a harmless error near the fault and must not be blamed,
`related` the other fault of a concurrent pair.

Everything is drawn from one `random.Random(seed)`, so a seed gives the same scenario.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from faultgraph.attribution.generators import rail_optimized
from faultgraph.attribution.placement import Placement
from faultgraph.attribution.topology import link_id
from faultgraph.ingest.causes import category_of

# Fault mechanisms → (SPEC §6 cause, SPEC §5 action kind); the category follows the cause.
OUTCOMES: dict[str, tuple[str, str]] = {
    "gpu_fell_off_bus": ("gpu_fell_off_bus", "evict"),
    "hbm_uncontained_ecc": ("gpu_hbm", "evict"),
    "gpu_thermal": ("gpu_thermal", "evict"),
    "nvswitch_failure": ("nvswitch", "restart"),
    "nic_down": ("nic", "evict"),
    "flapping_cable": ("network_switch_cable", "replace"),
    "leaf_switch_down": ("network_switch_cable", "restart"),
    "host_crash": ("cpu", "evict"),
    "software_hang": ("software_bug", "restart"),
    "planned_maintenance": ("planned_maintenance", "none"),
}
MECHANISMS: tuple[str, ...] = tuple(OUTCOMES)
SCENARIO_TYPES: tuple[str, ...] = (*MECHANISMS, "concurrent", "red_herring")
# Mechanisms that may be paired or shadowed by a decoy: any unplanned one.
_UNPLANNED = tuple(m for m in MECHANISMS if m != "planned_maintenance")

DEFAULT_START = datetime(2026, 11, 29, tzinfo=UTC)
NCCL_VERSION = "2.21.5"
_PG = "[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"
_REMOTE_ERROR = "remote process exited or there was a network error"
# SXid codes a failing NVSwitch reports (sxid.toml: fatal, cause nvswitch) and their text.
_SXID_FATAL = (
    (24007, "sourcetrack timeout error"),
    (12028, "egress non-posted PRIV error"),
    (14017, "TSTATE ATO error"),
    (15005, "route uncorrectable ECC error"),
)
_OPS = ("ALLREDUCE", "ALLGATHER", "REDUCE_SCATTER", "BROADCAST")
_TRAILING_NUMBER = re.compile(r"\d+$")
_GLOG_STAMP = re.compile(r"\[[EWIF]\d{3,4} ")
# What services post (scheduler, launcher, trainer, liveness) is on their clocks, not a host's.
_SERVICE_POSTED = frozenset({"job_start", "job_fail", "job_restart", "job_end", "checkpoint_save",
                             "host_heartbeat", "maintenance"})


@dataclass
class Scenario:
    """A topology (SPEC §3 body), jobs (SPEC §4 bodies), time-ordered records and truth."""

    topology: dict[str, list[dict[str, Any]]]
    jobs: list[dict[str, Any]]
    records: list[dict[str, Any]]
    truth: list[dict[str, Any]]

    def save(self, directory: str | Path) -> Path:
        """Write topology.json, jobs.json, records.jsonl and truth.json into `directory`."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        (out / "topology.json").write_bytes(orjson.dumps(self.topology))
        (out / "jobs.json").write_bytes(orjson.dumps(self.jobs, option=orjson.OPT_INDENT_2))
        (out / "truth.json").write_bytes(orjson.dumps(self.truth, option=orjson.OPT_INDENT_2))
        with (out / "records.jsonl").open("wb") as fh:
            fh.writelines(orjson.dumps(r) + b"\n" for r in self.records)
        return out

    @classmethod
    def load(cls, directory: str | Path) -> Scenario:
        """Read a directory written by `save`; ValueError names a missing or bad file."""
        src = Path(directory)
        try:
            topology = orjson.loads((src / "topology.json").read_bytes())
            jobs = orjson.loads((src / "jobs.json").read_bytes())
            truth = orjson.loads((src / "truth.json").read_bytes())
            with (src / "records.jsonl").open("rb") as fh:
                records = [orjson.loads(line) for line in fh if line.strip()]
        except (OSError, orjson.JSONDecodeError) as exc:
            raise ValueError(f"not a scenario directory {src}: {exc}") from exc
        return cls(topology=topology, jobs=jobs, records=records, truth=truth)


def iso(t: datetime) -> str:
    """RFC 3339 in UTC with microseconds, as the records and events carry time."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ---------------------------------------------------------------------------- cluster


@dataclass
class _Host:
    """What lines need to know about one host: addresses, log style, boots."""

    su: int
    gpu_pci: list[str]
    nic_pci: list[str]
    nic_ip: list[str]
    nvswitch_pci: list[str]
    pciesw_pci: list[str]
    classic_syslog: bool  # classic `Nov 29 08:00:00 host kernel: [uptime] …`, else RFC 3339
    boots: list[datetime]
    networkd_pid: int

    def uptime(self, t: datetime) -> float:
        """Seconds since the boot in force at `t`, as the kernel stamps its lines."""
        return (t - max((b for b in self.boots if b <= t), default=self.boots[0])).total_seconds()


@dataclass
class _Job:
    """A job's placement and its running state while the scenario is built."""

    body: dict[str, Any]
    placement: Placement
    timeout_ms: int
    step_s: float
    collectives_per_s: float
    numel: int
    checkpoint_every: timedelta
    checkpoint_s: float
    run_start: datetime
    run_step: int
    free_at: datetime
    pid_base: int
    runs: list[tuple[datetime, datetime, int]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return str(self.body["id"])

    @property
    def head(self) -> str:
        """Where the launcher runs (rank 0's host), the host job events are posted for."""
        return str(self.body["hosts"][0])

    def seq(self, t: datetime) -> int:
        """The default group's collective sequence number at `t` (new processes count
        from 1 after every restart)."""
        return 1 + int((t - self.run_start).total_seconds() * self.collectives_per_s)

    def last_checkpoint_step(self, t: datetime) -> int:
        """The step a restart at `t` resumes from: the last checkpoint whose save finished."""
        elapsed = (t - self.run_start).total_seconds()
        every = self.checkpoint_every.total_seconds()
        saved = int(elapsed // every)
        if saved and elapsed - saved * every < self.checkpoint_s:
            saved -= 1
        return self.run_step + int(saved * every / self.step_s)


@dataclass
class _Hit:
    """What a mechanism did: the component to blame and when its symptoms end."""

    root: str
    end: datetime
    ready: datetime | None = None  # earliest restart (a host rebooted, a switch back)
    onset: datetime | None = None  # first trace, when the fault shows before it breaks the job


class _Builder:
    """Collects records and truth for one scenario; all randomness from one generator."""

    def __init__(self, topology: dict[str, list[dict[str, Any]]], seed: int, start: datetime) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.topology = topology
        self.items: list[tuple[datetime, int, dict[str, Any]]] = []
        self.truth: list[dict[str, Any]] = []
        self.hosts: dict[str, _Host] = {}
        self.nvlink_ports: dict[tuple[str, str], list[int]] = {}
        self.leaf_of: dict[str, str] = {}  # nic → leaf
        self.on_leaf: dict[str, list[str]] = {}  # leaf → nics
        self.quiet: dict[str, list[tuple[datetime, datetime]]] = {}  # host → down windows
        # host → how far its clock is ahead: its own stamps (kernel, glog, agent readings) carry it
        self.skew: dict[str, timedelta] = {}
        self._index(start)

    # ------------------------------------------------------------------ topology index

    def _index(self, start: datetime) -> None:
        # (host, kind or "ip") → index in the component id → PCI address (or IP)
        parts: dict[tuple[str, str], dict[int, str]] = defaultdict(dict)
        for c in self.topology["components"]:
            host, kind = c.get("host"), c["type"]
            if host is None or kind == "host":
                continue
            index = int(_TRAILING_NUMBER.search(c["id"])[0])  # type: ignore[index]
            parts[(host, kind)][index] = c["attrs"].get("pci", "")
            if kind == "nic":
                parts[(host, "ip")][index] = c["attrs"]["ip"]

        def ordered(host: str, kind: str) -> list[str]:
            return [v for _, v in sorted(parts[(host, kind)].items())]

        for c in self.topology["components"]:
            if c["type"] != "host":
                continue
            host = c["id"]
            self.hosts[host] = _Host(
                su=int(c["attrs"].get("su", 0)), gpu_pci=ordered(host, "gpu"),
                nic_pci=ordered(host, "nic"), nic_ip=ordered(host, "ip"),
                nvswitch_pci=ordered(host, "nvswitch"), pciesw_pci=ordered(host, "pciesw"),
                classic_syslog=self.rng.random() < 0.4,
                boots=[start - timedelta(days=self.rng.uniform(2, 90))],
                networkd_pid=self.rng.randint(900, 4000),
            )
        for link in self.topology["links"]:
            a, b, kind = link["a"], link["b"], link["type"]
            if kind == "nvlink" and "/nvswitch" in a + b:
                gpu, switch = (b, a) if "/nvswitch" in a else (a, b)
                self.nvlink_ports[(gpu, switch)] = list(link.get("attrs", {}).get("gpu_links", []))
            elif kind in ("ib", "eth") and ("/" in a) != ("/" in b):
                nic, leaf = (a, b) if "/" in a else (b, a)
                self.leaf_of[nic] = leaf
                self.on_leaf.setdefault(leaf, []).append(nic)

    # ------------------------------------------------------------------ emitting

    def _put(self, t: datetime, record: dict[str, Any]) -> None:
        self.items.append((t, len(self.items), record))

    def log(self, t: datetime, host: str, source: str, line: str,
            expect: dict[str, Any] | None) -> None:
        self._put(t, {"type": "log", "host": host, "source": source, "line": line, "expect": expect})

    def event(self, t: datetime, host: str, kind: str, attrs: dict[str, Any], *,
              severity: str | None = None, component: str | None = None,
              job: str | None = None, message: str | None = None) -> None:
        body: dict[str, Any] = {"host": host, "kind": kind}
        if component:
            body["component"] = component
        if severity:
            body["severity"] = severity
        body["attrs"] = attrs
        if job:
            body["job"] = job
        if message:
            body["message"] = message
        record: dict[str, Any] = {"type": "event", "event": body}
        if kind not in _SERVICE_POSTED and host in self.skew:
            record["clock"] = self.skew[host]  # an agent's reading, stamped by the host's clock
        self._put(t, record)

    def kernel(self, t: datetime, host: str, text: str, expect: dict[str, Any] | None) -> None:
        self.log(t, host, "kmsg", self._syslog(t, host, "kernel", text), expect)

    def networkd(self, t: datetime, host: str, text: str, expect: dict[str, Any] | None) -> None:
        tag = f"systemd-networkd[{self.hosts[host].networkd_pid}]"
        self.log(t, host, "syslog", self._syslog(t, host, tag, text), expect)

    def _syslog(self, t: datetime, host: str, tag: str, text: str) -> str:
        h = self.hosts[host]
        t = t + self.skew.get(host, timedelta(0))
        if not h.classic_syslog:
            return f"{t:%Y-%m-%dT%H:%M:%S.%f}+00:00 {host} {tag}: {text}"
        stamp = f"{t:%b} {t.day:2d} {t:%H:%M:%S}"
        if tag == "kernel":  # imklog keeps the kernel's own uptime stamp
            return f"{stamp} {host} kernel: [{h.uptime(t):12.6f}] {text}"
        return f"{stamp} {host} {tag}: {text}"

    def glog(self, t: datetime, job: _Job, rank: int, where: str, text: str,
             expect: dict[str, Any] | None) -> None:
        """A ProcessGroupNCCL line as torchrun relays it (`[rankN]:` + glog header)."""
        tid = job.pid_base + job.placement.slots[rank].gpu + 180
        host = job.placement.slots[rank].host
        stamp = t + self.skew.get(host, timedelta(0))
        # glog does not pad the month: 7 February is E207 (SPEC §8)
        line = f"[rank{rank}]:[E{stamp.month}{stamp:%d %H:%M:%S.%f} {tid} {where}] {_PG.format(rank=rank)} {text}"
        self.log(t, host, "train", line, expect)

    def nccl(self, t: datetime, job: _Job, rank: int, where: str, text: str,
             expect: dict[str, Any] | None, level: str = "WARN") -> None:
        """An NCCL debug line (`host:pid:tid [cudaDev] file:line NCCL WARN …`)."""
        host, gpu = job.placement.slots[rank].host, job.placement.slots[rank].gpu
        pid = job.pid_base + gpu
        line = f"[rank{rank}]:{host}:{pid}:{pid + 97} [{gpu}] {where} NCCL {level} {text}"
        self.log(t, host, "train", line, expect)

    def records(self) -> list[dict[str, Any]]:
        """The records in time order, each given its time and every event its id."""
        out: list[dict[str, Any]] = []
        for n, (t, _, record) in enumerate(sorted(self.items, key=lambda item: (item[0], item[1]))):
            stamp = iso(t)
            if record["type"] == "event":
                own = iso(t + record["clock"]) if "clock" in record else stamp
                event = {"time": own, **record["event"], "id": f"sim{self.seed}-{n:07d}"}
                out.append({"type": "event", "time": stamp, "event": event})
            else:
                # a line stamped by its host's clock says so (`clock_s`, seconds ahead)
                skew = self.skew.get(record["host"])
                stamped = record["source"] != "train" or _GLOG_STAMP.search(record["line"][:40])
                extra: dict[str, Any] = {"clock_s": skew.total_seconds()} if skew and stamped else {}
                out.append({"type": "log", "time": stamp, **record, **extra})
        return out

    # ------------------------------------------------------------------ small helpers

    def after(self, t: datetime, low: float, high: float) -> datetime:
        """A moment `low`..`high` seconds after `t`, to the microsecond."""
        return t + timedelta(microseconds=self.rng.randint(int(low * 1e6), int(high * 1e6)))

    def quiet_at(self, host: str, t: datetime) -> bool:
        return any(a <= t < b for a, b in self.quiet.get(host, ()))


def _xid(pci: str, code: int, text: str, pid: int | None = None) -> tuple[str, dict[str, Any]]:
    who = "pid='<unknown>', name=<unknown>" if pid is None else f"pid={pid}, name=python3"
    line = f"NVRM: Xid (PCI:{pci}): {code}, {who}, {text}"
    return line, {"kind": "gpu_xid", "attrs": {"xid": code, "pci": pci}}


def _expect(kind: str, rank: int | None = None, **attrs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": kind, "attrs": attrs}
    if rank is not None:
        out["rank"] = rank
    return out


# ---------------------------------------------------------------------------- symptoms


def _timeouts(b: _Builder, job: _Job, t0: datetime, *, skip: frozenset[int] | set[int] = frozenset(),
              lag: dict[int, int] | None = None) -> datetime:
    """Every rank not in `skip` hangs in the collective it entered at about `t0` and its
    watchdog reports it `timeout` later; `lag` gives ranks stuck at an earlier SeqNum.
    Returns the time of the last line."""
    seq = job.seq(t0)
    op = _OPS[seq % len(_OPS)]
    timeout = job.timeout_ms
    last = t0
    for rank in range(job.placement.world_size):
        if rank in skip:
            continue
        rank_seq = seq - lag[rank] if lag and rank in lag else seq
        elapsed = timeout + b.rng.randint(1, 120)  # the watchdog polls every 100 ms
        start = t0 + timedelta(microseconds=b.rng.randint(0, 4000))
        t = start + timedelta(milliseconds=elapsed, microseconds=b.rng.randint(0, 999))
        text = (f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum={rank_seq}, "
                f"OpType={op}, NumelIn={job.numel}, NumelOut={job.numel}, Timeout(ms)={timeout}) "
                f"ran for {elapsed} milliseconds before timing out.")
        b.glog(t, job, rank, "ProcessGroupNCCL.cpp:616", text,
               _expect("nccl_timeout", rank, seq=rank_seq, elapsed_ms=elapsed, timeout_ms=timeout))
        last = max(last, t)
    return last


def _async_failure(b: _Builder, job: _Job, rank: int, t: datetime, reason: str) -> None:
    """The watchdog of a rank whose NCCL communicator reported an error aborts it."""
    seq = job.seq(t)
    op = _OPS[seq % len(_OPS)]
    text = (f"Process group watchdog thread terminated with exception: [Rank {rank}] Collective "
            f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={job.numel}, NumelOut={job.numel}, "
            f"Timeout(ms)={job.timeout_ms}) raised the following async exception: NCCL error: "
            f"{reason}, NCCL version {NCCL_VERSION}")
    b.glog(t, job, rank, "ProcessGroupNCCL.cpp:1595", text, _expect("nccl_error", rank, seq=seq))


def _peer_errors(b: _Builder, job: _Job, rank: int, peer_ip: str, t: datetime) -> None:
    """A rank whose IB queue pair to `peer_ip` hit the retry limit (status 12), then its abort."""
    slot = job.placement.slots[rank]
    local_ip = b.hosts[slot.host].nic_ip[slot.gpu]
    text = (f"NET/IB : Got completion from peer {peer_ip}<{b.rng.randint(32768, 60999)}> with "
            f"status=12 opcode=129 len=0 vendor err 129 (Recv) localGid ::ffff:{local_ip} "
            f"remoteGids::ffff:{peer_ip}")
    b.nccl(t, job, rank, "transport/net_ib.cc:1696", text, _expect("nccl_error", rank, peer=peer_ip))
    _async_failure(b, job, rank, b.after(t, 0.05, 0.5), _REMOTE_ERROR)


def _ring_peers(placement: Placement, rank: int) -> list[int]:
    """The ranks NCCL's rings connect `rank` to across hosts: its neighbours in its
    data- and pipeline-parallel groups (tensor parallelism stays inside the host)."""
    peers: list[int] = []
    host = placement.host_of(rank)
    for kind in ("dp", "pp"):
        group = placement.groups(kind, rank)
        i = group.index(rank)
        for p in (group[i - 1], group[(i + 1) % len(group)]):
            if p != rank and p not in peers and placement.host_of(p) != host:
                peers.append(p)
    return peers


def _hang_start(b: _Builder, t: datetime) -> datetime:
    """The collective in flight when a fault struck was entered just before it."""
    return t - timedelta(microseconds=b.rng.randint(0, 1_500_000))


# ---------------------------------------------------------------------------- mechanisms


def _victim(b: _Builder, job: _Job) -> tuple[int, str, int]:
    rank = b.rng.randrange(job.placement.world_size)
    slot = job.placement.slots[rank]
    return rank, slot.host, slot.gpu


def _fell_off_bus(b: _Builder, host: str, gpu: int, t: datetime) -> None:
    pci = b.hosts[host].gpu_pci[gpu]
    b.kernel(t, host, *_xid(pci, 79, "GPU has fallen off the bus."))
    b.kernel(b.after(t, 0.0, 0.002), host, f"NVRM: GPU {pci}.0: GPU has fallen off the bus.",
             _expect("gpu_xid", xid=79, pci=pci))
    if b.rng.random() < 0.5:
        b.kernel(b.after(t, 0.002, 0.01), host, *_xid(
            pci, 154, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"))


def _gpu_fell_off_bus(b: _Builder, job: _Job, t: datetime) -> _Hit:
    """XID 79 on one GPU: its rank goes silent, the others time out."""
    rank, host, gpu = _victim(b, job)
    _fell_off_bus(b, host, gpu, t)
    end = _timeouts(b, job, _hang_start(b, t), skip={rank})
    return _Hit(f"{host}/gpu{gpu}", end)


def _hbm_uncontained_ecc(b: _Builder, job: _Job, t: datetime) -> _Hit:
    """An uncorrectable HBM error the GPU could not contain: XID 95, or XID 48 with a row
    remapping failure; the rank's process dies on the CUDA error, the others time out."""
    rank, host, gpu = _victim(b, job)
    pci = b.hosts[host].gpu_pci[gpu]
    pid = job.pid_base + gpu
    addr = b.rng.randrange(1 << 36)
    if b.rng.random() < 0.5:
        # The driver's format for a DRAM-located containment error (open-gpu-kernel-modules,
        # kern_gpu_error_cont_ga100.c): an HBM error names the FB DED unit and its physAddr.
        b.kernel(t, host, *_xid(pci, 95, f"Uncontained: FB DED (0x{b.rng.randrange(8):x}, 0x{b.rng.randrange(2):x}). "
                                f"physAddr: 0x{addr:08x} RST: Yes, D-RST: No", pid))
    else:
        b.kernel(t, host, *_xid(pci, 48, f"An uncorrectable double bit error (DBE) has been detected "
                                f"on GPU in the framebuffer at physAddr 0x{addr:x} partition "
                                f"{b.rng.randrange(8)}, subpartition {b.rng.randrange(2)}.", pid))
        b.kernel(b.after(t, 0.001, 0.05), host, *_xid(
            pci, 64, f"Row remapper: failed to record row remap at physAddr 0x{addr:x}, "
                     "no spare rows left in bank"))
    line = f"[rank{rank}]: RuntimeError: CUDA error: uncorrectable ECC error encountered"
    b.log(b.after(t, 0.1, 1.0), host, "train", line, _expect("gpu_ecc", rank, type="dbe"))
    end = _timeouts(b, job, _hang_start(b, t), skip={rank})
    return _Hit(f"{host}/gpu{gpu}", end)


def _gpu_thermal(b: _Builder, job: _Job, t: datetime) -> _Hit:
    """A GPU overheats (DCGM reports rising temperature and thermal slowdown), then shuts
    down and falls off the bus (XID 79): the thermal readings name the cause."""
    rank, host, gpu = _victim(b, job)
    component = f"{host}/gpu{gpu}"
    steps = b.rng.randint(4, 7)
    first = t - timedelta(seconds=b.rng.uniform(240, 540))
    for i in range(steps):
        at = first + (t - first) * i / steps
        temp = 86 + round(11 * (i + 1) / steps)
        throttle = "sw_thermal_slowdown" if i < steps // 2 else "hw_thermal_slowdown"
        severity = "warning" if i < steps // 2 else ("error" if i < steps - 1 else "critical")
        b.event(at, host, "gpu_thermal", {"temp_c": temp, "throttle": throttle, "source": "dcgm"},
                severity=severity, component=component,
                message=f"GPU {gpu} temperature {temp} C, clocks throttled ({throttle})")
    _fell_off_bus(b, host, gpu, t)
    end = _timeouts(b, job, _hang_start(b, t), skip={rank})
    return _Hit(component, end, onset=first)


def _nvswitch_failure(b: _Builder, job: _Job, t: datetime) -> _Hit:
    """Fatal SXids on one NVSwitch; GPUs of the host report NVLink errors on their links
    to it (XID 74); every rank times out, the host's NVLink domain is broken."""
    _, host, _ = _victim(b, job)
    h = b.hosts[host]
    k = b.rng.randrange(len(h.nvswitch_pci))
    switch = f"{host}/nvswitch{k}"
    pci = h.nvswitch_pci[k]
    for i in range(b.rng.randint(2, 4)):
        code, text = b.rng.choice(_SXID_FATAL)
        line = (f"nvidia-nvswitch{k}: SXid (PCI:{pci}): {code}, Fatal, Link {b.rng.randrange(64):02d} "
                f"{text}{' (First)' if i == 0 else ''}")
        b.kernel(b.after(t, 0.0001 * i, 0.0001 * i + 0.01), host, line,
                 _expect("nvswitch_error", sxid=code, nvswitch=k, pci=pci.split(".")[0]))
    for gpu in b.rng.sample(range(len(h.gpu_pci)), b.rng.randint(1, 3)):
        port = b.rng.choice(b.nvlink_ports[(f"{host}/gpu{gpu}", switch)])
        text = f"NVLink: fatal error detected on link {port}(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)"
        line, expect = _xid(h.gpu_pci[gpu], 74, text, job.pid_base + gpu)
        expect["attrs"]["link"] = port
        b.kernel(b.after(t, 0.05, 1.0), host, line, expect)
    end = _timeouts(b, job, _hang_start(b, t))
    return _Hit(switch, end)


def _carrier(b: _Builder, host: str, nic: int, t: datetime, up: bool) -> None:
    state = "Gained" if up else "Lost"
    b.networkd(t, host, f"ib{nic}: {state} carrier",
               _expect("nic_link", device=f"ib{nic}", state="up" if up else "down"))


def _port_event(b: _Builder, job: _Job, rank: int, t: datetime, text: str) -> None:
    nic = job.placement.slots[rank].gpu  # rail-optimized: GPU i uses NIC i
    b.nccl(t, job, rank, "transport/net_ib.cc:100", f"NET/IB : mlx5_{nic}:1 Got async event : {text}",
           _expect("nic_error", device=f"mlx5_{nic}", port=1))


def _network_break(b: _Builder, job: _Job, rank: int, t: datetime) -> datetime:
    """The rank's NIC stops passing traffic at `t`: its ring peers' queue pairs to it fail,
    they and the rank abort, every other rank hangs and times out."""
    slot = job.placement.slots[rank]
    ip = b.hosts[slot.host].nic_ip[slot.gpu]
    peers = _ring_peers(job.placement, rank)
    for peer in peers:
        _peer_errors(b, job, peer, ip, b.after(t, 7, 15))
    _async_failure(b, job, rank, b.after(t, 7, 15), "unhandled system error")
    return _timeouts(b, job, _hang_start(b, t), skip={rank, *peers})


def _nic_down(b: _Builder, job: _Job, t: datetime) -> _Hit:
    """One NIC fails (mlx5 health poll lost, port down, catastrophic error): its peers
    name its IP in IB completion errors."""
    rank, host, nic = _victim(b, job)
    bdf = f"{b.hosts[host].nic_pci[nic]}.0"
    b.kernel(t, host, f"mlx5_core {bdf}: poll_health:174: device's health compromised - reached miss count",
             _expect("nic_error", pci=bdf[:-2]))
    _carrier(b, host, nic, b.after(t, 0.5, 2.0), up=False)
    _port_event(b, job, rank, b.after(t, 0.2, 1.0), "local catastrophic error")
    end = _network_break(b, job, rank, t)
    return _Hit(f"{host}/nic{nic}", end)


def _flapping_cable(b: _Builder, job: _Job, t: datetime) -> _Hit:
    """The cable between a NIC and its leaf flaps: short down/up cycles and rising symbol
    errors for minutes, then a drop long enough to break the job."""
    rank, host, nic = _victim(b, job)
    nic_id = f"{host}/nic{nic}"
    first = t - timedelta(seconds=b.rng.uniform(120, 480))
    flaps = b.rng.randint(3, 6)
    errors = 0
    for i in range(flaps):
        down = first + (t - first) * i / flaps
        up = b.after(down, 0.3, 3.0)
        _carrier(b, host, nic, down, up=False)
        _port_event(b, job, rank, b.after(down, 0.0, 0.2), "port error")
        _carrier(b, host, nic, up, up=True)
        _port_event(b, job, rank, b.after(up, 0.0, 0.2), "port active")
        errors += b.rng.randint(50, 5000)
        b.event(b.after(up, 5, 30), host, "nic_error",
                {"device": f"mlx5_{nic}", "port": 1, "counter": "symbol_error", "count": errors},
                severity="warning", component=nic_id)
    _carrier(b, host, nic, t, up=False)
    _port_event(b, job, rank, b.after(t, 0.0, 0.2), "port error")
    back = b.after(t, 30, 90)
    _carrier(b, host, nic, back, up=True)
    end = _network_break(b, job, rank, t)
    return _Hit(link_id(nic_id, b.leaf_of[nic_id]), end, onset=first)


def _leaf_switch_down(b: _Builder, job: _Job, t: datetime) -> _Hit:
    """A leaf switch dies: every NIC cabled to it (one rail of a scalable unit) loses its
    link at once; the job's ranks on that rail abort, the others time out."""
    _, host, rail = _victim(b, job)
    leaf = b.leaf_of[f"{host}/nic{rail}"]
    back = b.after(t, 600, 1200)
    for nic_id in b.on_leaf[leaf]:
        h = nic_id.split("/", 1)[0]
        _carrier(b, h, rail, b.after(t, 0.0, 0.8), up=False)
        _carrier(b, h, rail, b.after(back, 0.0, 5.0), up=True)
    placement = job.placement
    rail_ranks = [r for r in (placement.rank_at(h, rail) for h in placement.hosts()) if r is not None]
    for rank in rail_ranks:
        _port_event(b, job, rank, b.after(t, 0.0, 1.0), "port error")
    for rank in rail_ranks:
        peers = _ring_peers(placement, rank)
        if peers and b.rng.random() < 0.5:
            ip = b.hosts[placement.slots[b.rng.choice(peers)].host].nic_ip[rail]
            _peer_errors(b, job, rank, ip, b.after(t, 7, 15))
        else:
            _async_failure(b, job, rank, b.after(t, 7, 15), _REMOTE_ERROR)
    end = _timeouts(b, job, _hang_start(b, t), skip=set(rail_ranks))
    return _Hit(leaf, end, ready=back)


def _host_crash(b: _Builder, job: _Job, t: datetime) -> _Hit:
    """A fatal machine check panics the host: MCE records, the panic, then silence from
    all its ranks; the monitor reports its heartbeat lost; it reboots minutes later. In
    half the crashes the HCA stops too and the ranks' ring peers name its IPs."""
    _, host, _ = _victim(b, job)
    cpu, bank = b.rng.randrange(112), b.rng.choice((4, 6, 13, 17))
    lines = [
        (f"mce: [Hardware Error]: CPU {cpu}: Machine Check Exception: 5 Bank {bank}: "
         f"{b.rng.choice(('be', 'fe', 'bf'))}00000000800400", _expect("host_mce")),
        (f"mce: [Hardware Error]: RIP !INEXACT! 10:<ffffffff{b.rng.randrange(1 << 32):08x}> "
         "{intel_idle+0x59/0x90}", None),
        (f"mce: [Hardware Error]: TSC {b.rng.randrange(1 << 48):x} ADDR {b.rng.randrange(1 << 40):x} "
         "MISC 86", None),
        (f"mce: [Hardware Error]: PROCESSOR 0:806f8 TIME {int(t.timestamp())} SOCKET {cpu // 56} "
         f"APIC {cpu * 2:x} microcode 2b000571", None),
        ("mce: [Hardware Error]: Machine check: Processor context corrupt", _expect("host_mce")),
        ("Kernel panic - not syncing: Fatal machine check", _expect("host_kernel")),
    ]
    for i, (text, expect) in enumerate(lines):
        b.kernel(t - timedelta(microseconds=(len(lines) - i) * 40), host, text, expect)
    b.event(b.after(t, 60, 180), host, "host_heartbeat", {"state": "lost"}, severity="critical",
            component=host, message=f"{host} agent heartbeat lost")
    reboot = b.after(t, 240, 600)
    b.hosts[host].boots.append(reboot)
    b.quiet.setdefault(host, []).append((t, reboot + timedelta(seconds=60)))
    b.event(b.after(reboot, 60, 120), host, "host_heartbeat", {"state": "ok"}, severity="info",
            component=host, message=f"{host} agent heartbeat restored")
    silent = set(job.placement.host_ranks(host))
    aborted: set[int] = set()
    if b.rng.random() < 0.5:  # the HCA died with the host: peers' queue pairs to it fail
        for rank in sorted(silent):
            ip = b.hosts[host].nic_ip[job.placement.slots[rank].gpu]
            for peer in _ring_peers(job.placement, rank):
                if peer not in aborted:
                    _peer_errors(b, job, peer, ip, b.after(t, 7, 20))
                    aborted.add(peer)
    end = _timeouts(b, job, _hang_start(b, t), skip=silent | aborted)
    return _Hit(host, end, ready=reboot + timedelta(seconds=120))


def _software_hang(b: _Builder, job: _Job, t: datetime) -> _Hit:
    """No hardware trace: one rank never reaches the collective the others wait in, so in
    the watchdog timeouts its SeqNum is behind everyone else's."""
    rank, host, gpu = _victim(b, job)
    end = _timeouts(b, job, _hang_start(b, t), lag={rank: b.rng.randint(1, 3)})
    return _Hit(f"{host}/gpu{gpu}", end)


def _planned_maintenance(b: _Builder, job: _Job, t: datetime) -> _Hit:
    """A host of the job is taken for planned maintenance; the job stops and restarts."""
    _, host, _ = _victim(b, job)
    work = b.rng.choice(("GPU firmware update", "BIOS update", "DIMM replacement", "OS patching"))
    b.event(t, host, "maintenance", {"planned": True, "scope": host, "text": f"planned: {work}"},
            severity="info", component=host, message=f"planned maintenance on {host}: {work}")
    back = b.after(t, 600, 1800)
    b.quiet.setdefault(host, []).append((t, back))
    return _Hit(host, t, ready=back)


_MECHANISMS: dict[str, Callable[[_Builder, _Job, datetime], _Hit]] = {
    "gpu_fell_off_bus": _gpu_fell_off_bus,
    "hbm_uncontained_ecc": _hbm_uncontained_ecc,
    "gpu_thermal": _gpu_thermal,
    "nvswitch_failure": _nvswitch_failure,
    "nic_down": _nic_down,
    "flapping_cable": _flapping_cable,
    "leaf_switch_down": _leaf_switch_down,
    "host_crash": _host_crash,
    "software_hang": _software_hang,
    "planned_maintenance": _planned_maintenance,
}


# ---------------------------------------------------------------------------- noise


def _correctable(b: _Builder, host: str, t: datetime, kind: str) -> str:
    """One harmless error of `kind` on `host` at `t`; returns the component it names."""
    h = b.hosts[host]
    gpu = b.rng.randrange(len(h.gpu_pci))
    if kind == "aer":
        port = f"{h.pciesw_pci[gpu * len(h.pciesw_pci) // len(h.gpu_pci)]}.0"
        if b.rng.random() < 0.5:
            target, component, driver = f"{h.gpu_pci[gpu]}.0", f"{host}/gpu{gpu}", "nvidia"
        else:
            target, component, driver = f"{h.nic_pci[gpu]}.0", f"{host}/nic{gpu}", "mlx5_core"
        b.kernel(t, host, f"pcieport {port}: AER: Corrected error received: {target}",
                 _expect("pcie_aer", severity="corrected", pci=port[:-2]))
        layer, agent = b.rng.choice((("Physical Layer", "Receiver ID"), ("Data Link Layer", "Transmitter ID")))
        b.kernel(b.after(t, 0, 0.001), host,
                 f"{driver} {target}: PCIe Bus Error: severity=Corrected, type={layer}, ({agent})",
                 _expect("pcie_aer", severity="corrected", pci=target[:-2]))
        b.kernel(b.after(t, 0.001, 0.002), host,
                 f"{driver} {target}:   device [10de:2330] error status/mask=00000001/0000e000", None)
        return component
    if kind == "edac":
        cpu, chan = b.rng.randrange(2), b.rng.randrange(8)
        b.kernel(t, host, f"EDAC MC{cpu}: 1 CE memory read error on CPU_SrcID#{cpu}_MC#{chan // 4}_Chan#"
                          f"{chan % 4}_DIMM#0 (channel:{chan % 4} slot:0 page:0x{b.rng.randrange(1 << 24):x} "
                          f"offset:0x{b.rng.randrange(4096):x} grain:32 syndrome:0x0)",
                 _expect("host_mem_ecc", type="ce", count=1))
        return host
    if kind == "sbe":
        count = b.rng.randint(1, 40)
        b.event(t, host, "gpu_ecc", {"type": "sbe", "count": count, "source": "dcgm"}, severity="info",
                component=f"{host}/gpu{gpu}", message=f"GPU {gpu} volatile single-bit ECC count {count}")
        return f"{host}/gpu{gpu}"
    if kind == "symbol":
        b.event(t, host, "nic_error", {"device": f"mlx5_{gpu}", "port": 1, "counter": "symbol_error",
                                       "count": b.rng.randint(1, 20)},
                severity="info", component=f"{host}/nic{gpu}")
        return f"{host}/nic{gpu}"
    if kind == "gpu_warm":
        temp = b.rng.randint(83, 86)
        b.event(t, host, "gpu_thermal", {"temp_c": temp, "throttle": "sw_thermal_slowdown", "source": "dcgm"},
                severity="warning", component=f"{host}/gpu{gpu}",
                message=f"GPU {gpu} temperature {temp} C, clocks throttled (sw_thermal_slowdown)")
        return f"{host}/gpu{gpu}"
    cpu = b.rng.randrange(112)
    b.kernel(t, host, f"CPU{cpu}: Package temperature above threshold, cpu clock throttled "
                      f"(total events = {b.rng.randint(1, 3000)})", _expect("host_kernel"))
    b.kernel(b.after(t, 2, 60), host, f"CPU{cpu}: Package temperature/speed normal", None)
    return host


NOISE_KINDS: tuple[tuple[str, float], ...] = (
    ("aer", 0.25), ("edac", 0.2), ("sbe", 0.2), ("symbol", 0.2), ("gpu_warm", 0.1), ("cpu_warm", 0.05),
)


def _noise(b: _Builder, start: datetime, end: datetime, per_host_hour: float) -> None:
    """Background errors at random on every host, none while a host is down."""
    hosts = sorted(b.hosts)
    span = (end - start).total_seconds()
    count = int(len(hosts) * span / 3600 * per_host_hour)
    kinds, weights = zip(*NOISE_KINDS)
    for _ in range(count):
        host = b.rng.choice(hosts)
        t = b.after(start, 0, span)
        kind = b.rng.choices(kinds, weights)[0]
        if not b.quiet_at(host, t):
            _correctable(b, host, t, kind)


# ---------------------------------------------------------------------------- jobs


def _make_jobs(b: _Builder, hosts_per_su: int, start: datetime) -> list[_Job]:
    """One job per scalable unit (so a leaf switch serves one job), leaving the SU's last
    eighth of hosts as spares."""
    by_su: dict[int, list[str]] = {}
    for name in sorted(b.hosts):
        by_su.setdefault(b.hosts[name].su, []).append(name)
    jobs = []
    for su, names in sorted(by_su.items()):
        used = names[: len(names) - min(hosts_per_su // 8, len(names) - 1)]
        pp = next(p for p in (4, 2, 1) if len(used) % p == 0)
        t = b.after(start, 60, 600)
        body = {"id": f"train-s{su}", "start": iso(t), "gpus_per_host": 8, "hosts": used,
                "parallelism": {"tp": 8, "pp": pp, "dp": len(used) // pp}}
        job = _Job(body=body, placement=Placement.from_job(body),
                   timeout_ms=b.rng.choice((600_000, 600_000, 1_800_000)),
                   step_s=b.rng.uniform(4, 12), collectives_per_s=b.rng.uniform(1, 4),
                   numel=b.rng.choice((9_801_523, 33_554_432, 131_072_000, 466_119_168)),
                   checkpoint_every=timedelta(minutes=b.rng.choice((10, 15, 20))),
                   checkpoint_s=b.rng.uniform(20, 90), run_start=t, run_step=0,
                   free_at=t + timedelta(minutes=b.rng.uniform(20, 40)),
                   pid_base=b.rng.randint(10_000, 3_000_000))
        b.event(t, job.head, "job_start", {"reason": "submitted", "world_size": job.placement.world_size},
                job=job.id)
        _startup(b, job, t)
        jobs.append(job)
    return jobs


def _interrupt(b: _Builder, job: _Job, t: datetime, hit: _Hit, planned: bool) -> None:
    """The job fails when its symptoms end (a planned stop is not a failure) and restarts
    from its last checkpoint some minutes later."""
    step = job.last_checkpoint_step(t)
    job.runs.append((job.run_start, t, job.run_step))
    if not planned:
        b.event(b.after(hit.end, 5, 40), job.head, "job_fail",
                {"reason": "worker processes exited (NCCL watchdog)"}, severity="error", job=job.id)
    restart = b.after(max(hit.end, hit.ready or hit.end), 180, 720)
    b.event(restart, job.head, "job_restart", {"reason": f"resumed from checkpoint at step {step}"},
            job=job.id)
    job.run_start, job.run_step = restart, step
    job.pid_base = b.rng.randint(10_000, 3_000_000)
    _startup(b, job, restart)
    job.free_at = restart + timedelta(minutes=b.rng.uniform(25, 60))


def _startup(b: _Builder, job: _Job, t: datetime) -> None:
    """What NCCL prints as a (re)started job initialises: lines that name NCCL and IB
    devices but report no fault, which the parsers must pass over."""
    slot = job.placement.slots[0]
    h = b.hosts[slot.host]
    devices = " ".join(f"[{i}]mlx5_{i}:1/IB" for i in range(len(h.nic_ip)))
    lines = (
        ("init.cc:1732", f"NCCL version {NCCL_VERSION}+cuda12.4"),
        ("net_ib.cc:1187", f"NET/IB : Using {devices} ; OOB ib0:{h.nic_ip[0]}<0>"),
        ("init.cc:1913", f"comm 0x{b.rng.randrange(1 << 44):x} rank 0 nranks {job.placement.world_size} "
                         f"cudaDev {slot.gpu} nvmlDev {slot.gpu} busId {h.gpu_pci[slot.gpu][5:7]}000 "
                         f"commId 0x{b.rng.randrange(1 << 64):x} - Init COMPLETE"),
    )
    at = b.after(t, 20, 60)
    for i, (where, text) in enumerate(lines):
        b.nccl(at + timedelta(milliseconds=40 * i), job, 0, where, text, None, level="INFO")


def _run_records(b: _Builder, job: _Job, end: datetime) -> None:
    """Per run: `checkpoint_save` events every interval, as the trainer posts them, and
    Megatron's progress line every five minutes from the last rank (a job-level train_step)."""
    last = job.placement.world_size - 1
    host = job.placement.slots[last].host
    every = timedelta(minutes=5)
    for start, stop, step0 in [*job.runs, (job.run_start, end, job.run_step)]:
        at = start + job.checkpoint_every
        while at + timedelta(seconds=job.checkpoint_s) < stop:
            step = step0 + int((at - start).total_seconds() / job.step_s)
            b.event(at + timedelta(seconds=job.checkpoint_s), job.head, "checkpoint_save",
                    {"step": step, "duration_s": round(job.checkpoint_s, 1)}, job=job.id)
            at += job.checkpoint_every
        at = start + every
        while at < stop:
            step = step0 + int((at - start).total_seconds() / job.step_s)
            loss = 1.7 + 9.0 / (1 + step / 400) + b.rng.uniform(-0.02, 0.02)
            line = (f"[rank{last}]:  [{at:%Y-%m-%d %H:%M:%S}] iteration {step:8d}/ 1000000 | consumed "
                    f"samples: {step * 2048:12d} | elapsed time per iteration (ms): "
                    f"{job.step_s * 1000 * b.rng.uniform(0.98, 1.02):.1f} | learning rate: 1.500000E-04 | "
                    f"global batch size:  2048 | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: "
                    f"{b.rng.uniform(0.2, 0.6):.3f} | number of skipped iterations:   0 | "
                    "number of nan iterations:   0 |")
            b.log(at, host, "train", line, _expect("train_step", step=step))  # ingest/progress.py reads it
            at += every


# ---------------------------------------------------------------------------- scenarios


def _plan(rng: random.Random, n_faults: int, jobs: int, red_herring: bool) -> list[str]:
    """Scenario types in a shuffled round robin, so every type appears once `n_faults`
    covers them; a concurrent pair counts two faults."""
    types = [t for t in SCENARIO_TYPES
             if (t != "concurrent" or jobs >= 2) and (t != "red_herring" or red_herring)]
    plan: list[str] = []
    count = 0
    while count < n_faults:
        cycle = types[:]
        rng.shuffle(cycle)
        for kind in cycle:
            if count >= n_faults:
                break
            if kind == "concurrent" and count + 2 > n_faults:
                continue
            plan.append(kind)
            count += 2 if kind == "concurrent" else 1
    return plan


def _inject(b: _Builder, job: _Job, mechanism: str, t: datetime, kind: str) -> dict[str, Any]:
    hit = _MECHANISMS[mechanism](b, job, t)
    _interrupt(b, job, t, hit, planned=mechanism == "planned_maintenance")
    cause, action = OUTCOMES[mechanism]
    entry = {"id": f"f{len(b.truth):04d}", "type": kind, "mechanism": mechanism, "job": job.id,
             "time": iso(t), "onset": iso(hit.onset or t), "root_component": hit.root, "category": category_of(cause),
             "cause": cause, "action": action, "decoys": [], "related": []}
    b.truth.append(entry)
    return entry


def scenario_set(n_faults: int = 200, seed: int = 0, hosts: int = 128, *,
                 hosts_per_su: int | None = None, start: datetime = DEFAULT_START,
                 noise_per_host_hour: float = 0.3) -> Scenario:
    """A cluster of `hosts` DGX H100-style hosts running one job per scalable unit, with
    `n_faults` injected faults (every scenario type in turn) and background noise.

    `hosts_per_su` defaults to 32 from 64 hosts up, else half the hosts (two jobs).
    ValueError for sizes that cannot hold two jobs or negative counts.
    """
    if not isinstance(n_faults, int) or n_faults < 0:
        raise ValueError(f"n_faults must be an integer >= 0, got {n_faults!r}")
    if not isinstance(hosts, int) or hosts < 4:
        raise ValueError(f"hosts must be an integer >= 4 (two jobs of two hosts), got {hosts!r}")
    su = hosts_per_su if hosts_per_su is not None else (32 if hosts >= 64 else hosts // 2)
    if not isinstance(su, int) or not 2 <= su <= hosts // 2:
        raise ValueError(f"hosts_per_su must be an integer in 2..{hosts // 2}, got {su!r}")
    topology = rail_optimized(hosts, hosts_per_su=su)
    b = _Builder(topology, seed, start)
    jobs = _make_jobs(b, su, start)
    job_hosts = {j.id: set(j.placement.hosts()) for j in jobs}
    clock = start + timedelta(minutes=15)
    for kind in _plan(b.rng, n_faults, len(jobs), red_herring=True):
        if kind == "concurrent":
            first, second = sorted(b.rng.sample(jobs, 2), key=lambda j: j.free_at)
            t = max(clock, second.free_at)
            a = _inject(b, first, b.rng.choice(_UNPLANNED), t, kind)
            c = _inject(b, second, b.rng.choice(_UNPLANNED), b.after(t, 0.5, 20), kind)
            a["related"], c["related"] = [c["id"]], [a["id"]]
        else:
            job = min(jobs, key=lambda j: (j.free_at, b.rng.random()))
            t = max(clock, job.free_at)
            mechanism = b.rng.choice(_UNPLANNED) if kind == "red_herring" else kind
            entry = _inject(b, job, mechanism, t, kind)
            if kind == "red_herring":
                others = sorted(h for h in b.hosts if h not in job_hosts[job.id] and not b.quiet_at(h, t))
                # half the decoys sit on a spare host under the job's own leaf switches
                near = [h for h in others if b.hosts[h].su == b.hosts[job.head].su]
                decoy = b.rng.choice(near if near and b.rng.random() < 0.5 else others)
                noise = b.rng.choice(("aer", "edac", "sbe", "symbol", "gpu_warm"))
                entry["decoys"] = [_correctable(b, decoy, b.after(t, -60, 60), noise)]
        clock = t + timedelta(minutes=b.rng.uniform(2, 8))
    end = max([clock, *(j.free_at for j in jobs)]) + timedelta(minutes=30)
    for job in jobs:
        _run_records(b, job, end)
        b.event(end + timedelta(seconds=b.rng.uniform(0, 60)), job.head, "job_end",
                {"reason": "completed"}, job=job.id)
    _noise(b, start, end, noise_per_host_hour)
    return Scenario(topology=topology, jobs=[j.body for j in jobs], records=b.records(), truth=b.truth)


def storm(seed: int = 0, hosts: int = 2048, *, start: datetime = DEFAULT_START) -> Scenario:
    """The storm benchmark's scenario: one job over every host (tp 8, pp 16, dp the rest),
    one GPU falls off the bus, and ten minutes later every other rank times out."""
    if not isinstance(hosts, int) or hosts < 16 or hosts % 16:
        raise ValueError(f"hosts must be a positive multiple of 16 (pp = 16), got {hosts!r}")
    topology = rail_optimized(hosts)
    b = _Builder(topology, seed, start)
    names = sorted(b.hosts)
    t0 = start + timedelta(minutes=1)
    body = {"id": "storm", "start": iso(t0), "gpus_per_host": 8, "hosts": names,
            "parallelism": {"tp": 8, "pp": 16, "dp": hosts // 16}}
    job = _Job(body=body, placement=Placement.from_job(body), timeout_ms=600_000, step_s=8.0,
               collectives_per_s=2.0, numel=466_119_168, checkpoint_every=timedelta(minutes=30),
               checkpoint_s=60.0, run_start=t0, run_step=0, free_at=t0, pid_base=b.rng.randint(10_000, 3_000_000))
    b.event(t0, job.head, "job_start", {"reason": "submitted", "world_size": job.placement.world_size},
            job=job.id)
    t = t0 + timedelta(minutes=20)
    rank, host, gpu = _victim(b, job)
    pci = b.hosts[host].gpu_pci[gpu]
    b.kernel(t, host, *_xid(pci, 79, "GPU has fallen off the bus."))
    _timeouts(b, job, _hang_start(b, t), skip={rank})
    cause, action = OUTCOMES["gpu_fell_off_bus"]
    truth = [{"id": "f0000", "type": "gpu_fell_off_bus", "mechanism": "gpu_fell_off_bus", "job": job.id,
              "time": iso(t), "onset": iso(t), "root_component": f"{host}/gpu{gpu}", "category": category_of(cause),
              "cause": cause, "action": action, "decoys": [], "related": []}]
    return Scenario(topology=topology, jobs=[body], records=b.records(), truth=truth)
