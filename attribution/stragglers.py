"""Fail-slow: when a job's steps got slower, and which part of the cluster made them so.

Pure, like the engine: `episodes(series)` finds sustained slowdowns in a job's step-time
series; `localise(...)` names the culprit from the per-rank timing before and during an
episode plus whatever GPU, PCIe and NIC health events the hosts reported. The service
(`service/incidents/degradations.py`) feeds both from the store and keeps the incidents.

Detection is change-point detection (ruptures' PELT on the log step time), not a fixed
threshold: a median filter first removes the isolated long steps of evaluation and
checkpointing, the first steps (warm-up) are skipped, the penalty scales with the
series' own jitter, and a segment counts as slow only when its level is `MIN_SLOWDOWN`
above the last normal one. Localisation is peer comparison: in a synchronous job every
rank waits for the slowest, so the straggler's *compute* grows while its peers' *wait*
grows; all ranks of a host slower means the host; waits grown along one rail (the ranks
on the same local GPU index, whose traffic shares a NIC rail and its leaf) mean the
network there. Health events confirm and refine (a throttling GPU, a PCIe link trained
below its maximum, a NIC counting errors); a GPU under a software power cap whose rank is
not slower is policy, not a culprit.
"""

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from math import exp, log
from statistics import median

import numpy as np

from faultgraph.attribution.placement import Placement
from faultgraph.attribution.topology import Topology, id_host, link_id
from faultgraph.ingest.causes import category_of

# A segment this much slower than the last normal level is a slowdown (fraction of step
# time): 3 % of a 16,384-GPU job is ~500 GPUs idle. Segment levels are medians of at least
# MIN_SEGMENT steps, so per-step jitter of a few percent does not reach it.
MIN_SLOWDOWN = 0.03
# ... and the episode ends when the level comes back within this of the baseline.
RECOVERED = 0.015
# Fewest samples a segment may have: a slowdown shorter than this is jitter.
MIN_SEGMENT = 12
# Standard errors of a segment's median a slowdown must exceed (see `episodes`).
NOISE_Z = 4.0
# Samples at the start of a series that are warm-up (compilation, allocator, data loader).
WARMUP = 10
# Width of the median filter that removes evaluation and checkpoint steps (odd).
SPIKE_FILTER = 7
# At most this many of the latest samples are searched (bounded work per pass).
MAX_SAMPLES = 2000
# Penalty of a change point, in units of the series' variance times log(n).
PENALTY = 12.0
# Throttle reasons that are hardware trouble; a software power cap is a setting.
HW_THROTTLE = {"hw_slowdown": "faulty_gpu", "hw_power_brake": "power_supply", "hw_thermal": "gpu_thermal",
               "sw_thermal": "gpu_thermal"}


@dataclass(frozen=True)
class Sample:
    """One job-level step: its number, when it ended, and its duration (ms)."""

    step: int
    time: datetime
    ms: float


@dataclass(frozen=True)
class Episode:
    """A sustained slowdown: from onset until speed returned (or still running)."""

    onset_step: int
    onset: datetime
    end_step: int | None
    end: datetime | None
    last: datetime  # the latest slow sample seen
    baseline_ms: float
    slow_ms: float

    @property
    def slowdown(self) -> float:
        """Fraction of speed lost: 0.2 when a step takes 1.25 × its baseline."""
        return max(0.0, 1.0 - self.baseline_ms / self.slow_ms)


@dataclass(frozen=True)
class RankTiming:
    """A rank's mean step timing over a window; compute and wait when the hook exposes them."""

    rank: int
    host: str
    duration_ms: float
    compute_ms: float | None = None
    wait_ms: float | None = None


@dataclass
class Verdict:
    """Who slowed the job, why, and what to do."""

    component: str | None
    cause: str
    candidates: list[dict]
    evidence: list[str]
    action: dict
    explanation: str
    ranks: list[int] = field(default_factory=list)

    @property
    def category(self) -> str:
        return category_of(self.cause)


def penalty(values: np.ndarray) -> float:
    """PELT's penalty for a series: BIC-like, scaled by its jitter, estimated from successive
    differences (robust to the level shifts themselves)."""
    diffs = np.diff(values)
    sigma = max(1.4826 * float(np.median(np.abs(diffs - np.median(diffs)))) / np.sqrt(2), 0.004)
    return PENALTY * sigma * sigma * log(len(values))


def _segments(values: np.ndarray) -> list[tuple[int, int]]:
    """Change points of a (filtered, log) series as [start, end) index pairs."""
    n = len(values)
    if n < 2 * MIN_SEGMENT:
        return [(0, n)]
    import ruptures  # deferred, as `episodes` says why

    # PELT with the l2 cost, as KernelCPD computes it in C with a linear kernel (the same
    # cost): ruptures' Python `Pelt(model="l2")` found the same change points but took 33 s
    # on a 2,000-step series (14 ms here), and the engine asks for every job every few steps.
    algo = ruptures.KernelCPD(kernel="linear", min_size=MIN_SEGMENT, jump=1).fit(values.reshape(-1, 1))
    ends = [int(end) for end in algo.predict(pen=penalty(values))]
    starts = [0, *ends[:-1]]
    return list(zip(starts, ends, strict=True))


def episodes(samples: Sequence[Sample]) -> list[Episode]:
    """Sustained slowdowns of a job's step-time series (samples in step order)."""
    samples = list(samples)[-MAX_SAMPLES:]
    usable = samples[WARMUP:] if len(samples) > WARMUP + 2 * MIN_SEGMENT else []
    if not usable:
        return []
    # Imported here, not at the top: ruptures and scipy take 1.5 s to import on a 2-core
    # machine, which every server start and every `faultgraph` command would otherwise pay
    # for a detector that runs only once a job reports its steps.
    from scipy.ndimage import median_filter

    raw = np.log(np.maximum([s.ms for s in usable], 1e-3))
    smooth = median_filter(raw, size=SPIKE_FILTER, mode="nearest")
    # Per-step jitter: a segment's median must stand NOISE_Z standard errors above the
    # baseline too, so a noisy series needs a larger shift than a smooth one.
    jitter = 1.4826 * float(np.median(np.abs(raw - smooth)))
    found: list[Episode] = []
    baseline: float | None = None
    open_: dict | None = None
    for start, end in _segments(smooth):
        level = float(np.median(raw[start:end]))
        if baseline is None:
            baseline = level
            continue
        if open_ is None:
            if level >= baseline + max(log(1 + MIN_SLOWDOWN), NOISE_Z * 1.25 * jitter / np.sqrt(end - start)):
                open_ = {"start": start, "levels": [(level, end - start)], "last": end - 1}
            else:
                baseline = level  # normal again, or faster (warm-up over): the new reference
            continue
        if level < baseline + log(1 + RECOVERED):
            found.append(_episode(usable, open_, baseline, end_index=start))
            open_, baseline = None, level
        else:
            open_["levels"].append((level, end - start))
            open_["last"] = end - 1
    if open_ is not None and baseline is not None:  # an episode opens only above a baseline
        found.append(_episode(usable, open_, baseline, end_index=None))
    return found


def _episode(samples: list[Sample], segment: dict, baseline: float, end_index: int | None) -> Episode:
    weight = sum(n for _, n in segment["levels"])
    slow = sum(level * n for level, n in segment["levels"]) / weight
    end = samples[end_index] if end_index is not None else None
    return Episode(onset_step=samples[segment["start"]].step, onset=samples[segment["start"]].time,
                   end_step=end.step if end else None, end=end.time if end else None,
                   last=samples[segment["last"]].time, baseline_ms=exp(baseline), slow_ms=exp(slow))


def gpu_hours_wasted(episode: Episode, gpus: int) -> float:
    """GPU time that produced nothing: GPUs × the episode's length so far × the fraction of speed lost."""
    end = episode.end or episode.last
    return gpus * max(0.0, (end - episode.onset).total_seconds()) / 3600 * episode.slowdown


# ------------------------------------------------------------------------ localisation


def _delta(before: Mapping[int, RankTiming], during: Mapping[int, RankTiming], name: str) -> dict[int, float]:
    """Per rank, how much a timing grew from the baseline window to the episode."""
    grown = {}
    for rank, now in during.items():
        then = before.get(rank)
        a, b = getattr(now, name), getattr(then, name) if then else None
        if a is not None and b is not None:
            grown[rank] = a - b
    return grown


def _stragglers(grown_compute: Mapping[int, float], step_growth: float) -> dict[int, float]:
    """Ranks whose compute grew by at least half the job's step growth more than their peers'."""
    if len(grown_compute) < 2:
        return {}
    typical = median(grown_compute.values())
    return {r: g - typical for r, g in grown_compute.items() if g - typical >= 0.5 * step_growth}


def _skewed_rail(grown_wait: Mapping[int, float], placement: Placement, step_growth: float) -> tuple[int, list[int]] | None:
    """The local GPU index (rail) whose ranks' waits grew most, if it stands out."""
    by_rail: dict[int, list[float]] = defaultdict(list)
    for rank, grown in grown_wait.items():
        by_rail[placement.slots[rank].gpu].append(grown)
    if len(by_rail) < 2:
        return None
    means = {rail: sum(v) / len(v) for rail, v in by_rail.items()}
    rail = max(means, key=lambda r: (means[r], -r))
    others = median(m for r, m in means.items() if r != rail)
    if means[rail] - others < 0.4 * step_growth:
        return None
    ranks = [r for r in grown_wait if placement.slots[r].gpu == rail and grown_wait[r] - others >= 0.4 * step_growth]
    return rail, sorted(ranks)


def _attrs(event: Mapping) -> Mapping:
    return event.get("attrs") or {}


def _hw_throttle(event: Mapping) -> list[str]:
    """`gpu_perf`'s throttle reasons that slow the hardware; a `gpu_thermal`'s `throttle` is
    a flag or a free word (SPEC §1), which names no reason."""
    reasons = _attrs(event).get("throttle")
    return [t for t in reasons if t in HW_THROTTLE] if isinstance(reasons, list) else []


def _degraded_link(event: Mapping) -> bool:
    a = _attrs(event)
    narrow = a.get("width") is not None and a.get("max_width") and a["width"] < a["max_width"]
    slow = a.get("speed_gts") is not None and a.get("max_speed_gts") and a["speed_gts"] < a["max_speed_gts"]
    return bool(narrow or slow)


def _health_by_component(signals: Sequence[Mapping]) -> dict[str, list[Mapping]]:
    """Health events that report trouble, by the component they resolved to."""
    found: dict[str, list[Mapping]] = defaultdict(list)
    for event in signals:
        kind, component = event["kind"], event.get("component") or event["host"]
        if (kind == "gpu_perf" and _hw_throttle(event)) or (kind == "pcie_link" and _degraded_link(event)) \
                or kind in ("nic_error", "gpu_thermal") or (kind == "nic_link" and _attrs(event).get("state") == "down"):
            found[component].append(event)
    return found


def _pcie_link(gpu: str, topology: Topology | None) -> str:
    """A GPU's PCIe link to its switch (what to reseat or replace), or the GPU itself."""
    switches = topology.neighbours(gpu, of_type="pciesw") if topology is not None else []
    return link_id(gpu, switches[0]) if switches else gpu


def _gpu_cause(gpu: str, health: Mapping[str, list[Mapping]], topology: Topology | None) -> tuple[str, str, list[Mapping]]:
    """What a slow GPU's own reports say: (component to blame, cause, evidence)."""
    reports = health.get(gpu, [])
    links = [e for e in reports if e["kind"] == "pcie_link"]
    if links:
        return _pcie_link(gpu, topology), "io_expansion_board", links
    throttles = [e for e in reports if e["kind"] in ("gpu_perf", "gpu_thermal")]
    for event in throttles:
        reasons = _hw_throttle(event) or ["hw_thermal"]
        return gpu, HW_THROTTLE[reasons[0]], throttles
    return gpu, "faulty_gpu", []


def _replica(placement: Placement, host: str) -> str:
    ranks = placement.host_ranks(host)
    dp = sorted({placement.coordinates(rank).get("dp", 0) for rank in ranks})
    return f" (data-parallel replica {', '.join(map(str, dp))}, ranks {ranks[0]}–{ranks[-1]})" if ranks else ""


def _action(component: str, placement: Placement, topology: Topology | None) -> dict:
    if "~" in component:
        return {"kind": "replace", "target": component, "detail": f"reseat or replace {component}"}
    kind = topology.type_of(component) if topology is not None else None
    if kind == "switch":
        return {"kind": "replace", "target": component, "detail": f"drain {component} and repair it; its ports slow the job"}
    host = component.split("/")[0]
    if kind == "nic":
        return {"kind": "replace", "target": component,
                "detail": f"replace the cable or transceiver of {component}, or evict {host}{_replica(placement, host)}"}
    return {"kind": "evict", "target": host,
            "detail": f"evict {host}{_replica(placement, host)} and drain it for repair; the job runs at full speed without it"}


def _by_score(scores: Mapping[str, float]) -> list[dict]:
    total = sum(scores.values()) or 1.0
    return [{"component": c, "score": round(s / total, 4)} for c, s in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:5]]


def localise(before: Mapping[int, RankTiming], during: Mapping[int, RankTiming], placement: Placement,
             topology: Topology | None, signals: Sequence[Mapping], episode: Episode) -> Verdict:
    """Name the component that slowed the job.

    `before`/`during`: mean per-rank timing in a normal window and in the episode;
    `signals`: gpu_perf, pcie_link, nic_error, gpu_thermal, nic_link events of the job's
    hosts around the episode (component resolved). Timing decides where the slowness is;
    health events decide what it is, and localise alone when timing cannot.
    """
    step_growth = episode.slow_ms - episode.baseline_ms
    health = _health_by_component(signals)
    slow = _stragglers(_delta(before, during, "compute_ms"), step_growth)
    if slow:
        return _straggler_verdict(slow, placement, topology, health, episode)
    rail = _skewed_rail(_delta(before, during, "wait_ms"), placement, step_growth)
    if rail is not None:
        return _rail_verdict(*rail, placement, topology, health, episode)
    return _health_verdict(placement, topology, health, episode)


def _straggler_verdict(slow: Mapping[int, float], placement: Placement, topology: Topology | None,
                       health: Mapping[str, list[Mapping]], episode: Episode) -> Verdict:
    by_host: dict[str, list[int]] = defaultdict(list)
    for rank in slow:
        by_host[placement.slots[rank].host].append(rank)
    scores: dict[str, float] = defaultdict(float)
    for host, ranks in by_host.items():
        on_host = len(placement.host_ranks(host))
        if on_host > 1 and len(ranks) >= 0.75 * on_host:
            scores[host] += sum(slow[r] for r in ranks)
        else:
            for rank in ranks:
                scores[placement.slots[rank].component] += slow[rank]
    top = max(scores, key=lambda c: (scores[c], c))
    ranks = sorted(r for r in slow if top in (placement.slots[r].host, placement.slots[r].component))
    if "/" in top:
        component, cause, reports = _gpu_cause(top, health, topology)
        what = {"io_expansion_board": "its PCIe link is trained below its maximum", "gpu_thermal": "it is thermally throttled",
                "faulty_gpu": "it computes slower than its peers", "power_supply": "its power brake is engaged"}[cause]
        if cause == "faulty_gpu" and reports:
            what = "it reports a hardware slowdown"
    else:
        component, cause = top, "cpu"
        reports = [e for c, events in health.items() if c.split("/")[0] == top for e in events]
        what = f"all {len(ranks)} of its ranks compute slower than their peers"
    if component != top:
        scores[component] = scores.pop(top) * 1.01
    action = _action(component, placement, topology)
    text = (f"{component}: {what}; rank{'s' if len(ranks) > 1 else ''} {_ranks(ranks)} took "
            f"{slow[ranks[0]]:.0f} ms more per step while {placement.world_size - len(ranks)} peers waited; "
            f"steps {episode.baseline_ms:.0f} → {episode.slow_ms:.0f} ms from step {episode.onset_step}; {action['detail']}.")
    return Verdict(component, cause, _by_score(scores), [e["id"] for e in reports], action, text, ranks)


def _rail_verdict(rail: int, ranks: list[int], placement: Placement, topology: Topology | None,
                  health: Mapping[str, list[Mapping]], episode: Episode) -> Verdict:
    hosts = sorted({placement.slots[r].host for r in ranks})
    nics = [f"{host}/nic{rail}" for host in hosts]
    scores: dict[str, float] = defaultdict(float)
    reports: list[Mapping] = []
    for nic in nics:
        for event in health.get(nic, []):
            scores[nic] += float(_attrs(event).get("count") or 1)
            reports.append(event)
    leaves: dict[str, int] = defaultdict(int)
    if topology is not None:
        for nic in nics:
            for leaf in topology.neighbours(nic, of_type="switch"):
                leaves[leaf] += 1
    for leaf, n in leaves.items():
        scores[leaf] += 0.5 * n / max(1, len(nics))  # timing alone: the rail's shared leaf
    if not scores:
        scores[nics[0]] = 1.0
    top = max(scores, key=lambda c: (scores[c], c))
    cause = "nic" if topology is None or topology.type_of(top) == "nic" else "network_switch_cable"
    action = _action(top, placement, topology)
    seen = f"{len(reports)} error counter reports on it" if reports and top in nics else "no error counters"
    text = (f"{top}: waits grew along rail {rail} ({len(ranks)} ranks on {len(hosts)} hosts) while compute did not; "
            f"{seen}; steps {episode.baseline_ms:.0f} → {episode.slow_ms:.0f} ms from step {episode.onset_step}; {action['detail']}.")
    return Verdict(top, cause, _by_score(scores), [e["id"] for e in reports if e.get("component") == top], action, text, ranks)


def _health_verdict(placement: Placement, topology: Topology | None, health: Mapping[str, list[Mapping]],
                    episode: Episode) -> Verdict:
    """No per-rank timing to compare: the job's own health reports, else no culprit."""
    hosts = set(placement.hosts())
    scores = {c: float(len(events)) for c, events in health.items() if id_host(c) in hosts}
    if not scores:
        text = (f"steps slowed {episode.baseline_ms:.0f} → {episode.slow_ms:.0f} ms from step {episode.onset_step} "
                "with no per-rank timing that singles out a rank and no hardware report; watch it or profile the job.")
        return Verdict(None, "unknown", [], [], {"kind": "none", "target": None, "detail": "no culprit isolated"}, text)
    top = max(scores, key=lambda c: (scores[c], c))
    if topology is not None and topology.type_of(top) == "gpu":
        component, cause, reports = _gpu_cause(top, health, topology)
    else:
        component, cause, reports = top, "nic" if "nic" in top else "unknown", health[top]
    action = _action(component, placement, topology)
    text = (f"{component}: reported {reports[0]['kind']} during the slowdown ({episode.baseline_ms:.0f} → "
            f"{episode.slow_ms:.0f} ms per step); {action['detail']}.")
    return Verdict(component, cause, _by_score(scores), [e["id"] for e in reports], action, text)


def _ranks(ranks: Sequence[int]) -> str:
    return f"{ranks[0]}–{ranks[-1]}" if len(ranks) > 3 else ", ".join(map(str, ranks))


# Samples kept out of the windows on either side of the onset (the median filter's reach).
GUARD = SPIKE_FILTER
# Samples each window averages over.
WINDOW = 60


def windows(samples: Sequence[Sample], episode: Episode) -> tuple[tuple[datetime, datetime], tuple[datetime, datetime]] | None:
    """The (low, high] times of a normal window before the episode and a window inside it."""
    steps = [s.step for s in samples]
    if episode.onset_step not in steps:
        return None
    at = steps.index(episode.onset_step)
    stop = steps.index(episode.end_step) if episode.end_step in steps else len(samples)
    first, last = max(WARMUP, at - GUARD - WINDOW), at - GUARD
    inside_first, inside_last = at + GUARD, min(stop - 1, at + GUARD + WINDOW)
    if last - first < 3 or inside_last - inside_first < 3:
        return None
    return ((samples[first - 1].time, samples[last].time), (samples[inside_first - 1].time, samples[inside_last].time))
