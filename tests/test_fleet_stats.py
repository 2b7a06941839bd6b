"""Fleet statistics (attribution/fleet.py): lifecycles, MTTR, availability and the Poisson
repeat-offender test against cases worked by hand, and against the real Titan GPU history."""

import csv
import math
import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from faultgraph.attribution.fleet import (
    Transition,
    exposures,
    quantiles,
    repeat_offenders,
    replay,
    serial_exposures,
    summarize,
)

DATA = Path(__file__).parent / "data" / "reference"
T0 = datetime(2026, 11, 1, tzinfo=UTC)


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def test_operator_word_opens_and_closes_an_episode():
    units = replay([
        Transition(day(1), "n1", "faulty", cause="power_supply", event="e1"),
        Transition(day(2), "n1", "in_repair"),
        Transition(day(15), "n1", "healthy"),
    ])
    unit = units["n1"]
    assert unit.state == "healthy" and unit.since == day(15)
    [episode] = unit.episodes
    assert episode.cause == "power_supply" and episode.repair_hours() == 14 * 24
    assert [t.state for t in unit.history] == ["faulty", "in_repair", "healthy"]


def test_judgement_raises_never_lowers_and_never_clears():
    units = replay([
        Transition(day(1), "n1", "drained", reason="operator"),
        Transition(day(2), "n1", "suspect", cause="nic", judged=True, incident="inc-000001"),
        Transition(day(3), "n1", "faulty", cause="cpu", judged=True, incident="inc-000002"),
        Transition(day(1), "n2", "suspect", cause="nvlink", judged=True, incident="inc-000003"),
        Transition(day(2), "n2", "faulty", cause="gpu_hbm", judged=True, incident="inc-000004"),
    ])
    assert units["n1"].state == "drained" and len(units["n1"].episodes) == 1
    assert (units["n2"].state, units["n2"].incident, units["n2"].cause) == ("faulty", "inc-000004", "gpu_hbm")
    assert units["n2"].episodes[0].start == day(2)  # suspect is not a fault; faulty is


def test_repeated_reports_of_one_fault_count_once_and_a_repair_reopens_counting():
    units = replay([
        Transition(day(1), "g", "faulty", judged=True, cause="gpu_hbm"),
        Transition(day(1.5), "g", "faulty", cause="gpu_hbm"),
        Transition(day(2), "g", "healthy"),
        Transition(day(4), "g", "faulty", judged=True, cause="gpu_fell_off_bus"),
    ])
    assert [(e.start, e.end) for e in units["g"].episodes] == [(day(1), day(2)), (day(4), None)]


def test_summary_matches_hand_computation():
    """Four units over ten days: A fails twice (repairs of 48 h and 24 h), B fails on day 2
    and is still down, C is retired on day 5, D never fails."""
    units = replay([
        Transition(day(1), "A", "faulty", cause="gpu_hbm"), Transition(day(3), "A", "healthy"),
        Transition(day(5), "A", "drained", cause="nic"), Transition(day(6), "A", "healthy"),
        Transition(day(2), "B", "faulty", cause="gpu_hbm"),
        Transition(day(5), "C", "retired"),
    ])
    found = exposures(units, names=["A", "B", "C", "D"], since=day(0), until=day(10))
    result = summarize(found)
    unit_days = 10 + 10 + 5 + 10
    assert result["units"] == 4 and result["faults"] == 3
    assert result["faults_per_1000_unit_days"] == pytest.approx(3 / unit_days * 1000)
    assert result["mttr_hours"] == {"median": 36.0, "p90": pytest.approx(24 + 0.9 * 24)}
    down = 48 + 24 + 8 * 24
    assert result["availability"] == pytest.approx(1 - down / (unit_days * 24))
    assert result["by_cause"][0] == {"cause": "gpu_hbm", "faults": 2, "mttr_median_hours": 48.0,
                                     "mttr_p90_hours": 48.0, "repaired": 1}


def test_quantiles_of_nothing_are_none():
    assert quantiles([]) == {"median": None, "p90": None}


def _poisson_tail(k: int, mean: float) -> float:
    """P(X >= k), summed term by term in logs (no scipy): the hand computation."""
    return math.fsum(math.exp(-mean + j * math.log(mean) - math.lgamma(j + 1)) for j in range(k, k + 400))


def test_one_lemon_among_a_fleet_is_found_with_its_poisson_p_value():
    hours = {f"n{i:03d}": 1000.0 for i in range(100)}
    counts = {f"n{i:03d}": 1 for i in range(1, 21)} | {"n000": 10}
    [lemon] = repeat_offenders(counts, hours)
    expected = 30 / 100_000 * 1000
    assert lemon["component"] == "n000" and lemon["faults"] == 10
    assert lemon["expected"] == pytest.approx(expected)
    assert lemon["p_value"] == pytest.approx(_poisson_tail(10, expected), rel=1e-9)


def test_exposure_matters_a_short_lived_unit_with_the_same_count_is_worse():
    hours = {f"n{i:03d}": 1000.0 for i in range(200)} | {"new": 50.0}
    counts = {f"n{i:03d}": 1 for i in range(40)} | {"n199": 4, "new": 4}
    ranked = repeat_offenders(counts, hours)
    assert [row["component"] for row in ranked[:2]] == ["new", "n199"]
    assert ranked[0]["p_value"] < ranked[1]["p_value"]


def test_a_fleet_with_one_rate_has_no_offenders():
    """2,000 units drawing faults from one Poisson rate: some draw 4 or 5 by chance, and
    testing them all at once must not call them lemons (without the false-discovery
    adjustment, p < 0.05 would flag dozens)."""
    rng = random.Random(7)
    hours = {f"n{i}": 1000.0 for i in range(2000)}
    counts = {}
    for name in hours:  # Poisson(1.0) by counting unit-rate exponential arrivals in [0, 1)
        clock, k = rng.expovariate(1.0), 0
        while clock < 1.0:
            k, clock = k + 1, clock + rng.expovariate(1.0)
        counts[name] = k
    assert max(counts.values()) >= 4
    assert repeat_offenders(counts, hours) == []


def test_a_serial_keeps_its_history_when_it_moves_slots():
    units = replay([
        Transition(day(0), "n1/gpu0", "healthy", serial="S-A"),
        Transition(day(0), "n2/gpu0", "healthy", serial="S-B"),
        Transition(day(2), "n1/gpu0", "faulty", cause="gpu_hbm"),
        Transition(day(3), "n1/gpu0", "healthy", serial="S-C"),  # S-A pulled, S-C fitted
        Transition(day(4), "n2/gpu0", "healthy", serial="S-A"),  # S-A refitted in n2
        Transition(day(6), "n2/gpu0", "faulty", cause="gpu_hbm"),
    ])
    by_serial = {item.unit: item for item in serial_exposures(units, since=day(0), until=day(10))}
    assert len(by_serial["S-A"].faults) == 2
    assert {e.component for e in by_serial["S-A"].faults} == {"n1/gpu0", "n2/gpu0"}
    assert by_serial["S-A"].hours == pytest.approx((3 + 6) * 24)
    assert by_serial["S-B"].hours == pytest.approx(4 * 24) and not by_serial["S-B"].faults
    assert by_serial["S-C"].hours == pytest.approx(7 * 24)
    by_slot = {item.unit: item for item in exposures(units, names=[], since=day(0), until=day(10))}
    assert len(by_slot["n1/gpu0"].faults) == 1 and len(by_slot["n2/gpu0"].faults) == 1


def _titan():
    with open(DATA / "titan-gpu-failures.csv", newline="") as handle:
        rows = [(datetime.fromisoformat(r["time_utc"]).replace(tzinfo=UTC), r["location"], r["event"])
                for r in csv.DictReader(handle)]
    slots = (DATA / "titan-gpu-slots.txt").read_text().split()
    return rows, slots


def test_titan_fleet_matches_hand_computation():
    """Titan's 6,367 GPU failures in 18,687 slots: each failure a fault at its slot, the
    replacement fitted at the removal time (the data has no repair times). By hand: the
    rate per 1,000 slot-days, and the worst slots by a Poisson tail summed in logs."""
    rows, slots = _titan()
    transitions = []
    for time, slot, event in rows:
        cause = "gpu_hbm" if event == "DBE" else "gpu_fell_off_bus"
        transitions += [Transition(time, slot, "faulty", cause=cause), Transition(time, slot, "healthy")]
    since, until = min(r[0] for r in rows), max(r[0] for r in rows) + timedelta(seconds=1)
    result = summarize(exposures(replay(transitions), names=slots, since=since, until=until), offenders=None)

    hours = (until - since).total_seconds() / 3600
    assert (result["units"], result["faults"]) == (18_687, 6_367)
    assert result["faults_per_1000_unit_days"] == pytest.approx(6367 / (18687 * hours / 24) * 1000)
    assert result["faults_per_1000_unit_days"] == pytest.approx(0.169, abs=0.001)
    assert {row["cause"]: row["faults"] for row in result["by_cause"]} == {"gpu_hbm": 4826, "gpu_fell_off_bus": 1541}

    per_slot = Counter(r[1] for r in rows)
    expected = 6367 / 18687  # every slot watched for the whole window
    offenders = result["repeat_offenders"]
    top = offenders[0]
    assert (top["component"], top["faults"]) == ("c13-3c1s0n0", 106) == per_slot.most_common(1)[0]
    assert top["expected"] == pytest.approx(expected)
    for row in offenders[:10]:
        assert row["p_value"] == pytest.approx(_poisson_tail(row["faults"], expected), rel=1e-6)
    assert [row["faults"] for row in offenders] == sorted((row["faults"] for row in offenders), reverse=True)
    # Benjamini–Hochberg at 5 % over 18,687 slots, by hand: the largest rank i whose p-value
    # is at most i/m × 0.05 — the cut falls between 4 and 5 failures per slot.
    p_values = sorted(_poisson_tail(per_slot.get(slot, 0), expected) if per_slot.get(slot) else 1.0 for slot in slots)
    cut = max(i for i, p in enumerate(p_values, start=1) if p <= i / len(slots) * 0.05)
    assert len(offenders) == cut == sum(1 for count in per_slot.values() if count >= 5) == 45
    assert sum(row["faults"] for row in offenders) == 624


def test_retired_time_is_neither_exposure_nor_downtime():
    """Over ten days: E retired on day 5 and back on day 7 (8 days of exposure); F fails on
    day 1 and is retired unrepaired on day 3 (down 2 days, exposed 3)."""
    units = replay([
        Transition(day(5), "E", "retired"), Transition(day(7), "E", "healthy"),
        Transition(day(1), "F", "faulty", cause="chassis"), Transition(day(3), "F", "retired"),
    ])
    found = {item.unit: item for item in exposures(units, names=[], since=day(0), until=day(10))}
    assert (found["E"].hours, found["E"].down_hours) == (8 * 24, 0)
    assert (found["F"].hours, found["F"].down_hours) == (3 * 24, 2 * 24)
    result = summarize(list(found.values()))
    assert result["availability"] == pytest.approx(1 - 48 / (11 * 24))
    assert result["mttr_hours"] == {"median": None, "p90": None}  # retiring is not a repair
