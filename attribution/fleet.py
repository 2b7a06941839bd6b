"""Fleet health, pure: component lifecycles from state transitions, and the fleet's statistics.

A component's state moves between `healthy`, `suspect`, `faulty`, `drained`, `in_repair`
and `retired` (SPEC §1 `component_state`). Transitions come from two sources: what people
and tools say (operators, repair tickets, schedulers — `component_state` events; they
always win) and the service's own judgement (an incident's root component turns `suspect`
or `faulty` by its cause; a judgement never lowers a state someone set, and never clears
one). A *fault* is a component entering a down state (`faulty`, `drained`, `in_repair`)
from an up one; the episode ends when it is `healthy` again, and its length is a repair
time (MTTR). Serials (GPU boards) move between slots: each transition may name the serial
now in the slot, and a fault belongs to the slot and to the serial installed at the time.

The statistics (SPEC §7 `/v1/stats/fleet`):
- faults per 1,000 unit-days = faults / Σ exposure days × 1000, exposure being each unit's
  time in the window while not retired;
- MTTR median and p90 over the closed episodes (linear interpolation between order
  statistics, numpy's default), overall and per cause;
- availability = 1 − Σ down time / Σ exposure, an open episode down until the window's end;
- repeat offenders: under the fleet's rate λ = faults / exposure a unit with exposure e
  expects λe faults; the one-sided Poisson p-value P(X ≥ k | λe) (scipy.stats.poisson)
  says how surprising its k faults are. Thousands of units are tested at once, so the
  offenders are those whose Benjamini–Hochberg adjusted p-value (`q_value`) is below the
  false-discovery rate asked for (scipy.stats.false_discovery_control), worst first.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

STATES: tuple[str, ...] = ("healthy", "suspect", "faulty", "drained", "in_repair", "retired")
DOWN_STATES = frozenset({"faulty", "drained", "in_repair"})

# The service's judgement of an incident's root component, by cause. A cause that means a
# part is broken and must be repaired or replaced makes it `faulty`; one that may be the
# part, the cable at its other end, or a transient makes it `suspect`; software and
# maintenance leave the hardware as it was.
CAUSE_STATE: dict[str, str | None] = {
    "faulty_gpu": "faulty", "gpu_hbm": "faulty", "gpu_sram": "faulty",
    "gpu_system_processor": "faulty", "silent_data_corruption": "faulty",
    "gpu_fell_off_bus": "faulty", "nvswitch": "faulty", "cpu": "faulty",
    "system_memory": "faulty", "ssd": "faulty", "power_supply": "faulty", "chassis": "faulty",
    "io_expansion_board": "faulty",
    "gpu_thermal": "suspect", "nvlink": "suspect", "nic": "suspect",
    "network_switch_cable": "suspect", "nccl_watchdog": "suspect", "unknown": "suspect",
    "software_bug": None, "dependency": None, "host_maintenance": None, "planned_maintenance": None,
}

# How far the service's own judgement may move a state: it raises, never lowers.
_SEVERITY = {"healthy": 0, "suspect": 1, "faulty": 2, "drained": 3, "in_repair": 3, "retired": 4}


@dataclass(frozen=True)
class Transition:
    """One statement that a component is now in `state` (from an event or an incident)."""

    time: datetime
    component: str
    state: str
    cause: str | None = None
    reason: str | None = None
    incident: str | None = None
    serial: str | None = None
    judged: bool = False  # the service's judgement (an incident), not an operator's word
    event: str | None = None


@dataclass
class Episode:
    """A fault: from entering a down state to being healthy again (`end` None while open)."""

    component: str
    start: datetime
    cause: str | None
    incident: str | None
    serial: str | None
    end: datetime | None = None

    def repair_hours(self) -> float | None:
        return None if self.end is None else (self.end - self.start).total_seconds() / 3600


@dataclass
class Unit:
    """One component's replayed life: current state and where it came from, its history."""

    component: str
    state: str = "healthy"
    since: datetime | None = None
    cause: str | None = None
    reason: str | None = None
    incident: str | None = None
    serial: str | None = None
    history: list[Transition] = field(default_factory=list)
    episodes: list[Episode] = field(default_factory=list)
    retired: list[list[Any]] = field(default_factory=list)  # [from, to or None] spans out of the fleet


def replay(transitions: Iterable[Transition]) -> dict[str, Unit]:
    """Every component's state after the transitions, in time order (a judgement at the
    same instant as an operator's word goes first, so the word wins)."""
    units: dict[str, Unit] = {}
    for step in sorted(transitions, key=lambda t: (t.time, not t.judged)):
        unit = units.get(step.component)
        if unit is None:
            unit = units[step.component] = Unit(step.component)
        if step.judged and _SEVERITY[step.state] <= _SEVERITY[unit.state]:
            continue  # the judgement says no more than is already known
        if step.serial:
            unit.serial = step.serial
        was_down = unit.state in DOWN_STATES
        if step.state in DOWN_STATES and not was_down:
            unit.episodes.append(Episode(step.component, step.time, step.cause, step.incident, unit.serial))
        elif step.state == "healthy" and was_down:
            unit.episodes[-1].end = step.time
        elif step.state in DOWN_STATES and unit.episodes and step.cause and not unit.episodes[-1].cause:
            unit.episodes[-1].cause = step.cause  # a repair ticket naming what the fault was
        if step.state == "retired" and unit.state != "retired":
            unit.retired.append([step.time, None])
        elif step.state != "retired" and unit.state == "retired":
            unit.retired[-1][1] = step.time  # back in service
        if step.state != unit.state or unit.since is None:
            unit.since = step.time
        if step.state in DOWN_STATES and was_down:  # the same fault goes on: keep what caused it
            unit.cause, unit.incident = step.cause or unit.cause, step.incident or unit.incident
        else:
            unit.cause, unit.incident = step.cause, step.incident
        unit.state, unit.reason = step.state, step.reason
        unit.history.append(step)
    return units


def serial_occupancy(units: Mapping[str, Unit]) -> dict[str, list[tuple[str, datetime, datetime | None]]]:
    """Where each serial was and when: serial → [(slot, from, to)], a serial's stay at a
    slot lasting until another serial is named there, or it is named elsewhere (`to` None:
    still there)."""
    named = sorted(((t.time, t.component, t.serial) for u in units.values() for t in u.history if t.serial),
                   key=lambda item: item[0])
    current_at: dict[str, tuple[str, datetime]] = {}  # slot → (serial, since)
    slot_of: dict[str, str] = {}
    stays: dict[str, list[tuple[str, datetime, datetime | None]]] = defaultdict(list)

    def leave(slot: str, time: datetime | None) -> None:
        serial, since = current_at.pop(slot)
        stays[serial].append((slot, since, time))
        slot_of.pop(serial, None)

    for time, slot, serial in named:
        if slot in current_at and current_at[slot][0] == serial:
            continue
        if slot in current_at:
            leave(slot, time)
        if serial in slot_of:
            leave(slot_of[serial], time)
        current_at[slot], slot_of[serial] = (serial, time), slot
    for slot in list(current_at):
        leave(slot, None)
    return dict(stays)


@dataclass(frozen=True)
class Exposure:
    """One unit's observed time in the window and the faults that began in it."""

    unit: str
    hours: float
    down_hours: float
    faults: tuple[Episode, ...]


def exposures(units: Mapping[str, Unit], *, names: Iterable[str], since: datetime, until: datetime) -> list[Exposure]:
    """Per unit (every name in `names`, plus any unit with history): hours in the window
    outside its retired spans, hours down there (an open episode down until the window's
    end), and the faults that began in the window."""
    found = []
    for name in sorted(set(names) | set(units)):
        unit = units.get(name)
        if unit is None:
            found.append(Exposure(name, _overlap(since, until, since, until), 0.0, ()))
            continue
        retired = [(start, end or until) for start, end in unit.retired]
        hours = _overlap(since, until, since, until) - sum(_overlap(a, b, since, until) for a, b in retired)
        down = sum(_overlap(e.start, e.end or until, since, until) for e in unit.episodes)
        if retired:
            down -= sum(_overlap(max(e.start, a), min(e.end or until, b), since, until)
                        for e in unit.episodes for a, b in retired)
        faults = tuple(e for e in unit.episodes if since <= e.start < until)
        found.append(Exposure(name, max(0.0, hours), max(0.0, down), faults))
    return found


def _overlap(start: datetime, end: datetime, low: datetime, high: datetime) -> float:
    return max(0.0, (min(end, high) - max(start, low)).total_seconds() / 3600)


def quantiles(values: list[float]) -> dict[str, float | None]:
    """Median and 90th percentile (linear interpolation), None for no values."""
    if not values:
        return {"median": None, "p90": None}
    median, p90 = np.percentile(np.asarray(values, dtype=float), [50, 90])
    return {"median": float(median), "p90": float(p90)}


def repeat_offenders(counts: Mapping[str, int], hours: Mapping[str, float], *, fdr: float = 0.05,
                     limit: int | None = 50) -> list[dict[str, Any]]:
    """Units with more faults than the fleet's rate makes likely, worst (smallest p) first.

    `counts` and `hours`: faults and exposure per unit, every unit of the fleet in `hours`
    (units without faults set the rate too). The test is one-sided: P(X ≥ k) with
    X ~ Poisson(λ·e), λ = Σk / Σe. Only units with a fault can be offenders, but every unit
    counts towards the multiple-comparison adjustment.
    """
    total_faults, total_hours = sum(counts.values()), sum(hours.values())
    if total_faults == 0 or total_hours <= 0:
        return []
    from scipy import stats  # deferred: 0.7 s of every server start and `faultgraph` command

    rate = total_faults / total_hours
    names = sorted(hours)
    observed = np.array([counts.get(name, 0) for name in names], dtype=float)
    expected = np.array([rate * hours[name] for name in names], dtype=float)
    p_values = np.where(observed > 0, stats.poisson.sf(observed - 1, expected), 1.0)
    q_values = stats.false_discovery_control(p_values, method="bh")
    order = np.lexsort((-observed, p_values))
    found = []
    for index in order:
        if q_values[index] >= fdr or observed[index] <= expected[index]:
            continue
        found.append({"component": names[index], "faults": int(observed[index]), "expected": float(expected[index]),
                      "p_value": float(p_values[index]), "q_value": float(q_values[index])})
        if limit is not None and len(found) >= limit:
            break
    return found


def summarize(found: list[Exposure], *, fdr: float = 0.05, offenders: int | None = 50) -> dict[str, Any]:
    """The fleet statistics of SPEC §7 over per-unit exposures."""
    exposure_hours = sum(item.hours for item in found)
    faults = [episode for item in found for episode in item.faults]
    repair_of = [(episode.cause or "unknown", episode.repair_hours()) for episode in faults]
    repairs = [hours for _, hours in repair_of if hours is not None]
    by_cause: dict[str, list[float | None]] = defaultdict(list)
    for cause, hours in repair_of:
        by_cause[cause].append(hours)
    causes: list[dict[str, Any]] = []
    for cause, items in by_cause.items():
        done = quantiles([hours for hours in items if hours is not None])
        causes.append({"cause": cause, "faults": len(items), "mttr_median_hours": done["median"],
                       "mttr_p90_hours": done["p90"], "repaired": sum(hours is not None for hours in items)})
    causes.sort(key=lambda row: (-row["faults"], row["cause"]))
    unit_days = exposure_hours / 24
    return {
        "units": len(found),
        "unit_days": unit_days,
        "faults": len(faults),
        "faults_per_1000_unit_days": 1000 * len(faults) / unit_days if unit_days > 0 else None,
        "repaired": len(repairs),
        "mttr_hours": quantiles(repairs),
        "availability": 1 - sum(item.down_hours for item in found) / exposure_hours if exposure_hours > 0 else None,
        "by_cause": causes,
        "repeat_offenders": repeat_offenders({item.unit: len(item.faults) for item in found},
                                             {item.unit: item.hours for item in found}, fdr=fdr, limit=offenders),
    }


def serial_exposures(units: Mapping[str, Unit], *, since: datetime, until: datetime) -> list[Exposure]:
    """Per serial: hours installed in the window, hours down while installed, and the
    faults that began while it was installed — a board's record wherever it went."""
    episodes_of: dict[str, list[Episode]] = defaultdict(list)
    for unit in units.values():
        for episode in unit.episodes:
            if episode.serial:
                episodes_of[episode.serial].append(episode)
    found = []
    for serial, stays in sorted(serial_occupancy(units).items()):
        hours = sum(_overlap(start, end or until, since, until) for _, start, end in stays)
        faults = tuple(e for e in episodes_of[serial] if since <= e.start < until)
        down = sum(_overlap(e.start, e.end or until, max(start, since), min(end or until, until))
                   for e in episodes_of[serial] for slot, start, end in stays if slot == e.component)
        found.append(Exposure(serial, hours, down, faults))
    return found
