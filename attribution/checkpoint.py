"""Checkpoint economics: the optimum interval (Young, Daly), expected goodput, a Monte Carlo check.

Every function takes times in one unit of the caller's choosing (the service uses minutes):
C = time to save a checkpoint, R = time to restart from one (detection, rescheduling,
loading), M = mean time between failures of the whole job, t = compute time between saves.
"""

from __future__ import annotations

import math
import random
import statistics
from typing import Literal, TypedDict

Distribution = Literal["exponential", "weibull"]


class Goodput(TypedDict):
    value: float
    checkpoint_overhead: float
    rework: float
    restart: float
    exact: float


class SimulatedGoodput(TypedDict):
    mean: float
    stdev: float
    p05: float
    p95: float
    runs: int
    failures_per_run: float
    distribution: str
    shape: float


class Economics(TypedDict):
    save_minutes: float
    restart_minutes: float
    mtbf_hours: float
    young_minutes: float
    daly_minutes: float
    interval_minutes: float
    goodput: Goodput
    goodput_at_optimum: Goodput
    goodput_gain: float


def _require(value: float, name: str, *, positive: bool) -> float:
    """Reject non-numbers, NaN, infinities and out-of-range values with a clear message."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise ValueError(f"{name} must be {'positive' if positive else 'non-negative'}, got {value!r}")
    return float(value)


def young(*, save_minutes: float, mtbf_minutes: float) -> float:
    """Young's first-order optimum interval √(2CM).

    J. W. Young, "A first order approximation to the optimum checkpoint interval",
    Communications of the ACM 17(9), 1974, pp. 530–531. Good while C ≪ M.
    """
    save = _require(save_minutes, "save_minutes", positive=False)
    mean = _require(mtbf_minutes, "mtbf_minutes", positive=True)
    return math.sqrt(2.0 * save * mean)


def daly(*, save_minutes: float, mtbf_minutes: float) -> float:
    """Daly's higher-order optimum interval.

    J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
    dumps", Future Generation Computer Systems 22(3), 2006, pp. 303–312:
        t = √(2CM)·[1 + ⅓√(C/2M) + ⅑(C/2M)] − C   for C < 2M,   else t = M.
    It approximates the interval that maximizes `goodput_exact`. The restart time does not
    enter it (it multiplies the expected time by the same e^(R/M) whatever the interval).
    This form reproduces the paper's 117, 57 and 9.1 min for C = 5 min and M = 24 h, 6 h
    and 15 min, where Young's √(2CM) gives 120, 60 and 12.2.
    """
    save = _require(save_minutes, "save_minutes", positive=False)
    mean = _require(mtbf_minutes, "mtbf_minutes", positive=True)
    if save >= 2.0 * mean:
        return mean
    ratio = save / (2.0 * mean)
    return math.sqrt(2.0 * save * mean) * (1.0 + math.sqrt(ratio) / 3.0 + ratio / 9.0) - save


def goodput(*, interval: float, save: float, restart: float, mtbf: float) -> Goodput:
    """Expected fraction of wall time spent on useful work, first order, with its three losses.

    Per unit of useful work the run also spends C/t saving checkpoints, and suffers failures
    at rate 1/M each costing on average half an interval of rework plus a restart:
    t/(2M) + R/M. So goodput = 1 / (1 + C/t + (t/2 + R)/M) (Young 1974; Daly 2006 §3 to
    first order). The parts are the denominator's terms — time lost per unit of useful work.
    `exact` is `goodput_exact` at the same point: the first-order value is maximized by
    Young's interval by construction, so comparing intervals is better done on `exact`.
    """
    t = _require(interval, "interval", positive=True)
    c = _require(save, "save", positive=False)
    r = _require(restart, "restart", positive=False)
    m = _require(mtbf, "mtbf", positive=True)
    overhead, rework, restart_loss = c / t, t / (2.0 * m), r / m
    return {
        "value": 1.0 / (1.0 + overhead + rework + restart_loss),
        "checkpoint_overhead": overhead,
        "rework": rework,
        "restart": restart_loss,
        "exact": goodput_exact(interval=t, save=c, restart=r, mtbf=m),
    }


def goodput_exact(*, interval: float, save: float, restart: float, mtbf: float) -> float:
    """Expected goodput with exponential failures, to all orders (Daly 2006, §3).

    Failures may strike while computing, saving or restarting; each loses the work since
    the last completed save and costs a restart, itself interrupted by failures. The
    expected wall time per segment of work t is then M·e^(R/M)·(e^((t+C)/M) − 1), so
    goodput = t / (M·e^(R/M)·(e^((t+C)/M) − 1)). `simulate_goodput` samples this model.
    """
    t = _require(interval, "interval", positive=True)
    c = _require(save, "save", positive=False)
    r = _require(restart, "restart", positive=False)
    m = _require(mtbf, "mtbf", positive=True)
    exponent = (t + c) / m + r / m
    if exponent > 700:  # e^700 ~ 1e304: the job essentially never completes a segment
        return 0.0
    return t / (m * math.exp(r / m) * math.expm1((t + c) / m))


def economics(
    *,
    save_minutes: float,
    restart_minutes: float,
    mtbf_hours: float,
    interval_minutes: float | None = None,
) -> Economics:
    """The SPEC §7 checkpoint answer: both optima, goodput at the interval in use (Young's
    when none is given) and at Daly's, and what moving to Daly's would win.

    `goodput_gain` compares the `exact` goodputs: in the first-order value Young's interval
    is optimal by construction, so Daly's would always look a little worse there.
    """
    # A free checkpoint (C = 0) has no optimum interval: checkpoint continuously.
    _require(save_minutes, "save_minutes", positive=True)
    mtbf_minutes = _require(mtbf_hours, "mtbf_hours", positive=True) * 60.0
    young_minutes = young(save_minutes=save_minutes, mtbf_minutes=mtbf_minutes)
    daly_minutes = daly(save_minutes=save_minutes, mtbf_minutes=mtbf_minutes)
    in_use = young_minutes if interval_minutes is None else interval_minutes
    current = goodput(interval=in_use, save=save_minutes, restart=restart_minutes, mtbf=mtbf_minutes)
    optimum = goodput(interval=daly_minutes, save=save_minutes, restart=restart_minutes, mtbf=mtbf_minutes)
    return {
        "save_minutes": float(save_minutes),
        "restart_minutes": float(restart_minutes),
        "mtbf_hours": float(mtbf_hours),
        "young_minutes": young_minutes,
        "daly_minutes": daly_minutes,
        "interval_minutes": float(in_use),
        "goodput": current,
        "goodput_at_optimum": optimum,
        "goodput_gain": optimum["exact"] - current["exact"],
    }


def simulate_goodput(
    *,
    interval: float,
    save: float,
    restart: float,
    mtbf: float,
    runs: int,
    work: float,
    distribution: Distribution = "exponential",
    shape: float = 1.0,
    seed: int | None = None,
    max_events: int = 5_000_000,
) -> SimulatedGoodput:
    """Monte Carlo goodput: `runs` simulated jobs each needing `work` time of computation.

    Model: the job computes for `interval`, then saves for `save` (after every segment,
    the last included, as the closed form counts it). Failures form a renewal process in
    wall time: gaps drawn from an exponential law of mean `mtbf`, or a Weibull law of the
    given `shape` scaled to the same mean; the clock starts as just after a failure. A
    failure while computing or saving loses everything since the last completed save; the
    job then spends `restart` before computing again, and a failure during the restart
    starts the restart over. Goodput of a run = work / wall time. With exponential failures
    this is the model of `goodput_exact`; the first-order `goodput` leaves out failures
    during saves and restarts, so it sits above the simulation when M is a few intervals
    and converges to it as M/t grows.
    Raises ValueError if the runs would need more than `max_events` simulated events (the
    failures come too fast for the job to progress).
    """
    t = _require(interval, "interval", positive=True)
    c = _require(save, "save", positive=False)
    r = _require(restart, "restart", positive=False)
    m = _require(mtbf, "mtbf", positive=True)
    total_work = _require(work, "work", positive=True)
    k = _require(shape, "shape", positive=True)
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 2:
        raise ValueError(f"runs must be an integer of at least 2, got {runs!r}")
    if distribution not in ("exponential", "weibull"):
        raise ValueError(f"distribution must be 'exponential' or 'weibull', got {distribution!r}")

    rng = random.Random(seed)
    if distribution == "exponential":
        k = 1.0  # the exponential law is the Weibull of shape 1
    scale = m / math.gamma(1.0 + 1.0 / k)  # Weibull mean = scale · Γ(1 + 1/k)

    def draw() -> float:
        return rng.weibullvariate(scale, k) if k != 1.0 else rng.expovariate(1.0 / m)

    budget = max_events
    results: list[float] = []
    failures = 0
    for _ in range(runs):
        clock, done, next_failure = 0.0, 0.0, draw()
        while done < total_work:
            budget -= 1
            if budget < 0:
                raise ValueError(
                    "simulation exceeded max_events: failures come too fast for the job to "
                    "progress at this interval, save and restart time"
                )
            segment = min(t, total_work - done)
            if clock + segment + c <= next_failure:
                clock += segment + c
                done += segment
                continue
            failures += 1
            clock = next_failure
            next_failure = clock + draw()
            while clock + r > next_failure:  # failed again while restarting
                budget -= 1
                if budget < 0:
                    raise ValueError("simulation exceeded max_events: restarts never complete")
                failures += 1
                clock = next_failure
                next_failure = clock + draw()
            clock += r
        results.append(total_work / clock)

    ordered = sorted(results)
    return {
        "mean": statistics.fmean(results),
        "stdev": statistics.stdev(results),
        "p05": ordered[int(0.05 * (runs - 1))],
        "p95": ordered[int(0.95 * (runs - 1))],
        "runs": runs,
        "failures_per_run": failures / runs,
        "distribution": distribution,
        "shape": k,
    }
