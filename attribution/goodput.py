"""Effective training time, measured: a job's wall time split into productive time and
what was lost, by bucket and by cause; beside it the first-order model's η at the measured
settings, so a team sees which lever buys the most.

Buckets (hours of the job's wall time in the window):
- `downtime`: from an unplanned interruption until the job runs again (ledger.gpu_hours_lost);
- `rework`: progress rolled back to the last checkpoint (or to the run's start);
- `checkpoint`: time spent saving (`checkpoint_save` `duration_s`), the job stalled meanwhile;
- `degradation`: a slowdown s over a span d costs s·d (the job ran, at 1 − s of its speed);
- `planned`: downtime and rework of planned interruptions (maintenance).
Productive = wall − Σ lost; η = productive / wall. The model is
`checkpoint.goodput(interval, save, restart, mtbf)` at the job's own measured MTBF (wall
hours / unplanned interruptions), median save time, median restart time and median
interval between saves.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from itertools import pairwise
from typing import Any

from faultgraph.attribution.checkpoint import goodput
from faultgraph.attribution.ledger import gpu_hours_lost

BUCKETS: tuple[str, ...] = ("downtime", "rework", "checkpoint", "degradation", "planned")


@dataclass(frozen=True)
class Stop:
    """One interruption of the job: when it failed, when it ran again, why."""

    failed_at: datetime
    resumed_at: datetime | None
    cause: str
    planned: bool = False


@dataclass(frozen=True)
class Slowdown:
    """A degradation: the job ran `slowdown` (0.15 = 15 %) slower from `start` to `end`."""

    start: datetime
    end: datetime
    slowdown: float
    cause: str


@dataclass
class JobRecord:
    """What the events say about one job in the window."""

    job: str
    start: datetime
    end: datetime
    gpus: int = 1
    stops: list[Stop] = field(default_factory=list)
    saves: list[tuple[datetime, float]] = field(default_factory=list)  # (time, duration in seconds)
    restarts: list[datetime] = field(default_factory=list)  # job_start / job_restart times
    slowdowns: list[Slowdown] = field(default_factory=list)


def _hours(low: datetime, high: datetime) -> float:
    return max(0.0, (high - low).total_seconds() / 3600)


def measure(record: JobRecord) -> dict[str, Any]:
    """The job's η and lost hours by bucket and cause, and the model's η beside it."""
    lost = dict.fromkeys(BUCKETS, 0.0)
    by_cause: dict[str, float] = defaultdict(float)
    save_times = sorted(t for t, _ in record.saves)
    downtimes = []
    for stop in sorted(record.stops, key=lambda s: s.failed_at):
        if not record.start <= stop.failed_at < record.end:
            continue
        last_save = max((t for t in save_times if t <= stop.failed_at), default=None)
        running = max((t for t in record.restarts if t <= stop.failed_at), default=record.start)
        resumed = min(stop.resumed_at, record.end) if stop.resumed_at else None
        cost = gpu_hours_lost(gpus=1, failed_at=stop.failed_at, resumed_at=resumed,
                              last_checkpoint_at=last_save, running_since=running, now=record.end)
        if stop.planned:
            lost["planned"] += cost["downtime_hours"] + cost["rollback_hours"]
        else:
            lost["downtime"] += cost["downtime_hours"]
            lost["rework"] += cost["rollback_hours"]
            downtimes.append(cost["downtime_hours"])
        by_cause[stop.cause] += cost["downtime_hours"] + cost["rollback_hours"]
    lost["checkpoint"] = sum(seconds for t, seconds in record.saves if record.start <= t < record.end) / 3600
    for slow in record.slowdowns:
        slowed = slow.slowdown * _hours(max(slow.start, record.start), min(slow.end, record.end))
        lost["degradation"] += slowed
        by_cause[slow.cause] += slowed
    wall = _hours(record.start, record.end)
    productive = max(0.0, wall - sum(lost.values()))
    unplanned = len(downtimes)
    return {
        "job": record.job, "gpus": record.gpus, "wall_hours": wall, "productive_hours": productive,
        "eta": productive / wall if wall > 0 else None, "lost": lost,
        "by_cause": sorted(({"cause": c, "hours": h} for c, h in by_cause.items()), key=lambda r: -r["hours"]),
        "interruptions": unplanned,
        "model": model(wall_hours=wall, interruptions=unplanned, saves=record.saves, downtimes=downtimes),
    }


def model(*, wall_hours: float, interruptions: int, saves: list[tuple[datetime, float]],
          downtimes: list[float]) -> dict[str, Any]:
    """The first-order η (checkpoint.goodput) at what was measured; null where a setting
    cannot be measured (no failure yet, fewer than two saves)."""
    times = sorted(t for t, _ in saves)
    intervals = [(b - a).total_seconds() / 60 for a, b in pairwise(times) if b > a]
    restart = statistics.median(downtimes) * 60 if downtimes else 0.0
    settings = {
        "mtbf_hours": wall_hours / interruptions if interruptions else None,
        "save_minutes": statistics.median(s / 60 for _, s in saves) if saves else None,
        "interval_minutes": statistics.median(intervals) if intervals else None,
        "restart_minutes": restart,
    }
    if settings["mtbf_hours"] is None or settings["save_minutes"] is None or settings["interval_minutes"] is None:
        return {**settings, "eta": None, "note": "needs at least one interruption and two checkpoint saves"}
    parts = goodput(interval=settings["interval_minutes"], save=settings["save_minutes"],
                    restart=restart, mtbf=settings["mtbf_hours"] * 60)
    return {**settings, "eta": parts["value"], "checkpoint_overhead": parts["checkpoint_overhead"],
            "rework": parts["rework"], "restart": parts["restart"]}


def combine(measured: list[dict[str, Any]]) -> dict[str, Any]:
    """Several jobs' measures, GPU-hour weighted: each job's hours count × its GPUs, so the
    hours of the answer are GPU-hours (`hours_are`) and η is the share of GPU time productive."""
    weight = {m["job"]: m["gpus"] for m in measured}
    wall = sum(m["wall_hours"] * weight[m["job"]] for m in measured)
    productive = sum(m["productive_hours"] * weight[m["job"]] for m in measured)
    lost = {b: sum(m["lost"][b] * weight[m["job"]] for m in measured) for b in BUCKETS}
    by_cause: dict[str, float] = defaultdict(float)
    for m in measured:
        for row in m["by_cause"]:
            by_cause[row["cause"]] += row["hours"] * weight[m["job"]]
    modelled = [m for m in measured if m["model"]["eta"] is not None]
    modelled_weight = sum(m["wall_hours"] * weight[m["job"]] for m in modelled)
    model_eta = (sum(m["model"]["eta"] * m["wall_hours"] * weight[m["job"]] for m in modelled) / modelled_weight
                 if modelled_weight > 0 else None)
    return {
        "model": {"eta": model_eta, "jobs": len(modelled),
                  "note": "each job's first-order η at its own measured settings, GPU-hour weighted"},
        "jobs": len(measured), "gpu_weighted": True, "hours_are": "gpu_hours", "wall_hours": wall, "productive_hours": productive,
        "eta": productive / wall if wall > 0 else None, "lost": lost,
        "by_cause": sorted(({"cause": c, "hours": h} for c, h in by_cause.items()), key=lambda r: -r["hours"]),
    }
