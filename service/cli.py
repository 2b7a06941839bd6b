"""The `faultgraph` command: the server, and the tools around it."""

import logging
from collections.abc import Callable
from typing import Annotated

import typer
import uvicorn
from rich.console import Console
from rich.table import Table

from service import client
from service.app import create_app
from service.client import JsonOption, TokenOption, UrlOption
from service.config import Settings
from service.stats import render as stats_render

app = typer.Typer(help="faultgraph: the fault-diagnosis timeline of a GPU training cluster.", no_args_is_help=True)



@app.callback()
def main() -> None:
    """faultgraph: the fault-diagnosis timeline of a GPU training cluster."""


DbOption = Annotated[str | None, typer.Option("--db", help="Database URL (env FAULTGRAPH_DB); default a DuckDB file in the user's data directory.")]


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    db: DbOption = None,
) -> None:
    """Run the service (ingest, query, incidents, statistics, web UI)."""
    settings = Settings(db_url=db) if db else Settings()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("faultgraph").info("faultgraph listening on http://%s:%d, data in %s", host, port, settings.db_url)
    uvicorn.run(create_app(settings), host=host, port=port, log_level="warning", access_log=False)


def _show(url: str, token: str | None, path: str, params: dict, as_json: bool,
          tables: Callable[[dict], list[Table]]) -> None:
    """Fetch one answer and print it as JSON or as tables with its notes; errors exit 1."""
    try:
        answer = client.get(url, path, token=token, params=params)
    except client.ApiError as exc:
        Console(stderr=True).print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(1) from None
    console = Console()
    if as_json:
        console.print_json(data=answer)
        return
    for table in tables(answer):
        console.print(table)
    for part in (answer, answer.get("simulated") or {}):
        if (text := stats_render.notes(part)) is not None:
            console.print(text)


SinceOption = Annotated[str | None, typer.Option(help="Window start: RFC 3339 with a zone, or epoch seconds.")]
UntilOption = Annotated[str | None, typer.Option(help="Window end: RFC 3339 with a zone, or epoch seconds.")]


@app.command()
def mtbf(
    scope: Annotated[str, typer.Option(help="'cluster', a component type (gpu, host, nic, switch, …) or a job.")] = "cluster",
    since: SinceOption = None,
    until: UntilOption = None,
    include_planned: Annotated[bool, typer.Option("--include-planned", help="Count planned interruptions too.")] = False,
    project_to: Annotated[int | None, typer.Option(help="For a type: the MTBF a job on this many units would see.")] = None,
    url: UrlOption = client.DEFAULT_URL,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """Mean time between interruptions, with its 95% interval (GET /v1/stats/mtbf)."""
    params = {"scope": scope, "since": since, "until": until, "project_to": project_to,
              "include_planned": "true" if include_planned else None}
    _show(url, token, "/v1/stats/mtbf", params, as_json, stats_render.mtbf)


@app.command()
def causes(
    since: SinceOption = None,
    until: UntilOption = None,
    job: Annotated[str | None, typer.Option(help="Only this job's interruptions.")] = None,
    url: UrlOption = client.DEFAULT_URL,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """The interruption ledger: count, share and GPU-hours lost per category and cause (GET /v1/stats/causes)."""
    _show(url, token, "/v1/stats/causes", {"since": since, "until": until, "job": job}, as_json, stats_render.causes)


@app.command()
def checkpoint(
    save_minutes: Annotated[float | None, typer.Option(help="Time to save a checkpoint; default measured.")] = None,
    restart_minutes: Annotated[float | None, typer.Option(help="Time to restart from one; default measured.")] = None,
    mtbf_hours: Annotated[float | None, typer.Option(help="The job's MTBF; default the cluster's measured one.")] = None,
    interval_minutes: Annotated[float | None, typer.Option(help="The interval in use; default Young's.")] = None,
    simulate: Annotated[int | None, typer.Option(help="Also run this many Monte Carlo runs (capped by the server).")] = None,
    distribution: Annotated[str, typer.Option(help="Failures in the simulation: exponential or weibull.")] = "exponential",
    shape: Annotated[float | None, typer.Option(help="Weibull shape; default the measured fit.")] = None,
    url: UrlOption = client.DEFAULT_URL,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """Young's and Daly's checkpoint intervals and the goodput they give (GET /v1/stats/checkpoint)."""
    params = {"save_minutes": save_minutes, "restart_minutes": restart_minutes, "mtbf_hours": mtbf_hours,
              "interval_minutes": interval_minutes, "simulate": simulate, "distribution": distribution, "shape": shape}
    _show(url, token, "/v1/stats/checkpoint", params, as_json, stats_render.checkpoint)


if __name__ == "__main__":
    app()
