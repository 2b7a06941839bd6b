"""Checkpoint economics against published values and a Monte Carlo check."""

import math

import pytest

from faultgraph.attribution.checkpoint import (
    daly,
    economics,
    goodput,
    goodput_exact,
    simulate_goodput,
    young,
)


@pytest.mark.parametrize(
    ("mtbf_minutes", "published"),
    [(24 * 60, 117), (6 * 60, 57), (15, 9.1)],  # Daly 2006, C = 5 min, R = 10 min
)
def test_daly_reproduces_the_paper_and_young_does_not(mtbf_minutes, published):
    digits = 1 if published < 10 else 0
    assert round(daly(save_minutes=5, mtbf_minutes=mtbf_minutes), digits) == published
    assert round(young(save_minutes=5, mtbf_minutes=mtbf_minutes), digits) != published


def test_daly_beyond_its_range_is_the_mtbf():
    assert daly(save_minutes=30, mtbf_minutes=15) == 15
    assert daly(save_minutes=30, mtbf_minutes=15.01) < 15.01


@pytest.mark.parametrize(
    ("save", "mtbf_minutes", "expected"), [(2, 120, 22), (5, 186, 43)]
)
def test_young_known_values(save, mtbf_minutes, expected):
    assert young(save_minutes=save, mtbf_minutes=mtbf_minutes) == pytest.approx(expected, abs=0.5)


def test_daly_is_the_optimum_of_the_exact_model():
    for save, mtbf_minutes in ((5, 15), (5, 180), (5, 1440), (1, 60)):
        grid = [i / 100 for i in range(50, 100 * int(2 * mtbf_minutes))]
        best = max(grid, key=lambda t: goodput_exact(interval=t, save=save, restart=10, mtbf=mtbf_minutes))
        assert daly(save_minutes=save, mtbf_minutes=mtbf_minutes) == pytest.approx(best, rel=0.01)


def test_goodput_by_hand():
    # C = 5, t = 42, M = 180 minutes. Overhead 5/42, rework 42/360, restart R/180.
    slow = goodput(interval=42, save=5, restart=30, mtbf=180)
    fast = goodput(interval=42, save=5, restart=10, mtbf=180)
    assert slow["checkpoint_overhead"] == fast["checkpoint_overhead"] == pytest.approx(0.119048, abs=1e-6)
    assert slow["rework"] == fast["rework"] == pytest.approx(0.116667, abs=1e-6)
    assert slow["restart"] == pytest.approx(0.166667, abs=1e-6)
    assert fast["restart"] == pytest.approx(0.055556, abs=1e-6)
    assert slow["value"] == pytest.approx(1 / 1.402381, abs=1e-6)  # 0.7131
    assert fast["value"] == pytest.approx(1 / 1.291270, abs=1e-6)  # 0.7744
    # exact: t / (M e^(R/M) (e^((t+C)/M) − 1)) = 42 / (180 · 1.057127 · 0.298372)
    assert fast["exact"] == pytest.approx(42 / (180 * 1.057127 * 0.298372), rel=1e-5)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"interval": 0, "save": 5, "restart": 10, "mtbf": 180},
        {"interval": 42, "save": -1, "restart": 10, "mtbf": 180},
        {"interval": 42, "save": 5, "restart": 10, "mtbf": 0},
        {"interval": 42, "save": 5, "restart": float("inf"), "mtbf": 180},
        {"interval": "42", "save": 5, "restart": 10, "mtbf": 180},
    ],
)
def test_goodput_rejects_bad_input(kwargs):
    with pytest.raises(ValueError):
        goodput(**kwargs)


def test_exact_goodput_when_failures_overwhelm_is_zero_not_an_error():
    assert goodput_exact(interval=1e6, save=5, restart=10, mtbf=1) == 0.0


def test_economics_answer_defaults_to_young_and_gains_by_moving_to_daly():
    answer = economics(save_minutes=5, restart_minutes=10, mtbf_hours=3.09)
    assert answer["interval_minutes"] == answer["young_minutes"] == pytest.approx(math.sqrt(2 * 5 * 185.4))
    assert answer["daly_minutes"] == pytest.approx(daly(save_minutes=5, mtbf_minutes=185.4))
    assert answer["goodput_gain"] > 0
    hourly = economics(save_minutes=5, restart_minutes=10, mtbf_hours=3.09, interval_minutes=60)
    assert hourly["goodput"]["value"] == pytest.approx(goodput(interval=60, save=5, restart=10, mtbf=185.4)["value"])
    assert hourly["goodput_gain"] > answer["goodput_gain"]
    assert hourly["goodput_at_optimum"] == answer["goodput_at_optimum"]
    with pytest.raises(ValueError, match="save_minutes"):
        economics(save_minutes=0, restart_minutes=10, mtbf_hours=3)


def test_simulation_matches_closed_form_when_failures_are_rare():
    # M/t ≈ 43: the first-order formula is within a few percent of the simulated runs.
    closed = goodput(interval=42, save=5, restart=10, mtbf=1800)["value"]
    simulated = simulate_goodput(interval=42, save=5, restart=10, mtbf=1800, runs=400, work=4200, seed=1)
    assert simulated["mean"] == pytest.approx(closed, rel=0.02)
    assert simulated["p05"] <= simulated["mean"] <= simulated["p95"]
    assert simulated["failures_per_run"] == pytest.approx(2.6, rel=0.2)  # ≈ wall time / M


def test_simulation_matches_the_exact_model_when_failures_are_frequent():
    # M/t ≈ 4: first order overstates goodput; the exact model does not.
    simulated = simulate_goodput(interval=42, save=5, restart=10, mtbf=180, runs=400, work=4200, seed=2)
    standard_error = simulated["stdev"] / math.sqrt(simulated["runs"])
    exact = goodput_exact(interval=42, save=5, restart=10, mtbf=180)
    assert abs(simulated["mean"] - exact) < 4 * standard_error
    assert simulated["mean"] < goodput(interval=42, save=5, restart=10, mtbf=180)["value"] - 0.02


def test_simulation_weibull_shape_one_is_exponential_and_is_reproducible():
    common = {"interval": 42, "save": 5, "restart": 10, "mtbf": 600, "runs": 300, "work": 4200}
    exponential = simulate_goodput(**common, seed=5)
    weibull = simulate_goodput(**common, distribution="weibull", shape=1.0, seed=6)
    assert weibull["mean"] == pytest.approx(exponential["mean"], abs=0.01)
    assert simulate_goodput(**common, seed=5) == exponential
    clustered = simulate_goodput(**common, distribution="weibull", shape=0.6, seed=7)
    assert clustered["shape"] == 0.6 and clustered["distribution"] == "weibull"
    # Clustered failures hit the same early stretch again and again: more failures per run.
    assert clustered["failures_per_run"] > exponential["failures_per_run"]


def test_simulation_refuses_a_job_that_cannot_progress():
    with pytest.raises(ValueError, match="max_events"):
        simulate_goodput(interval=600, save=5, restart=10, mtbf=1, runs=2, work=600, seed=1, max_events=10_000)
    with pytest.raises(ValueError):
        simulate_goodput(interval=42, save=5, restart=10, mtbf=180, runs=1, work=100)
    with pytest.raises(ValueError):
        simulate_goodput(interval=42, save=5, restart=10, mtbf=180, runs=10, work=100, distribution="lognormal")
