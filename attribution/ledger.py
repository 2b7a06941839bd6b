"""The interruption ledger of SPEC §7: counts, shares and GPU-hours lost per category and cause.

It counts the way the Llama 3 interruption table does (arXiv 2407.21783, Table 5): one row
per root cause of the unexpected interruptions, share = count / unexpected interruptions,
planned ones counted apart.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, TypedDict

from faultgraph.ingest.causes import category_of

PLANNED_CAUSE = "planned_maintenance"


class CategoryRow(TypedDict):
    category: str
    count: int
    share: float
    gpu_hours_lost: float


class CauseRow(TypedDict):
    cause: str
    category: str
    count: int
    share: float
    gpu_hours_lost: float


class Ledger(TypedDict):
    unplanned: int
    planned: int
    planned_gpu_hours_lost: float
    categories: list[CategoryRow]
    causes: list[CauseRow]


class LostTime(TypedDict):
    gpu_hours_lost: float
    downtime_hours: float
    rollback_hours: float
    assumptions: list[str]


class Discrepancy(TypedDict):
    level: str
    name: str
    count: int
    printed_percent: float
    count_percent: float


def _hours_lost(interruption: Mapping[str, Any], index: int) -> float:
    value = interruption.get("gpu_hours_lost")
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"interruption {index}: gpu_hours_lost must be a non-negative number, got {value!r}")
    return float(value)


def ledger(interruptions: Iterable[Mapping[str, Any]]) -> Ledger:
    """Tally interruptions `{"cause", "category", "planned", "gpu_hours_lost"}` into the ledger.

    A missing `cause` counts as `unknown`; a missing `category` is the cause's (SPEC §6); a
    missing `planned` is true only for `planned_maintenance`; a missing `gpu_hours_lost`
    counts 0. Rows list only categories and causes that occurred, by count then GPU-hours
    lost, descending; shares are fractions of the unplanned count (0 when there is none).
    """
    planned = 0
    planned_hours = 0.0
    causes: dict[tuple[str, str], list[float]] = {}
    for index, interruption in enumerate(interruptions):
        if not isinstance(interruption, Mapping):
            raise ValueError(f"interruption {index} is not a mapping: {interruption!r}")
        cause = interruption.get("cause") or "unknown"
        category = interruption.get("category") or category_of(cause)
        if not isinstance(cause, str) or not isinstance(category, str):
            raise ValueError(f"interruption {index}: cause and category must be strings")
        hours = _hours_lost(interruption, index)
        is_planned = interruption.get("planned")
        if is_planned is None:
            is_planned = cause == PLANNED_CAUSE
        if is_planned:
            planned += 1
            planned_hours += hours
            continue
        tally = causes.setdefault((cause, category), [0, 0.0])
        tally[0] += 1
        tally[1] += hours

    unplanned = sum(int(count) for count, _ in causes.values())
    categories: dict[str, list[float]] = {}
    for (_, category), (count, hours) in causes.items():
        tally = categories.setdefault(category, [0, 0.0])
        tally[0] += count
        tally[1] += hours

    def share(count: float) -> float:
        return count / unplanned if unplanned else 0.0

    cause_rows: list[CauseRow] = [
        {"cause": cause, "category": category, "count": int(count), "share": share(count), "gpu_hours_lost": hours}
        for (cause, category), (count, hours) in causes.items()
    ]
    category_rows: list[CategoryRow] = [
        {"category": category, "count": int(count), "share": share(count), "gpu_hours_lost": hours}
        for category, (count, hours) in categories.items()
    ]
    cause_rows.sort(key=lambda row: (-row["count"], -row["gpu_hours_lost"], row["cause"]))
    category_rows.sort(key=lambda row: (-row["count"], -row["gpu_hours_lost"], row["category"]))
    return {
        "unplanned": unplanned,
        "planned": planned,
        "planned_gpu_hours_lost": planned_hours,
        "categories": category_rows,
        "causes": cause_rows,
    }


def _aware(value: datetime | None, name: str) -> None:
    if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
        raise ValueError(f"{name} must be a zone-aware datetime, got {value!r}")


def gpu_hours_lost(
    *,
    gpus: int,
    failed_at: datetime,
    resumed_at: datetime | None,
    last_checkpoint_at: datetime | None,
    running_since: datetime | None = None,
    now: datetime | None = None,
) -> LostTime:
    """GPU-hours one interruption cost: GPUs × (downtime + progress rolled back).

    - downtime = `resumed_at` − `failed_at`: from the failure to the job running again
      (its `job_start`/`job_restart`). Not resumed yet: counted up to `now` when given,
      else 0 — the caller should recompute once the job resumes.
    - rolled back = `failed_at` − the later of `last_checkpoint_at` (the last
      `checkpoint_save` before the failure) and `running_since` (when this run of the job
      started, its `job_start` or last `job_restart`: work redone after an earlier restart
      was lost from that moment, not from the older save). The save event's time is taken
      as the moment the state was captured. With neither known the rollback counts 0.
    Every fallback taken is named in `assumptions`, so the ledger can say how sure it is.
    """
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus <= 0:
        raise ValueError(f"gpus must be a positive integer, got {gpus!r}")
    if failed_at is None:
        raise ValueError("failed_at is required")
    for name, value in (
        ("failed_at", failed_at), ("resumed_at", resumed_at),
        ("last_checkpoint_at", last_checkpoint_at), ("running_since", running_since), ("now", now),
    ):
        _aware(value, name)
    assumptions: list[str] = []

    if resumed_at is not None:
        if resumed_at < failed_at:
            raise ValueError("resumed_at is before failed_at")
        downtime = (resumed_at - failed_at).total_seconds() / 3600
    elif now is not None:
        downtime = max(0.0, (now - failed_at).total_seconds() / 3600)
        assumptions.append("job not running again yet: downtime counted up to now")
    else:
        downtime = 0.0
        assumptions.append("no event says when the job ran again: downtime not counted")

    starts = [t for t in (last_checkpoint_at, running_since) if t is not None]
    if any(t > failed_at for t in starts):
        raise ValueError("last_checkpoint_at and running_since must not be after failed_at")
    if not starts:
        rollback = 0.0
        assumptions.append("no checkpoint_save and no job start known: rolled-back progress not counted")
    else:
        rollback = (failed_at - max(starts)).total_seconds() / 3600
        if last_checkpoint_at is None:
            assumptions.append("no checkpoint_save in this run: all its progress counted as rolled back")

    return {
        "gpu_hours_lost": gpus * (downtime + rollback),
        "downtime_hours": downtime,
        "rollback_hours": rollback,
        "assumptions": assumptions,
    }


def published_discrepancies(rows: Iterable[Mapping[str, Any]], *, decimals: int = 1) -> list[Discrepancy]:
    """Where a published table's printed percentages disagree with its own counts.

    Each row gives `cause`, `count`, `paper_percent` and optionally `category` (else the
    cause's, SPEC §6). A cause is listed when its printed percentage is further from its
    count share than rounding to `decimals` allows (half a unit in the last place); a
    category when the sum of its causes' printed percentages is further from its count
    share than the rows' rounding errors can add up to (so 1.7 + 0.7 + … = 5.1 against
    21/419 = 5.01% is rounding, not an error). For Llama 3's Table 5: Faulty GPU printed
    30.1% where 148/419 = 35.3%, so "GPU issues" is 58.7% printed against 268/419 = 64.0%,
    and the printed rows add up to 94.9% (level `total`).
    """
    half_unit = 0.5 * 10.0 ** -decimals
    materialized = list(rows)
    total = sum(int(row["count"]) for row in materialized)
    if total <= 0:
        raise ValueError("the table's counts must add up to a positive number")
    found: list[Discrepancy] = []
    by_category: dict[str, list[float]] = {}
    for row in materialized:
        count, printed = int(row["count"]), float(row["paper_percent"])
        category = row.get("category") or category_of(row["cause"])
        tally = by_category.setdefault(category, [0, 0.0, 0])
        tally[0] += count
        tally[1] += printed
        tally[2] += 1
        if abs(100 * count / total - printed) > half_unit + 1e-9:
            found.append(_discrepancy("cause", row["cause"], count, printed, total))
    for category, (in_category, printed_sum, rows_in_category) in by_category.items():
        if abs(100 * in_category / total - printed_sum) > rows_in_category * half_unit + 1e-9:
            found.append(_discrepancy("category", category, int(in_category), printed_sum, total))
    printed_total = math.fsum(float(row["paper_percent"]) for row in materialized)
    if abs(printed_total - 100.0) > len(materialized) * half_unit + 1e-9:
        found.append(_discrepancy("total", "all", total, printed_total, total))
    return found


def _discrepancy(level: str, name: str, count: int, printed: float, total: int) -> Discrepancy:
    return {
        "level": level,
        "name": name,
        "count": count,
        "printed_percent": round(printed, 6),
        "count_percent": 100 * count / total,
    }
