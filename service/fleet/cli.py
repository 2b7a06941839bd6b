"""`faultgraph fleet` (components by state, offenders, MTTR by cause) and `faultgraph goodput`
(measured effective training time), over the REST API. Registered by `register(app)`."""

import json
import math
import sys
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from faultgraph.service import client
from faultgraph.service.client import JsonOption, TokenOption, UrlOption, short_time

console = Console() if sys.stdout.isatty() else Console(width=160)

Since = Annotated[str | None, typer.Option(help="Window start: RFC 3339 with a zone, or epoch seconds.")]
Until = Annotated[str | None, typer.Option(help="Window end: RFC 3339 with a zone, or epoch seconds.")]


def _get(url: str, token: str | None, path: str, params: dict) -> Any:
    try:
        return client.get(url, path, token=token, params={k: v for k, v in params.items() if v is not None})
    except client.ApiError as exc:
        Console(stderr=True).print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(1) from None


def _num(value: float | None, unit: str = "", digits: int = 2) -> str:
    return "—" if value is None else f"{value:,.{digits}f}{unit}"


def _figures(value: float | None, figures: int = 3) -> str:
    """A rate estimated from counts, to the figures it carries: 12.6 and 0.169, not 12.629
    and 0.169 beside each other (the web's `fmtFigures` writes the same)."""
    if value is None:
        return "—"
    for _ in range(2):  # twice: rounding can carry into a new figure (99.96 is 100, not 100.0)
        digits = figures - 1 - (math.floor(math.log10(abs(value))) if value else 0)
        value = round(value, digits)
    return f"{value:,.{max(digits, 0)}f}"


def _table(title: str, columns: list[str], rows: list[list[str]], *, words: int = 1) -> Table:
    """A table whose first `words` columns are text (left) and the rest figures (right)."""
    table = Table(title=title, title_justify="left")
    for index, name in enumerate(columns):
        table.add_column(name, justify="left" if index < words else "right")
    for row in rows:
        table.add_row(*row)
    return table


def _print(table: Table, empty: str) -> None:
    """The table, or in its place a line saying what its having no rows means."""
    console.print(table if table.row_count else f"[bold]{table.title}[/bold]: {empty}", highlight=False)


def fleet(
    state: Annotated[str, typer.Option(help="Component states to list (comma-separated).")] = "faulty,drained,in_repair,suspect",
    type: Annotated[str | None, typer.Option("--type", help="Only components of this type (host, gpu, nic, …).")] = None,
    unit: Annotated[str, typer.Option(help="Count per 'slot' or per board 'serial'.")] = "slot",
    fdr: Annotated[float | None, typer.Option(
        help="False discovery rate of the repeat-offender test (Benjamini-Hochberg), 0–1; default the server's 0.05.")] = None,
    since: Since = None,
    until: Until = None,
    url: UrlOption = client.DEFAULT_URL,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """Fleet health: components by state, faults per 1,000 unit-days, MTTR by cause, repeat offenders."""
    components = _get(url, token, "/v1/components", {"state": state, "type": type})["components"]
    stats = _get(url, token, "/v1/stats/fleet", {"since": since, "until": until, "type": type, "unit": unit, "fdr": fdr})
    if as_json:
        sys.stdout.write(client_json({"components": components, "stats": stats}))
        return
    _print(_table(f"Components ({state})", ["component", "state", "since (UTC)", "cause", "incident"],
                  [[c["component"], c["state"], short_time(c["since"]), c["cause"] or "—", c["incident"] or "—"]
                   for c in components], words=5), "none")
    mttr = stats["mttr_hours"]
    console.print(_table("Fleet", ["", "value"], [
        ["window (UTC)", _window(stats)], ["units", str(stats["units"])], ["faults", str(stats["faults"])],
        ["faults / 1,000 unit-days", _figures(stats["faults_per_1000_unit_days"])],
        ["MTTR median", _num(mttr["median"], " h")], ["MTTR p90", _num(mttr["p90"], " h")],
        ["availability", _num(None if stats["availability"] is None else 100 * stats["availability"], " %", 3)]]))
    _print(_table("MTTR by cause", ["cause", "faults", "median", "p90"],
                  [[r["cause"], str(r["faults"]), _num(r["mttr_median_hours"], " h"), _num(r["mttr_p90_hours"], " h")]
                   for r in stats["by_cause"]]), "no fault in the window")
    _print(_table("Repeat offenders (worst first)", ["component", "faults", "expected", "p-value", "q-value"],
                  [[r["component"], str(r["faults"]), _num(r["expected"]), f"{r['p_value']:.2e}",
                    f"{r['q_value']:.2e}"] for r in stats["repeat_offenders"]]),
           "no unit fails more often than chance explains")
    _notes(stats)


def goodput(
    job: Annotated[str | None, typer.Option(help="One job; default every job in the window, GPU-hour weighted.")] = None,
    since: Since = None,
    until: Until = None,
    url: UrlOption = client.DEFAULT_URL,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """Effective training time measured from the events, beside the model's η (GET /v1/stats/goodput)."""
    answer = _get(url, token, "/v1/stats/goodput", {"job": job, "since": since, "until": until})
    if as_json:
        sys.stdout.write(client_json(answer))
        return
    eta, model = answer["eta"], answer["model"]["eta"]
    unit = " h" if job else " GPU-h"  # one job's wall-clock hours; all jobs' weighted by their GPUs
    console.print(_table(f"Goodput {job or '(all jobs, GPU-hour weighted)'}", ["", "value"], [
        ["window (UTC)", _window(answer)], ["wall", _num(answer["wall_hours"], unit)], ["productive", _num(answer["productive_hours"], unit)],
        *[[f"lost: {bucket}", _num(hours, unit)] for bucket, hours in answer["lost"].items()],
        ["η measured", _num(None if eta is None else 100 * eta, " %", 1)],
        ["η model (first order)", _num(None if model is None else 100 * model, " %", 1)]]))
    _print(_table("Lost by cause", ["cause", "lost"], [[r["cause"], _num(r["hours"], unit)] for r in answer["by_cause"]]),
           "nothing lost")
    _notes(answer)


def _window(answer: dict) -> str:
    """The window the figures cover, which defaults to the stored events' span: one event
    posted with an old date moves it, and every rate with it."""
    return f"{short_time(answer.get('since'))} → {short_time(answer.get('until'))}"


def _notes(answer: dict) -> None:
    """How the answer was counted, dimmed, one a line."""
    for line in answer.get("notes") or []:
        console.print(f"· {line}", style="dim", highlight=False)


def client_json(value: Any) -> str:
    return json.dumps(value, indent=2) + "\n"


def register(app: typer.Typer) -> None:
    """Add `fleet` and `goodput` to the `faultgraph` command."""
    app.command("fleet")(fleet)
    app.command("goodput")(goodput)
