"""Fail-slow scenarios: jobs that keep running but slower, with the ground truth.

Each job of `scenario_set` runs 4 DGX-style hosts (tp 8 inside a host, dp across hosts,
so rail `i` carries the data-parallel traffic of every host's GPU `i`) and posts one
`train_step` per rank per step, as `faultgraph.train` does, with `compute_ms` and
`wait_ms`. Every job warms up, evaluates every `EVAL_EVERY` steps (one long step) and
checkpoints every 20 minutes (one long step plus a `checkpoint_save`), with per-rank
jitter of 1.5–4 %. One family per job:

- `gpu_throttle_reported`: one GPU computes 15–60 % slower and the agent reports
  `gpu_perf` with a hardware throttle reason; `gpu_throttle_silent`: the same, no report.
- `slow_host`: all ranks of one host compute slower (a starved CPU, a bad DIMM).
- `pcie_degraded`: one GPU's PCIe link trained at x8 (or gen 4): `pcie_link` reported,
  its rank computes 10–30 % slower.
- `flaky_nic`: one NIC retransmits: waits grow on its rail (the timing model's assumption,
  following the issue: the ranks of the rail block in the slowed collective while the
  others block less); the NIC's `nic_error` counters are posted in half the jobs.
- `decoy_capped_gpu`: a GPU silently slow as in `gpu_throttle_silent`, plus another GPU
  reported under a software power cap (`sw_power_cap`) that slows nothing.
- `healthy`: no slowdown; half of them carry the capped-GPU report too. No incident is right.

The model is ours (not a trace): timings are a straggler model where a step lasts as
long as its slowest rank's compute plus communication, and every other rank waits.
"""

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from statistics import median
from typing import Any

from faultgraph.attribution.generators import rail_optimized
from faultgraph.attribution.topology import link_id
from faultgraph.ingest.causes import category_of
from faultgraph.simulate.scenarios import Scenario, iso

FAMILIES = ("gpu_throttle_reported", "gpu_throttle_silent", "slow_host", "pcie_degraded", "flaky_nic",
            "decoy_capped_gpu", "healthy")
START = datetime(2026, 11, 29, tzinfo=UTC)
HOSTS_PER_JOB = 4
GPUS = 8
EVAL_EVERY = 150
CHECKPOINT_EVERY = timedelta(minutes=20)


@dataclass
class _Job:
    id: str
    hosts: list[str]
    start: datetime
    step_s: float
    compute_s: float
    jitter: float
    rng: random.Random
    # per rank: (from, to, factor) extra compute, and (from, to, extra wait s)
    slow: list[tuple[datetime, datetime, int, float]] = field(default_factory=list)
    waits: list[tuple[datetime, datetime, set[int], float, float]] = field(default_factory=list)

    @property
    def body(self) -> dict[str, Any]:
        return {"id": self.id, "start": iso(self.start), "gpus_per_host": GPUS, "hosts": self.hosts,
                "parallelism": {"tp": GPUS, "pp": 1, "dp": len(self.hosts)}}


def _event(t: datetime, host: str, kind: str, attrs: dict, **envelope: Any) -> dict:
    return {"type": "event", "time": iso(t), "host": host,
            "event": {"time": iso(t), "host": host, "kind": kind, "attrs": attrs, **envelope}}


def _steps(job: _Job, end: datetime) -> tuple[list[dict], list[tuple[datetime, float]]]:
    """Per-rank `train_step` events, a `checkpoint_save` at each checkpoint step; and the
    job's ordinary steps (no warm-up, evaluation or checkpoint) as (start, period s)."""
    rng, ranks = job.rng, len(job.hosts) * GPUS
    out: list[dict] = []
    ordinary: list[tuple[datetime, float]] = []
    t, step, next_save = job.start, 0, job.start + CHECKPOINT_EVERY
    comm = job.step_s - job.compute_s
    while t < end:
        step += 1
        compute = []
        for rank in range(ranks):
            c = job.compute_s * (1 + rng.gauss(0, job.jitter))
            c *= 1 + sum(f for a, b, r, f in job.slow if r == rank and a <= t < b)
            compute.append(max(0.1, c))
        extra = [0.0] * ranks
        for a, b, hit, near, far in job.waits:
            if a <= t < b:
                for rank in range(ranks):
                    extra[rank] += near * (1 + rng.gauss(0, 0.05)) if rank in hit else far
        warm = 2.5 if step <= 5 else 1.4 if step <= 12 else 1.0
        long = 4.0 if step % EVAL_EVERY == 0 else 1.0
        saving = t >= next_save
        duration = (max(compute) + comm * (1 + rng.gauss(0, job.jitter))) * warm * long + (45.0 if saving else 0.0)
        period = duration + max(extra)
        if warm == long == 1.0 and not saving:
            ordinary.append((t, period))
        t += timedelta(seconds=period)
        for rank in range(ranks):
            # Every rank's step lasts the period; what it spent blocked in collectives
            # differs (the rest of the network delay falls outside them for the far ranks).
            wait = duration - compute[rank] * warm + extra[rank]
            out.append(_event(t + timedelta(milliseconds=rng.uniform(0, 30)), job.hosts[rank // GPUS], "train_step",
                              {"step": step, "duration_ms": round(period * 1000, 1), "compute_ms": round(compute[rank] * warm * 1000, 1),
                               "wait_ms": round(wait * 1000, 1)}, job=job.id, rank=rank))
        if saving:
            out.append(_event(t, job.hosts[0], "checkpoint_save", {"step": step, "duration_s": 45.0}, job=job.id))
            next_save = t + CHECKPOINT_EVERY
    return out, ordinary


def _slowdown(ordinary: list[tuple[datetime, float]], onset: datetime, end: datetime) -> float:
    """The fraction of speed the job really lost: median step before the onset against inside."""
    before = [p for t, p in ordinary if onset - timedelta(minutes=15) <= t < onset]
    during = [p for t, p in ordinary if onset <= t < end]
    return round(1 - median(before) / median(during), 4)


def _gpu_perf(t: datetime, host: str, gpu: int, clock: float, throttle: list[str], power: float) -> dict:
    return _event(t, host, "gpu_perf", {"sm_clock_mhz": clock, "max_sm_clock_mhz": 1980.0, "power_w": power,
                                        "throttle": throttle, "util": 100.0}, component=f"{host}/gpu{gpu}")


def _inject(family: str, job: _Job, onset: datetime, end: datetime, topology: dict) -> tuple[dict, list[dict]]:
    """Make `job` slow from `onset` to `end` as `family` does; the truth and the health events."""
    rng = job.rng
    host, gpu = rng.choice(job.hosts), rng.randrange(GPUS)
    rank = job.hosts.index(host) * GPUS + gpu
    factor = rng.uniform(0.15, 0.6)
    records: list[dict] = []
    decoys: list[str] = []
    if family in ("gpu_throttle_reported", "gpu_throttle_silent", "decoy_capped_gpu"):
        job.slow.append((onset, end, rank, factor))
        root, cause = f"{host}/gpu{gpu}", "faulty_gpu"
        if family == "gpu_throttle_reported":
            reason = rng.choice(("hw_slowdown", "hw_thermal"))
            cause = {"hw_slowdown": "faulty_gpu", "hw_thermal": "gpu_thermal"}[reason]
            records.append(_gpu_perf(onset + timedelta(seconds=rng.uniform(-20, 40)), host, gpu,
                                     round(1980 / (1 + factor)), [reason], 520.0))
        if family == "decoy_capped_gpu":
            other_host, other_gpu = rng.choice([(h, g) for h in job.hosts for g in range(GPUS) if (h, g) != (host, gpu)])
            records.append(_gpu_perf(onset - timedelta(minutes=rng.uniform(-5, 10)), other_host, other_gpu, 1410.0,
                                     ["sw_power_cap"], 450.0))
            decoys.append(f"{other_host}/gpu{other_gpu}")
    elif family == "slow_host":
        for g in range(GPUS):
            job.slow.append((onset, end, job.hosts.index(host) * GPUS + g, factor))
        root, cause = host, "cpu"
    elif family == "pcie_degraded":
        factor = rng.uniform(0.1, 0.3)
        job.slow.append((onset, end, rank, factor))
        pci = next(c["attrs"]["pci"] for c in topology["components"] if c["id"] == f"{host}/gpu{gpu}")
        width, speed = rng.choice(((8, 32.0), (16, 16.0), (4, 32.0)))
        records.append(_event(onset + timedelta(seconds=rng.uniform(-60, 60)), host, "pcie_link",
                              {"bdf": f"{pci}.0", "width": width, "max_width": 16, "speed_gts": speed, "max_speed_gts": 32.0}))
        root, cause = link_id(f"{host}/gpu{gpu}", f"{host}/pciesw{gpu // 2}"), "io_expansion_board"
    elif family == "flaky_nic":
        extra = job.step_s * factor
        rail = {r for r in range(len(job.hosts) * GPUS) if r % GPUS == gpu}
        job.waits.append((onset, end, rail, extra, 0.3 * extra))
        root, cause = f"{host}/nic{gpu}", "nic"
        if rng.random() < 0.5:
            t = onset + timedelta(seconds=rng.uniform(0, 60))
            while t < end:
                records.append(_event(t, host, "nic_error", {"device": f"mlx5_{gpu}", "port": 1, "counter": "symbol_error",
                                                             "count": rng.randint(50, 5000)}, component=f"{host}/nic{gpu}"))
                t += timedelta(minutes=rng.uniform(1, 3))
    else:
        raise ValueError(f"unknown fail-slow family {family!r}")
    truth = {"mechanism": family, "job": job.id, "time": iso(onset), "onset": iso(onset),
             "end": iso(end), "root_component": root, "cause": cause, "category": category_of(cause),
             "decoys": decoys}
    return truth, records


def scenario_set(per_family: int = 3, *, seed: int = 0, minutes: int = 75, families: tuple[str, ...] = FAMILIES) -> Scenario:
    """`per_family` jobs of each family, on their own hosts, `minutes` long each."""
    rng = random.Random(seed)
    unknown = set(families) - set(FAMILIES)
    if unknown or per_family < 1:
        raise ValueError(f"families must be among {', '.join(FAMILIES)} and per_family >= 1")
    plan = [family for family in families for _ in range(per_family)]
    hosts = HOSTS_PER_JOB * len(plan)
    topology = rail_optimized(max(hosts, 8), hosts_per_su=min(max(hosts, 8) // 2, 32))
    names = sorted(c["id"] for c in topology["components"] if c["type"] == "host")
    jobs, records, truth = [], [], []
    for index, family in enumerate(plan):
        start = START + timedelta(minutes=rng.uniform(0, 30))
        step_s = rng.uniform(6, 12)
        job = _Job(id=f"slow-{index:03d}", hosts=names[index * HOSTS_PER_JOB:(index + 1) * HOSTS_PER_JOB], start=start,
                   step_s=step_s, compute_s=step_s * rng.uniform(0.6, 0.8), jitter=rng.uniform(0.015, 0.04),
                   rng=random.Random(rng.random()))
        end = start + timedelta(minutes=minutes)
        records.append(_event(start, job.hosts[0], "job_start", {"reason": "submitted"}, job=job.id))
        if family == "healthy":
            if rng.random() < 0.5:
                host = rng.choice(job.hosts)
                records.append(_gpu_perf(start + timedelta(minutes=rng.uniform(5, 40)), host, rng.randrange(GPUS), 1410.0,
                                         ["sw_power_cap"], 450.0))
        else:
            onset = start + timedelta(minutes=rng.uniform(20, 35))
            recovered = onset + timedelta(minutes=rng.uniform(15, 30)) if rng.random() < 0.5 else end
            fault, health = _inject(family, job, onset, recovered, topology)
            truth.append({"id": f"s{index:04d}", **fault, "end": iso(recovered) if recovered < end else None})
            records += health
        steps, ordinary = _steps(job, end)
        records += steps
        if family != "healthy":
            truth[-1]["slowdown"] = _slowdown(ordinary, onset, recovered)
        records.append(_event(end, job.hosts[0], "job_end", {"reason": "completed"}, job=job.id))
        jobs.append(job.body)
    records.sort(key=lambda r: (r["time"], r["host"]))
    healthy = [job["id"] for job, family in zip(jobs, plan, strict=True) if family == "healthy"]
    truth += [{"id": f"h-{job}", "mechanism": "healthy", "job": job, "root_component": None} for job in healthy]
    return Scenario(topology=topology, jobs=jobs, records=records, truth=truth)


# ------------------------------------------------------------------------- scoring

# A degradation answers a fault when it is of the fault's job and began this close to the onset.
MATCH = timedelta(minutes=15)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def score(found: list[dict], truth: list[dict]) -> dict:
    """Per family: faults, top-1, top-3, missed, slowdown within ×2, decoys blamed; spurious on healthy jobs."""
    rows: dict[str, dict] = {}
    degradations = [i for i in found if i.get("type") == "degradation"]
    claimed: set[str] = set()
    for fault in truth:
        row = rows.setdefault(fault["mechanism"], {"faults": 0, "top1": 0, "top3": 0, "missed": 0, "slowdown_x2": 0,
                                                    "decoy_blamed": 0, "spurious": 0})
        row["faults"] += 1
        mine = [i for i in degradations if i["job"] == fault["job"]]
        if fault["mechanism"] == "healthy":
            row["spurious"] += len(mine)
            claimed.update(i["id"] for i in mine)
            continue
        onset = _time(fault["onset"])
        near = [i for i in mine if abs(_time(i["interruption"]["start"]) - onset) <= MATCH]
        if not near:
            row["missed"] += 1
            continue
        best = min(near, key=lambda i: abs(_time(i["interruption"]["start"]) - onset))
        claimed.add(best["id"])
        row["top1"] += best["root_cause"]["component"] == fault["root_component"]
        row["top3"] += fault["root_component"] in [c["component"] for c in best["candidates"][:3]]
        row["slowdown_x2"] += 0.5 <= (best["slowdown"] or 0) / fault["slowdown"] <= 2
        row["decoy_blamed"] += best["root_cause"]["component"] in fault.get("decoys", [])
    for row in rows.values():
        row["top1_pct"] = round(100 * row["top1"] / row["faults"], 1)
    extra = [i["id"] for i in degradations if i["id"] not in claimed]
    return {"families": rows, "unmatched_degradations": len(extra)}


def _series(seen: list[tuple[dict, datetime]]) -> list:
    """The job-level series the service folds: mean duration over the ranks, by step."""
    from faultgraph.attribution.stragglers import Sample

    sums: dict[int, list[float]] = {}
    last: dict[int, datetime] = {}
    for event, t in seen:
        step = event["attrs"]["step"]
        sums.setdefault(step, []).append(event["attrs"]["duration_ms"])
        last[step] = max(t, last.get(step, t))
    return [Sample(step, last[step], sum(v) / len(v)) for step, v in sorted(sums.items())]


def _rank_means(seen: list[tuple[dict, datetime]], placement: Any, low: datetime, high: datetime) -> dict:
    """Per rank, mean duration, compute and wait over (low, high], as the service's SQL reads them."""
    from faultgraph.attribution.stragglers import RankTiming

    acc: dict[int, list[dict]] = {}
    for event, t in seen:
        if low <= t <= high:
            acc.setdefault(event["rank"], []).append(event["attrs"])
    return {rank: RankTiming(rank, placement.host_of(rank), *(sum(a[k] for a in v) / len(v)
                             for k in ("duration_ms", "compute_ms", "wait_ms"))) for rank, v in acc.items()}


def detection_minutes(scenario: Scenario, *, horizon: int = 20) -> dict[str, list[int | None]]:
    """Per family, how many minutes of event time after each onset the detector first names
    the right culprit, feeding it only what had arrived by then (None: not within `horizon`).

    In process, over the same pure functions the service runs: the series is the per-step
    mean over ranks, the windows' per-rank means are taken from the records directly.
    """
    from faultgraph.attribution.placement import Placement
    from faultgraph.attribution.resolve import Resolver
    from faultgraph.attribution.stragglers import episodes, localise, windows
    from faultgraph.attribution.topology import Topology

    topology = Topology.from_dict(scenario.topology)
    resolver = Resolver(topology)
    by_job: dict[str, list[dict]] = {}
    for record in scenario.records:
        by_job.setdefault(record["event"].get("job") or "", []).append(record["event"])
    found: dict[str, list[int | None]] = {}
    for fault in scenario.truth:
        if fault["mechanism"] == "healthy":
            continue
        body = next(j for j in scenario.jobs if j["id"] == fault["job"])
        placement, onset = Placement.from_job(body), _time(fault["onset"])
        steps = [(e, _time(e["time"])) for e in by_job[fault["job"]] if e["kind"] == "train_step"]
        reports = [e for e in by_job.get("", []) if e["kind"] in ("gpu_perf", "pcie_link", "nic_error") and e["host"] in body["hosts"]]
        health = [{**e, "id": f"h{i}", "time": _time(e["time"]),
                   "component": e.get("component") or resolver.resolve(e, placement) or e["host"]} for i, e in enumerate(reports)]
        when = None
        for minute in range(1, horizon + 1):
            now = onset + timedelta(minutes=minute)
            seen = [(e, t) for e, t in steps if t <= now]
            samples = _series(seen)
            hits = [ep for ep in episodes(samples) if abs(ep.onset - onset) <= MATCH]
            spans = windows(samples, hits[0]) if hits else None
            if spans is None:
                continue
            verdict = localise(_rank_means(seen, placement, *spans[0]), _rank_means(seen, placement, *spans[1]),
                               placement, topology, [h for h in health if h["time"] <= now], hits[0])
            if verdict.component == fault["root_component"]:
                when = minute
                break
        found.setdefault(fault["mechanism"], []).append(when)
    return found
