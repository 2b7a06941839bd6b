"""The harder fault families: what published accounts of large training runs say goes
wrong, written from those accounts rather than from the engine's rules.

- Llama 3 405B (arXiv 2407.21783, §3.3.4 and Table 5): 419 unexpected interruptions in
  54 days on 16,384 H100s; GPUs and their HBM the largest share, then software bugs
  (12.9 %), network switches and cables, host maintenance, NICs; the mix of classic
  mechanisms below follows that table's order of magnitude.
- MegaScale (arXiv 2402.15627, §4–5): failures show first as CUDA errors or segmentation
  faults on one rank and as NCCL timeouts on all the others; hosts whose agents fall
  silent; clocks that disagree across machines are why MegaScale aligns its traces.
- BLOOM-176B chronicles and the ml-engineering notes on diagnosing hangs (py-spy on every
  rank): a hang where every process is alive and all but one wait in NCCL, the one stuck
  elsewhere (its data loader).
- OPT-175B logbook (metaseq `projects/OPT/chronicles`): nodes that vanish without a word,
  lost GPUs, ECC errors, NCCL timeouts, and restarts from the last checkpoint.

Every scenario here runs with per-host clock skew (most hosts within ±20 s, one in 16
off by 1–3 minutes), in a month from January to September (glog's unpadded month), and
with benign events at realistic rates around the faults: correctable errors, row remaps
pending the next reset, single link flaps a job rides out, thermal warnings, agent
restarts, hung-task warnings. Silent culprits get weak hardware noise on other hosts of
their job near the fault (decoys that must not be blamed).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from faultgraph.attribution.generators import rail_optimized
from faultgraph.ingest.causes import category_of
from faultgraph.simulate import scenarios as sim

# New mechanisms → (SPEC §6 cause, action kind). A host that vanished without a word is
# blamed on the host as a whole (`chassis`: board, power or firmware; SPEC has no finer row).
OUTCOMES: dict[str, tuple[str, str]] = {
    "software_crash": ("software_bug", "restart"),
    "dataloader_deadlock": ("software_bug", "restart"),
    "dead_agent": ("chassis", "evict"),
    "aer_nic": ("nic", "evict"),
}
# The classic mechanisms that also run here, under skew and noise (planned ones excluded:
# they carry no diagnosis).
CLASSIC = tuple(m for m in sim.MECHANISMS if m != "planned_maintenance")
FAMILIES: tuple[str, ...] = (*OUTCOMES, *CLASSIC)
# Benign events per host per day (assumed rates; DCGM and kernel counters on a healthy
# fleet): kind → rate.
BENIGN_PER_HOST_DAY: dict[str, float] = {
    "aer": 0.5, "edac": 0.3, "sbe": 1.0, "symbol": 1.0, "gpu_warm": 0.2, "cpu_warm": 0.05,
    "row_remap": 0.01, "flap": 0.02, "agent_restart": 0.05, "hung_task": 0.02,
}
_EXCEPTIONS = (
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {gib:.2f} GiB. GPU {gpu} has a total capacity of "
     "79.10 GiB of which {free:.2f} MiB is free. Including non-PyTorch memory, this process has 79.08 GiB memory in use."),
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "RuntimeError: shape '[{a}, -1, 128]' is invalid for input of size {size}",
    "AssertionError",
)


def skew_clocks(b: sim._Builder) -> None:
    """Most hosts within ±20 s (chrony on a healthy fleet), one in 16 off by 1–3 minutes."""
    for host in sorted(b.hosts):
        if b.rng.random() < 1 / 16:
            seconds = b.rng.uniform(60, 180) * b.rng.choice((-1, 1))
        else:
            seconds = b.rng.uniform(-20, 20)
        b.skew[host] = timedelta(seconds=round(seconds, 3))


# ---------------------------------------------------------------------------- families


def _software_crash(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """One rank raises (out of memory, an illegal address with its XID 13/31, a shape
    mismatch, an assertion) and exits; the others wait in the next collective and time out."""
    rank, host, gpu = sim._victim(b, job)
    pick = b.rng.randrange(len(_EXCEPTIONS))
    text = _EXCEPTIONS[pick].format(gib=b.rng.uniform(0.5, 8), gpu=gpu, free=b.rng.uniform(1, 900),
                                    a=b.rng.choice((4, 8, 16)), size=b.rng.randrange(1 << 20, 1 << 30))
    if pick == 1:  # the driver reports the faulting address to the kernel log as well
        pci = b.hosts[host].gpu_pci[gpu]
        code = b.rng.choice((13, 31))
        detail = ("Graphics SM Global Exception on (GPC 4, TPC 1, SM 0): Out Of Range Address" if code == 13 else
                  "Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f_12340000. "
                  "Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ")
        b.kernel(t, host, *sim._xid(pci, code, detail, job.pid_base + gpu))
    line = f"[rank{rank}]: {text}"
    b.log(b.after(t, 0.05, 0.5), host, "train", line, sim._expect("job_fail", rank))
    if pick == 1 and b.rng.random() < 0.5:  # the rank's NCCL watchdog trips on the same CUDA error
        b.glog(b.after(t, 0.5, 2), job, rank, "ProcessGroupNCCL.cpp:1595",
               "Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was "
               "encountered", sim._expect("nccl_error", rank))
    end = sim._timeouts(b, job, sim._hang_start(b, b.after(t, 0.5, 3)), skip={rank})
    return sim._Hit(f"{host}/gpu{gpu}", end)


def _dataloader_deadlock(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """Every process alive, one stuck in its data loader: it never enters the collective
    the others wait in, so it has nothing pending and its watchdog stays silent."""
    rank, host, gpu = sim._victim(b, job)
    end = sim._timeouts(b, job, sim._hang_start(b, t), skip={rank})
    _decoys(b, job, t, host)
    return sim._Hit(f"{host}/gpu{gpu}", end)


def _dead_agent(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """A host vanishes (power, board, hard hang): none of its lines arrive, its agent
    stops with it; the liveness tracker reports it lost (or, with a long heartbeat timeout,
    only later); its ranks' ring peers may name its IPs. It comes back after a power cycle."""
    _, host, _ = sim._victim(b, job)
    if b.rng.random() < 0.7:
        b.event(b.after(t, 60, 180), host, "host_heartbeat", {"state": "lost", "source": "faultgraph"},
                severity="error", component=host, message=f"no heartbeat from {host}'s agent for 60 s")
    back = b.after(t, 900, 2400)
    b.quiet.setdefault(host, []).append((t, back))
    silent = set(job.placement.host_ranks(host))
    aborted: set[int] = set()
    if b.rng.random() < 0.5:
        for rank in sorted(silent):
            ip = b.hosts[host].nic_ip[job.placement.slots[rank].gpu]
            for peer in sim._ring_peers(job.placement, rank):
                if peer not in aborted and peer not in silent:
                    sim._peer_errors(b, job, peer, ip, b.after(t, 7, 20))
                    aborted.add(peer)
    end = sim._timeouts(b, job, sim._hang_start(b, t), skip=silent | aborted)
    _decoys(b, job, t, host)
    return sim._Hit(host, end, ready=back)


def _aer_nic(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """An uncorrectable fatal PCIe error on a NIC: the root port reports it naming the
    NIC as source, the NIC's driver its details; the NIC stops, its ring peers' queue pairs
    to it fail, the job hangs."""
    rank, host, nic = sim._victim(b, job)
    h = b.hosts[host]
    port = f"{h.pciesw_pci[nic * len(h.pciesw_pci) // len(h.nic_pci)]}.0"
    device = f"{h.nic_pci[nic]}.0"
    b.kernel(t, host, f"pcieport {port}: AER: Uncorrected (Fatal) error received: {device}",
             sim._expect("pcie_aer", severity="fatal"))
    b.kernel(b.after(t, 0, 0.001), host,
             f"mlx5_core {device}: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)",
             sim._expect("pcie_aer", severity="fatal", pci=device[:-2]))
    b.kernel(b.after(t, 0.5, 3), host, f"mlx5_core {device}: poll_health:174: device's health compromised - reached miss count",
             sim._expect("nic_error", pci=device[:-2]))
    end = sim._network_break(b, job, rank, t)
    return sim._Hit(f"{host}/nic{nic}", end)


_FAMILIES = {
    "software_crash": _software_crash,
    "dataloader_deadlock": _dataloader_deadlock,
    "dead_agent": _dead_agent,
    "aer_nic": _aer_nic,
}


def _decoys(b: sim._Builder, job: sim._Job, t: datetime, culprit: str) -> list[str]:
    """Weak hardware noise on other hosts of the job near a silent fault."""
    others = [h for h in job.placement.hosts() if h != culprit and not b.quiet_at(h, t)]
    found = []
    for host in b.rng.sample(others, min(len(others), b.rng.randint(1, 3))):
        found.append(benign(b, host, b.after(t, -90, 90), b.rng.choice(("aer", "sbe", "row_remap", "symbol"))))
    return found


# ---------------------------------------------------------------------------- benign events


def benign(b: sim._Builder, host: str, t: datetime, kind: str) -> str:
    """One harmless event of `kind`; returns the component it names."""
    h = b.hosts[host]
    gpu = b.rng.randrange(len(h.gpu_pci))
    if kind == "row_remap":  # XID 63: a row remap recorded, applied at the next GPU reset
        b.kernel(t, host, *sim._xid(h.gpu_pci[gpu], 63, "Row Remapper: New row marked for remapping, reset gpu to activate."))
        return f"{host}/gpu{gpu}"
    if kind == "flap":  # a link drops for a second and comes back; NCCL retries ride it out
        sim._carrier(b, host, gpu, t, up=False)
        sim._carrier(b, host, gpu, b.after(t, 0.5, 4), up=True)
        return f"{host}/nic{gpu}"
    if kind == "agent_restart":  # the agent restarts (upgrade, OOM-killed): heartbeats stop, then resume
        b.event(t, host, "host_heartbeat", {"state": "lost", "source": "faultgraph"}, severity="error",
                component=host, message=f"no heartbeat from {host}'s agent for 60 s")
        b.event(b.after(t, 30, 300), host, "host_heartbeat", {"state": "ok"}, severity="info", component=host)
        return host
    if kind == "hung_task":
        b.kernel(t, host, f"INFO: task jbd2/nvme0n1p2-8:{b.rng.randint(600, 2000)} blocked for more than 120 seconds.",
                 sim._expect("host_kernel"))
        return host
    return sim._correctable(b, host, t, kind)


def benign_stream(b: sim._Builder, start: datetime, end: datetime, scale: float = 1.0) -> int:
    """Benign events on every host at `BENIGN_PER_HOST_DAY` × `scale`; returns how many."""
    hosts = sorted(b.hosts)
    days = (end - start).total_seconds() / 86400
    span = (end - start).total_seconds()
    count = 0
    flaps: dict[str, list[datetime]] = {}
    for kind, rate in BENIGN_PER_HOST_DAY.items():
        for _ in range(int(len(hosts) * days * rate * scale + b.rng.random())):
            host, t = b.rng.choice(hosts), b.after(start, 0, span)
            if b.quiet_at(host, t):
                continue
            # At real rates a host's links flap a few times a year: two flaps within an hour
            # would be a failing cable, not noise, however much `scale` packs events together.
            if kind == "flap":
                if any(abs(t - other) < timedelta(hours=1) for other in flaps.get(host, ())):
                    continue
                flaps.setdefault(host, []).append(t)
            benign(b, host, t, kind)
            count += 1
    return count


# ---------------------------------------------------------------------------- scenarios


def random_start(rng: random.Random) -> datetime:
    """A moment in January–September 2026, when glog's month has one digit."""
    return datetime(2026, rng.randint(1, 9), rng.randint(1, 28), rng.randint(0, 23), tzinfo=UTC)


def hard_set(n_faults: int = 100, seed: int = 0, hosts: int = 128, *, hosts_per_su: int | None = None,
             benign_scale: float = 24.0) -> sim.Scenario:
    """`n_faults` faults from `FAMILIES` in a shuffled round robin, one at a time per job,
    on a skewed cluster in a month from 1 to 9, with benign events around them.

    `benign_scale` multiplies the daily benign rates: a scenario spans hours, not days, so
    the default packs about a day's benign events per host into it."""
    return fault_set(FAMILIES, _inject, n_faults, seed, hosts, hosts_per_su=hosts_per_su, benign_scale=benign_scale)


# Lays one fault of a family into a job at a moment; returns its truth entry.
Inject = Callable[[sim._Builder, sim._Job, str, datetime], dict[str, Any]]


def fault_set(families: Sequence[str], inject: Inject, n_faults: int, seed: int, hosts: int, *,
              hosts_per_su: int | None = None, benign_scale: float = 24.0) -> sim.Scenario:
    """The plan every postmortem-style set shares: `families` in a shuffled round robin,
    `inject`ed one at a time per job, on a skewed cluster with benign events around them.

    ValueError for a negative or non-integer count or fewer than 4 hosts."""
    if not isinstance(n_faults, int) or n_faults < 0:
        raise ValueError(f"n_faults must be an integer >= 0, got {n_faults!r}")
    if not isinstance(hosts, int) or hosts < 4:
        raise ValueError(f"hosts must be an integer >= 4 (two jobs of two hosts), got {hosts!r}")
    su = hosts_per_su if hosts_per_su is not None else (32 if hosts >= 64 else hosts // 2)
    rng = random.Random(seed)
    start = random_start(rng)
    topology = rail_optimized(hosts, hosts_per_su=su)
    b = sim._Builder(topology, seed, start)
    skew_clocks(b)
    jobs = sim._make_jobs(b, su, start)
    clock = start + timedelta(minutes=15)
    plan: list[str] = []
    while len(plan) < n_faults:
        cycle = list(families)
        b.rng.shuffle(cycle)
        plan += cycle[: n_faults - len(plan)]
    for family in plan:
        job = min(jobs, key=lambda j: (j.free_at, b.rng.random()))
        t = max(clock, job.free_at)
        inject(b, job, family, t)
        clock = t + timedelta(minutes=b.rng.uniform(2, 8))
    end = max([clock, *(j.free_at for j in jobs)]) + timedelta(minutes=30)
    for job in jobs:
        sim._run_records(b, job, end)
        b.event(end + timedelta(seconds=b.rng.uniform(0, 60)), job.head, "job_end", {"reason": "completed"}, job=job.id)
    benign_stream(b, start, end, scale=benign_scale)
    return sim.Scenario(topology=topology, jobs=[j.body for j in jobs], records=b.records(), truth=b.truth)


def _inject(b: sim._Builder, job: sim._Job, family: str, t: datetime) -> dict[str, Any]:
    if family in _FAMILIES:
        hit = _FAMILIES[family](b, job, t)
        cause, action = OUTCOMES[family]
    else:
        hit = sim._MECHANISMS[family](b, job, t)
        cause, action = sim.OUTCOMES[family]
    sim._interrupt(b, job, t, hit, planned=False)
    entry = {"id": f"f{len(b.truth):04d}", "type": family, "mechanism": family, "job": job.id, "time": sim.iso(t),
             "onset": sim.iso(hit.onset or t), "root_component": hit.root, "category": category_of(cause),
             "cause": cause, "action": action, "decoys": [], "related": []}
    b.truth.append(entry)
    return entry


def quiet_week(hosts: int = 2048, *, days: float = 7.0, seed: int = 0) -> sim.Scenario:
    """A fleet with no faults for `days`: one job per scalable unit checkpointing away,
    skewed clocks, and benign events at the realistic rates. Nothing here is an interruption."""
    rng = random.Random(seed)
    start = random_start(rng)
    topology = rail_optimized(hosts)
    b = sim._Builder(topology, seed, start)
    skew_clocks(b)
    jobs = sim._make_jobs(b, 32 if hosts >= 64 else hosts // 2, start)
    end = start + timedelta(days=days)
    for job in jobs:
        sim._run_records(b, job, end)
    benign_stream(b, start, end)
    return sim.Scenario(topology=topology, jobs=[j.body for j in jobs], records=b.records(), truth=[])
