"""Known values for the reliability maths, and the real Titan GPU failures (SC '20 data)."""

import csv
import math
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from statistics import NormalDist

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faultgraph.attribution.reliability import (
    between_failures,
    chi2_cdf,
    chi2_quantile,
    mtbf,
    unit_mtbf,
    weibull_fit,
)

DATA = Path(__file__).resolve().parent / "data" / "reference"
T0 = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("p", "dof", "expected"),
    [  # NIST/SEMATECH e-Handbook §1.3.6.7.4 chi-square table, to its printed digits
        (0.975, 2, 7.378),
        (0.025, 2, 0.051),
        (0.95, 10, 18.307),
        (0.05, 10, 3.940),
        (0.99, 3, 11.345),
        (0.975, 1, 5.024),
        (0.001, 100, 61.918),
        (0.999, 100, 149.449),
    ],
)
def test_chi2_quantile_matches_published_table(p, dof, expected):
    assert chi2_quantile(p, dof=dof) == pytest.approx(expected, abs=6e-4)


@pytest.mark.parametrize("dof", [1, 2, 7, 40, 838, 12736])
@pytest.mark.parametrize("p", [0.001, 0.025, 0.5, 0.975, 0.999])
def test_chi2_quantile_inverts_the_cdf(p, dof):
    assert chi2_cdf(chi2_quantile(p, dof=dof), dof=dof) == pytest.approx(p, rel=1e-9)


def test_chi2_two_dof_is_exponential_in_closed_form():
    # χ²(2) is Exp(1/2): its p-quantile is −2 ln(1 − p) exactly.
    for p in (0.01, 0.3, 0.9, 0.999):
        assert chi2_quantile(p, dof=2) == pytest.approx(-2 * math.log(1 - p), rel=1e-10)


def test_chi2_rejects_bad_arguments():
    for p in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError):
            chi2_quantile(p, dof=3)
    with pytest.raises(ValueError):
        chi2_quantile(0.5, dof=0)


def _wilson_hilferty(p: float, dof: int) -> float:
    z = NormalDist().inv_cdf(p)
    return dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3


def test_mtbf_llama3_snapshot():
    # 419 unexpected interruptions in 54 days (arXiv 2407.21783 §3.3.4).
    result = mtbf(interruptions=419, observed_hours=54 * 24)
    assert result["mtbf_hours"] == pytest.approx(3.093, abs=1e-3)
    low, high = result["ci95"]
    # 2T/χ²(0.975, 840) and 2T/χ²(0.025, 838); at this many degrees of freedom the
    # Wilson–Hilferty approximation is good to ~1e-4, an independent reference.
    assert low == pytest.approx(2 * 1296 / _wilson_hilferty(0.975, 840), rel=5e-4)
    assert high == pytest.approx(2 * 1296 / _wilson_hilferty(0.025, 838), rel=5e-4)
    assert low < result["mtbf_hours"] < high


def test_mtbf_one_failure_interval_by_hand():
    # n = 1, T = 100 h: low = 200/χ²(0.975, 4) = 200/11.1433, high = 200/χ²(0.025, 2) = 200/0.0506356.
    low, high = mtbf(interruptions=1, observed_hours=100)["ci95"]
    assert low == pytest.approx(200 / 11.1433, rel=1e-4)
    assert high == pytest.approx(200 / 0.0506356, rel=1e-4)


def test_mtbf_without_failures_has_only_a_lower_bound():
    result = mtbf(interruptions=0, observed_hours=100)
    assert result["mtbf_hours"] is None
    # 2T/χ²(0.975, 2) = 200 / 7.3778 = −T / ln(0.025)
    assert result["ci95"][0] == pytest.approx(-100 / math.log(0.025), rel=1e-9)
    assert result["ci95"][1] is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"interruptions": -1, "observed_hours": 10},
        {"interruptions": 2.5, "observed_hours": 10},
        {"interruptions": 3, "observed_hours": 0},
        {"interruptions": 3, "observed_hours": float("nan")},
        {"interruptions": True, "observed_hours": 10},
    ],
)
def test_mtbf_rejects_bad_input(kwargs):
    with pytest.raises(ValueError):
        mtbf(**kwargs)


def test_interval_covers_the_true_mean_about_95_percent_of_the_time():
    rng = random.Random(7)
    true_mtbf, window, covered, trials = 5.0, 200.0, 0, 400
    for _ in range(trials):
        n, clock = 0, rng.expovariate(1 / true_mtbf)
        while clock < window:
            n, clock = n + 1, clock + rng.expovariate(1 / true_mtbf)
        low, high = mtbf(interruptions=n, observed_hours=window)["ci95"]
        covered += low <= true_mtbf <= high
    assert 0.91 <= covered / trials <= 0.99


def test_unit_mtbf_and_projection():
    # 1,000 GPUs for 1,000 h with 50 failures: 20,000 h per GPU; 16,384 GPUs see one every 1.22 h.
    result = unit_mtbf(units=1000, observed_hours=1000, failures=50, project_to=16384)
    assert result["unit_mtbf_hours"] == pytest.approx(20_000)
    assert result["projected_mtbf_hours"] == pytest.approx(20_000 / 16384)
    assert unit_mtbf(units=10, observed_hours=5, failures=0)["unit_mtbf_hours"] is None
    assert unit_mtbf(units=10, observed_hours=5, failures=1)["projected_mtbf_hours"] is None
    with pytest.raises(ValueError):
        unit_mtbf(units=0, observed_hours=5, failures=1)
    with pytest.raises(ValueError):
        unit_mtbf(units=10, observed_hours=5, failures=1, project_to=0)


def test_weibull_fit_recovers_known_parameters():
    rng = random.Random(1)
    for shape, scale in ((0.5, 3.0), (1.0, 10.0), (2.5, 100.0)):
        gaps = [rng.weibullvariate(scale, shape) for _ in range(4000)]
        fit = weibull_fit(gaps)
        assert fit["shape"] == pytest.approx(shape, rel=0.05)
        assert fit["scale_hours"] == pytest.approx(scale, rel=0.08)


def test_weibull_fit_rejects_unfittable_gaps():
    for gaps in ([1.0], [1.0, 0.0, 2.0], [2.0, 2.0, 2.0]):
        with pytest.raises(ValueError):
            weibull_fit(gaps)


def test_between_failures_summary():
    times = [T0 + timedelta(hours=h) for h in (0, 1, 3, 3, 10)]  # gaps 1, 2, 0, 7
    result = between_failures(times[::-1])  # order of input does not matter
    assert result["count"] == 4
    assert result["mean_hours"] == pytest.approx(2.5)
    assert result["median_hours"] == pytest.approx(1.5)
    assert result["zero_gaps"] == 1
    assert result["weibull"] is None  # fewer than 10 gaps
    assert between_failures([])["mean_hours"] is None
    assert between_failures([T0])["count"] == 0


def test_between_failures_fits_weibull_from_ten_gaps():
    rng = random.Random(3)
    clock, times = T0, [T0]
    for _ in range(10):
        clock += timedelta(hours=rng.expovariate(1 / 4))
        times.append(clock)
    assert between_failures(times)["weibull"]["gaps"] == 10
    assert between_failures(times[:10])["weibull"] is None


def _titan_failure_times() -> list[datetime]:
    with open(DATA / "titan-gpu-failures.csv", newline="") as handle:
        return [
            datetime.fromisoformat(row["time_utc"]).replace(tzinfo=UTC)
            for row in csv.DictReader(handle)
        ]


def test_titan_per_gpu_mtbf():
    """Titan (ORNL, 2014-01-23 → 2019-08-01): 6,367 GPU failures (DBE or off the bus) in
    18,687 GPU slots over 48,398 h (5.52 years, first to last recorded failure) give a
    per-GPU MTBF of ≈ 142,000 h (16.2 years), 95% CI ≈ [138,600, 145,600] h; a 16,384-GPU
    job on such GPUs would see one GPU failure every ≈ 8.7 h."""
    times = _titan_failure_times()
    slots = (DATA / "titan-gpu-slots.txt").read_text().split()
    observed = (max(times) - min(times)).total_seconds() / 3600
    result = unit_mtbf(units=len(slots), observed_hours=observed, failures=len(times), project_to=16384)
    assert (len(slots), len(times)) == (18_687, 6_367)
    assert result["unit_mtbf_hours"] == pytest.approx(142_047, rel=1e-3)
    assert result["projected_mtbf_hours"] == pytest.approx(8.67, abs=0.01)
    low, high = result["ci95"]
    assert 138_000 < low < result["unit_mtbf_hours"] < high < 146_000


def test_titan_failures_cluster():
    """Gaps between successive Titan GPU failures: mean 7.6 h, median 2.6 h, Weibull shape
    ≈ 0.49 (< 1: failures come in bursts, partly the batched removals of the source)."""
    result = between_failures(_titan_failure_times())
    assert result["count"] == 6_366
    assert result["mean_hours"] == pytest.approx(7.60, abs=0.01)
    assert result["median_hours"] == pytest.approx(2.61, abs=0.01)
    assert result["weibull"]["shape"] == pytest.approx(0.486, abs=0.005)
    assert result["weibull"]["shape"] < 1


@settings(max_examples=60, deadline=None)
@given(n=st.integers(min_value=1, max_value=20_000), hours=st.floats(min_value=1e-3, max_value=1e7))
def test_interval_always_brackets_the_estimate(n, hours):
    result = mtbf(interruptions=n, observed_hours=hours)
    low, high = result["ci95"]
    assert 0 < low < result["mtbf_hours"] < high
