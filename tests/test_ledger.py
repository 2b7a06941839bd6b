"""The interruption ledger: Llama 3's 54-day table replayed, and the GPU-hours-lost rule."""

import csv
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faultgraph.attribution.ledger import gpu_hours_lost, ledger, published_discrepancies
from faultgraph.attribution.reliability import mtbf
from faultgraph.ingest.causes import CAUSE_CATEGORY

LLAMA3 = Path(__file__).resolve().parent / "data" / "reference" / "llama3-interruptions.csv"
T0 = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)


def _llama3_rows() -> list[dict]:
    with open(LLAMA3, newline="") as handle:
        return list(csv.DictReader(handle))


def _llama3_interruptions() -> list[dict]:
    """The 419 unexpected interruptions, one dict each, without category (derived), and the
    47 planned ones; fixed GPU-hours lost per interruption so the sums can be checked."""
    unplanned = [
        {"cause": row["cause"], "planned": False, "gpu_hours_lost": 1.5}
        for row in _llama3_rows()
        for _ in range(int(row["count"]))
    ]
    planned = [{"cause": "planned_maintenance", "planned": True, "gpu_hours_lost": 2.0}] * 47
    return unplanned + planned


def test_llama3_ledger_replays_the_counts():
    result = ledger(_llama3_interruptions())
    assert (result["unplanned"], result["planned"]) == (419, 47)
    assert result["planned_gpu_hours_lost"] == pytest.approx(94.0)
    causes = {row["cause"]: row for row in result["causes"]}
    for row in _llama3_rows():
        replayed = causes[row["cause"]]
        assert replayed["count"] == int(row["count"])
        assert replayed["category"] == row["category"]
        assert replayed["share"] == pytest.approx(int(row["count"]) / 419, abs=1e-3)
    assert causes["faulty_gpu"]["share"] == pytest.approx(0.353, abs=1e-3)
    assert causes["faulty_gpu"]["gpu_hours_lost"] == pytest.approx(148 * 1.5)
    categories = {row["category"]: row for row in result["categories"]}
    expected = {"gpu": 268, "software": 56, "network": 35, "maintenance": 32, "host": 21, "unknown": 7}
    assert {name: row["count"] for name, row in categories.items()} == expected
    assert categories["gpu"]["share"] == pytest.approx(0.640, abs=1e-3)
    assert sum(row["share"] for row in result["categories"]) == pytest.approx(1.0)
    assert [row["count"] for row in result["causes"]] == sorted(
        (row["count"] for row in result["causes"]), reverse=True
    )
    assert result["categories"][0]["category"] == "gpu"


def test_llama3_mtbf_from_the_ledger():
    result = ledger(_llama3_interruptions())
    answer = mtbf(interruptions=result["unplanned"], observed_hours=54 * 24)
    assert answer["mtbf_hours"] == pytest.approx(3.09, abs=0.005)


def test_llama3_printed_percentages_that_disagree_with_the_counts():
    found = {(row["level"], row["name"]): row for row in published_discrepancies(_llama3_rows())}
    assert set(found) == {("cause", "faulty_gpu"), ("category", "gpu"), ("total", "all")}
    assert found["cause", "faulty_gpu"]["printed_percent"] == 30.1
    assert found["cause", "faulty_gpu"]["count_percent"] == pytest.approx(35.3, abs=0.05)
    assert found["category", "gpu"]["printed_percent"] == pytest.approx(58.7)
    assert found["category", "gpu"]["count_percent"] == pytest.approx(64.0, abs=0.05)
    assert found["total", "all"]["printed_percent"] == pytest.approx(94.9)


def test_a_consistent_table_has_no_discrepancies():
    rows = [{"cause": "faulty_gpu", "count": 2, "paper_percent": 66.7},
            {"cause": "nic", "count": 1, "paper_percent": 33.3}]
    assert published_discrepancies(rows) == []
    with pytest.raises(ValueError):
        published_discrepancies([{"cause": "nic", "count": 0, "paper_percent": 0}])


def test_ledger_defaults_and_ordering():
    result = ledger([
        {"cause": "nic", "gpu_hours_lost": 5.0},
        {"cause": "network_switch_cable", "gpu_hours_lost": 9.0},
        {"cause": "planned_maintenance"},  # planned by its cause
        {"cause": "host_maintenance", "planned": True},  # planned by its flag
        {"category": "gpu"},  # no cause: unknown, but the given category is kept
        {"cause": "faulty_gpu", "category": "network", "planned": False},  # a confirmed override
    ])
    assert (result["unplanned"], result["planned"]) == (4, 2)
    assert [row["cause"] for row in result["causes"]] == [
        "network_switch_cable", "nic", "faulty_gpu", "unknown"
    ]  # ties broken by GPU-hours lost, then name
    assert {(row["cause"], row["category"]) for row in result["causes"]} >= {
        ("unknown", "gpu"), ("faulty_gpu", "network"), ("nic", CAUSE_CATEGORY["nic"])
    }
    categories = {row["category"]: row for row in result["categories"]}
    assert categories["network"]["count"] == 2
    assert categories["network"]["share"] == 0.5
    assert categories["network"]["gpu_hours_lost"] == 9.0


def test_empty_ledger():
    assert ledger([]) == {
        "unplanned": 0, "planned": 0, "planned_gpu_hours_lost": 0.0, "categories": [], "causes": []
    }
    only_planned = ledger([{"cause": "planned_maintenance"}])
    assert only_planned["planned"] == 1 and only_planned["categories"] == []


@pytest.mark.parametrize(
    "bad",
    [["not a mapping"], [{"cause": "nic", "gpu_hours_lost": -1}], [{"cause": 7}],
     [{"cause": "nic", "gpu_hours_lost": float("nan")}]],
)
def test_ledger_rejects_bad_interruptions(bad):
    with pytest.raises(ValueError):
        ledger(bad)


def test_gpu_hours_lost_full_record():
    # 16,384 GPUs; saved at 07:30, failed 08:00, running again 08:15:
    # 16,384 × (0.25 h down + 0.5 h rolled back) = 12,288 GPU-hours.
    result = gpu_hours_lost(
        gpus=16384, failed_at=T0, resumed_at=T0 + timedelta(minutes=15),
        last_checkpoint_at=T0 - timedelta(minutes=30),
    )
    assert result == {"gpu_hours_lost": 12288.0, "downtime_hours": 0.25, "rollback_hours": 0.5, "assumptions": []}


def test_gpu_hours_lost_rolls_back_only_to_the_latest_restart():
    # Saved 06:00, restarted from it at 07:40 after an earlier failure, failed again at 08:00:
    # the 06:00–07:40 stretch was charged to the earlier interruption; this one loses 20 min.
    result = gpu_hours_lost(
        gpus=8, failed_at=T0, resumed_at=T0 + timedelta(minutes=6),
        last_checkpoint_at=T0 - timedelta(hours=2), running_since=T0 - timedelta(minutes=20),
    )
    assert result["rollback_hours"] == pytest.approx(1 / 3)
    assert result["gpu_hours_lost"] == pytest.approx(8 * (0.1 + 1 / 3))


def test_gpu_hours_lost_names_its_assumptions():
    open_now = gpu_hours_lost(gpus=4, failed_at=T0, resumed_at=None, last_checkpoint_at=None,
                              running_since=T0 - timedelta(hours=1), now=T0 + timedelta(hours=2))
    assert open_now["downtime_hours"] == 2.0 and open_now["rollback_hours"] == 1.0
    assert open_now["gpu_hours_lost"] == 12.0
    assert len(open_now["assumptions"]) == 2
    nothing = gpu_hours_lost(gpus=4, failed_at=T0, resumed_at=None, last_checkpoint_at=None)
    assert nothing["gpu_hours_lost"] == 0.0
    assert any("downtime not counted" in a for a in nothing["assumptions"])
    assert any("rolled-back progress not counted" in a for a in nothing["assumptions"])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"gpus": 0},
        {"resumed_at": T0 - timedelta(minutes=1)},
        {"last_checkpoint_at": T0 + timedelta(minutes=1)},
        {"failed_at": datetime(2026, 11, 29, 8, 0)},  # naive
        {"failed_at": None},
    ],
)
def test_gpu_hours_lost_rejects_bad_input(kwargs):
    arguments = {"gpus": 8, "failed_at": T0, "resumed_at": T0 + timedelta(minutes=5), "last_checkpoint_at": None}
    with pytest.raises(ValueError):
        gpu_hours_lost(**{**arguments, **kwargs})


@settings(max_examples=50, deadline=None)
@given(st.lists(st.fixed_dictionaries({
    "cause": st.sampled_from(sorted(CAUSE_CATEGORY)),
    "gpu_hours_lost": st.floats(min_value=0, max_value=1e6),
})))
def test_ledger_invariants(interruptions):
    result = ledger(interruptions)
    assert result["unplanned"] + result["planned"] == len(interruptions)
    assert sum(row["count"] for row in result["causes"]) == result["unplanned"]
    assert sum(row["count"] for row in result["categories"]) == result["unplanned"]
    if result["unplanned"]:
        assert sum(row["share"] for row in result["categories"]) == pytest.approx(1.0)
    hours = sum(i["gpu_hours_lost"] for i in interruptions)
    assert sum(r["gpu_hours_lost"] for r in result["causes"]) + result["planned_gpu_hours_lost"] == pytest.approx(hours)
