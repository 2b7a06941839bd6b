"""Measured effective training time (attribution/goodput.py) against hand computation."""

from datetime import UTC, datetime, timedelta

import pytest

from faultgraph.attribution.goodput import JobRecord, Slowdown, Stop, combine, measure

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def test_every_bucket_by_hand():
    """24 h: saves every 2 h (6 min each), a GPU failure at 9.5 h (back at 10 h), a planned
    stop at 14 h (saved at 14 h, back at 15 h), a 20 % slowdown from 18 h to 23 h."""
    record = JobRecord("j", at(0), at(24), gpus=64,
                       stops=[Stop(at(9.5), at(10), "gpu_hbm"), Stop(at(14), at(15), "planned_maintenance", planned=True)],
                       saves=[(at(h), 360.0) for h in range(2, 24, 2)] + [(at(14), 360.0)],
                       restarts=[at(0), at(10), at(15)],
                       slowdowns=[Slowdown(at(18), at(23), 0.2, "gpu_thermal")])
    result = measure(record)
    lost = {"downtime": 0.5, "rework": 1.5, "checkpoint": 12 * 0.1, "degradation": 0.2 * 5, "planned": 1.0}
    assert result["lost"] == pytest.approx(lost)
    assert result["eta"] == pytest.approx((24 - sum(lost.values())) / 24)
    assert {r["cause"]: r["hours"] for r in result["by_cause"]} == pytest.approx(
        {"gpu_hbm": 2.0, "planned_maintenance": 1.0, "gpu_thermal": 1.0})
    model = result["model"]
    # one unplanned stop in 24 h; saves of 6 min; the 12 saves (every 2 h, 14 h twice) are
    # 120 min apart (the zero gap is skipped); restart 30 min
    assert (model["mtbf_hours"], model["save_minutes"], model["interval_minutes"], model["restart_minutes"]) == \
        pytest.approx((24, 6, 120, 30))
    assert model["eta"] == pytest.approx(1 / (1 + 6 / 120 + (60 + 30) / (24 * 60)))


def test_a_stop_not_yet_recovered_counts_down_to_the_window_end():
    result = measure(JobRecord("j", at(0), at(10), stops=[Stop(at(8), None, "nvlink")], restarts=[at(0)]))
    assert result["lost"]["downtime"] == pytest.approx(2) and result["lost"]["rework"] == pytest.approx(8)
    assert result["model"]["eta"] is None  # no saves to measure the interval from


def test_jobs_weigh_by_gpu_hours():
    big = measure(JobRecord("big", at(0), at(10), gpus=900, stops=[Stop(at(5), at(6), "gpu_hbm")], restarts=[at(0), at(6)],
                            saves=[(at(5), 0.0)]))
    small = measure(JobRecord("small", at(0), at(10), gpus=100))
    both = combine([big, small])
    assert both["eta"] == pytest.approx((900 * 9 + 100 * 10) / (1000 * 10))
    assert both["lost"]["downtime"] == pytest.approx(900 * 1)
