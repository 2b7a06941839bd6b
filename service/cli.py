"""The `faultgraph` command: the server, and the tools around it."""

import logging
from pathlib import Path
from typing import Annotated

import typer
import uvicorn

from service.app import create_app
from service.config import Settings

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


@app.command()
def simulate(
    out: Annotated[Path, typer.Option("--out", help="Directory to write topology.json, jobs.json, records.jsonl, truth.json.")],
    hosts: Annotated[int, typer.Option(help="Hosts in the generated rail-optimized cluster.")] = 128,
    faults: Annotated[int, typer.Option(help="Faults to inject (a concurrent pair counts two).")] = 200,
    seed: Annotated[int, typer.Option(help="Random seed; the same seed writes the same set.")] = 0,
    storm: Annotated[bool, typer.Option("--storm", help="Write the storm scenario instead: one job on every host, one XID 79, every other rank times out.")] = False,
) -> None:
    """Write a simulated scenario set: log lines and events with injected faults and their ground truth."""
    from attribution import simulate as sim

    try:
        scenario = sim.storm(seed=seed, hosts=hosts) if storm else sim.scenario_set(faults, seed=seed, hosts=hosts)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    scenario.save(out)
    typer.echo(f"{len(scenario.truth)} faults, {len(scenario.records)} records, {len(scenario.jobs)} jobs written to {out}")


from service.oncall_cli import register as register_oncall  # noqa: E402  (incidents, show, timeline, ack, resolve, demo)

register_oncall(app)


if __name__ == "__main__":
    app()
