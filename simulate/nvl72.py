"""GB200 NVL72 fault families for the simulator (`faultgraph simulate --layout gb200-nvl72`).

Racks of 18 compute trays, two jobs per rack (9 trays each, 36 GPUs), written with the same
record formats and helpers as `scenarios.py` (kernel lines under a syslog header, PyTorch
watchdog lines, ground truth per interrupted job). Families:

- `nvl72_nvswitch_chip`: an NVSwitch chip in a switch tray fails. Its switch tray's NVOS
  logs fatal SXids (`nvidia-nvswitch<n>:` on host `rackNN-nvswT`), GPUs on several compute
  trays of the rack log NVLink5 XIDs (144–150), and every job on the rack times out. Truth:
  the chip (`rackNN/nvswitchK`), for each job of the rack.
- `nvl72_tray_gpu`: a GPU of one compute tray falls off the bus (XID 79): its job only.
- `nvl72_tray_nvlink`: one GPU's NVLink5 errors on a single tray (a GPU-side link fault):
  the GPU, its job only — the rack's chips are not to blame for one tray's errors.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from faultgraph.attribution.generators import (
    NVL72_CHIPS_PER_SWITCH_TRAY,
    NVL72_TRAYS,
    gb200_nvl72,
    nvl72_switch_tray,
)
from faultgraph.attribution.placement import Placement
from faultgraph.ingest.causes import category_of
from faultgraph.simulate.scenarios import (
    _SXID_FATAL,
    DEFAULT_START,
    Scenario,
    _Builder,
    _correctable,
    _expect,
    _fell_off_bus,
    _Hit,
    _interrupt,
    _Job,
    _run_records,
    _startup,
    _timeouts,
    _xid,
    iso,
)

OUTCOMES: dict[str, tuple[str, str]] = {
    "nvl72_nvswitch_chip": ("nvswitch", "restart"),
    "nvl72_tray_gpu": ("gpu_fell_off_bus", "evict"),
    "nvl72_tray_nvlink": ("nvlink", "evict"),
}
MECHANISMS: tuple[str, ...] = tuple(OUTCOMES)
# NVLink5 XIDs (xid.toml, cause nvlink) and the text the driver prints with them.
_NVLINK5 = ((144, "NVLink SAW error"), (145, "NVLink RLW error"), (146, "NVLink TLW error"),
            (147, "NVLink TREX error"), (149, "NVLink NETIR error"))
GPUS_PER_TRAY = 4


def _make_jobs(b: _Builder, racks: int, start: datetime) -> list[_Job]:
    """Two jobs per rack, nine compute trays each (tp 4 inside a tray, dp across trays)."""
    jobs = []
    hosts = sorted(b.hosts)
    for r in range(racks):
        trays = hosts[r * NVL72_TRAYS:(r + 1) * NVL72_TRAYS]
        for half, used in enumerate((trays[:9], trays[9:])):
            t = b.after(start, 60, 600)
            body = {"id": f"train-r{r:02d}-{half}", "start": iso(t), "gpus_per_host": GPUS_PER_TRAY, "hosts": used,
                    "parallelism": {"tp": GPUS_PER_TRAY, "pp": 1, "dp": len(used)}}
            job = _Job(body=body, placement=Placement.from_job(body),
                       timeout_ms=b.rng.choice((600_000, 600_000, 1_800_000)),
                       step_s=b.rng.uniform(4, 12), collectives_per_s=b.rng.uniform(1, 4),
                       numel=b.rng.choice((9_801_523, 33_554_432, 131_072_000)),
                       checkpoint_every=timedelta(minutes=b.rng.choice((10, 15, 20))),
                       checkpoint_s=b.rng.uniform(20, 90), run_start=t, run_step=0,
                       free_at=t + timedelta(minutes=b.rng.uniform(20, 40)),
                       pid_base=b.rng.randint(10_000, 3_000_000))
            b.event(t, job.head, "job_start", {"reason": "submitted", "world_size": job.placement.world_size}, job=job.id)
            _startup(b, job, t)
            jobs.append(job)
    return jobs


def _rack_of(job: _Job) -> str:
    return job.id.split("-")[1].replace("r", "rack", 1)


def _nvlink_xid(b: _Builder, job: _Job, host: str, gpu: int, t: datetime) -> None:
    code, text = b.rng.choice(_NVLINK5)
    link = b.rng.randrange(18)
    line, expect = _xid(b.hosts[host].gpu_pci[gpu], code, f"{text} on link {link}", job.pid_base + gpu)
    b.kernel(t, host, line, expect)


def _chip(b: _Builder, jobs: list[_Job], t: datetime) -> _Hit:
    """A failing chip: SXids from its switch tray, NVLink5 XIDs on several trays, every job
    of the rack hangs."""
    rack = _rack_of(jobs[0])
    k = b.rng.randrange(NVL72_TRAYS)
    tray, local = nvl72_switch_tray(rack, k // NVL72_CHIPS_PER_SWITCH_TRAY), k % NVL72_CHIPS_PER_SWITCH_TRAY
    pci = f"0000:0{3 + local}:00.0"
    for i in range(b.rng.randint(1, 2)):  # often one fatal SXid, then the chip is fenced off
        code, text = b.rng.choice(_SXID_FATAL)
        at = b.after(t, 0.0001 * i, 0.0001 * i + 0.01)
        line = f"nvidia-nvswitch{local}: SXid (PCI:{pci}): {code}, Fatal, Link {b.rng.randrange(72):02d} {text}"
        b.log(at, tray, "kmsg", f"{at:%Y-%m-%dT%H:%M:%S.%f}+00:00 {tray} kernel: {line}",
              _expect("nvswitch_error", sxid=code, nvswitch=local, pci=pci.split(".")[0]))
    trays = sorted({h for job in jobs for h in job.placement.hosts()})
    for host in b.rng.sample(trays, b.rng.randint(3, 8)):
        job = next(j for j in jobs if host in j.placement.hosts())
        for gpu in b.rng.sample(range(GPUS_PER_TRAY), b.rng.randint(1, 2)):
            for _ in range(b.rng.randint(1, 3)):  # a GPU logs each of its links that went down
                _nvlink_xid(b, job, host, gpu, b.after(t, 0.05, 2.0))
    end = max(_timeouts(b, job, t - timedelta(microseconds=b.rng.randint(0, 1_500_000))) for job in jobs)
    return _Hit(f"{rack}/nvswitch{k}", end)


def _tray_gpu(b: _Builder, job: _Job, t: datetime) -> _Hit:
    rank = b.rng.randrange(job.placement.world_size)
    slot = job.placement.slots[rank]
    _fell_off_bus(b, slot.host, slot.gpu, t)
    end = _timeouts(b, job, t - timedelta(microseconds=b.rng.randint(0, 1_500_000)), skip={rank})
    return _Hit(f"{slot.host}/gpu{slot.gpu}", end)


def _tray_nvlink(b: _Builder, job: _Job, t: datetime) -> _Hit:
    host = b.rng.choice(job.placement.hosts())
    gpu = b.rng.randrange(GPUS_PER_TRAY)
    for i in range(b.rng.randint(1, 3)):
        _nvlink_xid(b, job, host, gpu, b.after(t, 0.01 * i, 0.01 * i + 0.5))
    end = _timeouts(b, job, t - timedelta(microseconds=b.rng.randint(0, 1_500_000)))
    return _Hit(f"{host}/gpu{gpu}", end)


# Background noise as scenarios.py draws it, less PCIe AER: a compute tray's GPUs hang off
# Grace over NVLink-C2C, with no PCIe switch port to report it.
_NOISE_KINDS = (("edac", 0.25), ("sbe", 0.3), ("symbol", 0.3), ("gpu_warm", 0.15))


def _noise(b: _Builder, start: datetime, end: datetime, per_host_hour: float) -> None:
    hosts = sorted(b.hosts)
    span = (end - start).total_seconds()
    kinds, weights = [k for k, _ in _NOISE_KINDS], [w for _, w in _NOISE_KINDS]
    for _ in range(int(len(hosts) * span / 3600 * per_host_hour)):
        host, t = b.rng.choice(hosts), b.after(start, 0, span)
        if not b.quiet_at(host, t):
            _correctable(b, host, t, b.rng.choices(kinds, weights)[0])


def _truth(b: _Builder, mechanism: str, job: _Job, t: datetime, hit: _Hit) -> dict[str, Any]:
    cause, action = OUTCOMES[mechanism]
    entry = {"id": f"f{len(b.truth):04d}", "type": mechanism, "mechanism": mechanism, "job": job.id, "time": iso(t),
             "onset": iso(t), "root_component": hit.root, "category": category_of(cause), "cause": cause,
             "action": action, "decoys": [], "related": []}
    b.truth.append(entry)
    return entry


def scenario_set(n_faults: int = 60, seed: int = 0, racks: int = 4, *, start: datetime = DEFAULT_START,
                 noise_per_host_hour: float = 0.3) -> Scenario:
    """`racks` GB200 NVL72 racks, two jobs each, `n_faults` faults (the families in turn)."""
    if not isinstance(racks, int) or racks < 1:
        raise ValueError(f"racks must be an integer >= 1, got {racks!r}")
    if not isinstance(n_faults, int) or n_faults < 0:
        raise ValueError(f"n_faults must be an integer >= 0, got {n_faults!r}")
    topology = gb200_nvl72(racks=racks)
    b = _Builder(topology, seed, start)
    jobs = _make_jobs(b, racks, start)
    clock = start + timedelta(minutes=15)
    for n in range(n_faults):
        mechanism = MECHANISMS[n % len(MECHANISMS)]
        if mechanism == "nvl72_nvswitch_chip":
            rack = b.rng.choice(sorted({_rack_of(j) for j in jobs}))
            hit_jobs = [j for j in jobs if _rack_of(j) == rack]
            t = max([clock, *(j.free_at for j in hit_jobs)])
            hit = _chip(b, hit_jobs, t)
            entries = [_truth(b, mechanism, job, t, hit) for job in hit_jobs]
            for entry in entries:
                entry["related"] = [e["id"] for e in entries if e is not entry]
            for job in hit_jobs:
                _interrupt(b, job, t, hit, planned=False)
        else:
            job = min(jobs, key=lambda j: (j.free_at, b.rng.random()))
            t = max(clock, job.free_at)
            hit = (_tray_gpu if mechanism == "nvl72_tray_gpu" else _tray_nvlink)(b, job, t)
            _truth(b, mechanism, job, t, hit)
            _interrupt(b, job, t, hit, planned=False)
        clock = t + timedelta(minutes=b.rng.uniform(2, 8))
    end = max([clock, *(j.free_at for j in jobs)]) + timedelta(minutes=30)
    for job in jobs:
        _run_records(b, job, end)
        b.event(end + timedelta(seconds=b.rng.uniform(0, 60)), job.head, "job_end", {"reason": "completed"}, job=job.id)
    _noise(b, start, end, noise_per_host_hour)
    return Scenario(topology=topology, jobs=[j.body for j in jobs], records=b.records(), truth=b.truth)
