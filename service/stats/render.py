"""The statistics answers as rich tables, for `faultgraph mtbf`, `causes` and `checkpoint`."""

from collections.abc import Mapping
from typing import Any

from rich.table import Table
from rich.text import Text


def _hours(value: float | None) -> str:
    return "—" if value is None else f"{value:,.2f} h"


def _minutes(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f} min"


def _share(value: float) -> str:
    return f"{100 * value:.1f} %"


def _interval(bounds: list[float | None]) -> str:
    low, high = bounds
    return f"{_hours(low)} – {'∞' if high is None else _hours(high)}"


def _facts(title: str, rows: list[tuple[str, str]]) -> Table:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(justify="right")
    for name, value in rows:
        table.add_row(name, value)
    return table


def notes(answer: Mapping[str, Any]) -> Text | None:
    """The answer's notes (how it was counted), dimmed, one a line."""
    lines = answer.get("notes") or []
    return Text("\n".join(f"· {line}" for line in lines), style="dim") if lines else None


def mtbf(answer: Mapping[str, Any]) -> list[Table]:
    """MTBF of a scope: the rate, its interval, per-unit figures for a type, the gaps."""
    rows = [
        ("window", f"{answer.get('since') or '—'} → {answer.get('until') or '—'}"),
        ("interruptions", str(answer["interruptions"]) + (" (planned included)" if answer.get("include_planned") else "")),
        ("observed", _hours(answer["observed_hours"])),
        ("MTBF", _hours(answer["mtbf_hours"])),
        ("95% interval", _interval(answer["ci95"])),
    ]
    if "units" in answer:
        rows += [
            ("units", "unknown" if answer["units"] is None else f"{answer['units']:,}"),
            ("failures", str(answer["failures"])),
            ("MTBF per unit", _hours(answer["unit_mtbf_hours"])),
            ("95% interval per unit", _interval(answer["unit_ci95"])),
        ]
        if answer.get("project_to"):
            rows.append((f"MTBF at {answer['project_to']:,} units", _hours(answer["projected_mtbf_hours"])))
    gaps = answer.get("between_failures") or {}
    if gaps.get("count"):
        rows += [("gaps: mean", _hours(gaps["mean_hours"])), ("gaps: median", _hours(gaps["median_hours"]))]
        if gaps.get("weibull"):
            rows.append(("gaps: Weibull shape", f"{gaps['weibull']['shape']:.2f} (<1: failures cluster)"))
    return [_facts(f"MTBF — {answer['scope']}", rows)]


def causes(answer: Mapping[str, Any]) -> list[Table | Text]:
    """The interruption ledger: per category, per cause; a sentence when there is none."""
    if not answer["categories"]:
        return [Text(f"No unplanned interruption in the window ({answer['planned']} planned apart).")]
    title = f"{answer['unplanned']} unplanned interruptions ({answer['planned']} planned apart)"
    by_category = Table(title=title, title_justify="left")
    for column in ("category", "count", "share", "GPU-hours lost"):
        by_category.add_column(column, justify="left" if column == "category" else "right")
    for row in answer["categories"]:
        by_category.add_row(row["category"], str(row["count"]), _share(row["share"]), f"{row['gpu_hours_lost']:,.1f}")
    by_cause = Table(title="by cause", title_justify="left")
    for column in ("cause", "category", "count", "share", "GPU-hours lost"):
        by_cause.add_column(column, justify="left" if column in ("cause", "category") else "right")
    for row in answer["causes"]:
        by_cause.add_row(row["cause"], row["category"], str(row["count"]), _share(row["share"]),
                         f"{row['gpu_hours_lost']:,.1f}")
    return [by_category, by_cause]


def checkpoint(answer: Mapping[str, Any]) -> list[Table]:
    """Checkpoint economics: the inputs, the two optimum intervals, goodput now and at the optimum."""
    sources = answer.get("sources") or {}

    def source(name: str) -> str:
        return f" ({sources[name]})" if name in sources and sources[name] != "given" else ""

    inputs = _facts("checkpoint economics", [
        ("MTBF", _hours(answer["mtbf_hours"]) + source("mtbf_hours")),
        ("save", _minutes(answer["save_minutes"]) + source("save_minutes")),
        ("restart", _minutes(answer["restart_minutes"]) + source("restart_minutes")),
        ("Young's interval", _minutes(answer["young_minutes"])),
        ("Daly's interval", _minutes(answer["daly_minutes"])),
        ("interval in use", _minutes(answer["interval_minutes"]) + source("interval_minutes")),
        ("goodput gain at Daly's", f"{100 * answer['goodput_gain']:+.2f} points"),
    ])
    goodput = Table(title="goodput", title_justify="left")
    for column in ("at", "goodput", "exact", "checkpoint overhead", "rework", "restart"):
        goodput.add_column(column, justify="left" if column == "at" else "right")
    for name, key in (("interval in use", "goodput"), ("Daly's interval", "goodput_at_optimum")):
        part = answer[key]
        goodput.add_row(name, _share(part["value"]), _share(part["exact"]), _share(part["checkpoint_overhead"]),
                        _share(part["rework"]), _share(part["restart"]))
    tables = [inputs, goodput]
    simulated = answer.get("simulated")
    if simulated:
        tables.append(_facts(f"Monte Carlo ({simulated['runs']:,} runs, {simulated['distribution']})", [
            ("simulated goodput", f"{_share(simulated['mean'])} ± {_share(simulated['stdev'])}"),
            ("5th – 95th percentile", f"{_share(simulated['p05'])} – {_share(simulated['p95'])}"),
            ("closed form (exact)", _share(simulated["closed_form_exact"])),
            ("failures per run", f"{simulated['failures_per_run']:.1f}"),
        ]))
    return tables
