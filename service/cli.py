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


@app.command()
def agent(
    url: Annotated[str | None, typer.Option(help="The service, e.g. http://faultgraph:8080.")] = None,
    token: Annotated[str | None, typer.Option(envvar="FAULTGRAPH_TOKEN", help="Bearer token of role agent (env FAULTGRAPH_TOKEN).")] = None,
    file: Annotated[list[str] | None, typer.Option("--file", help="A file or glob to follow like tail -F; repeatable.")] = None,
    kmsg: Annotated[bool | None, typer.Option("--kmsg/--no-kmsg", help="Read the kernel log (/dev/kmsg, else journalctl -k).")] = None,
    state_dir: Annotated[Path | None, typer.Option(help="Spool and saved positions (default /var/lib/faultgraph-agent).")] = None,
    config: Annotated[Path | None, typer.Option(help="TOML file with the same settings (flags win).")] = None,
    host: Annotated[str | None, typer.Option(help="This host's name in events (default: the hostname).")] = None,
    read_from: Annotated[str | None, typer.Option(help="Files present at the very first start: end (default) or beginning.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log every queued batch.")] = False,
) -> None:
    """Run the host agent: follow logs, parse at the edge, spool, post to the service."""
    from ingest.agent.run import Agent, load_config, run_until_signalled

    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        settings = load_config(config, url=url, token=token, files=file, kmsg=kmsg, state_dir=state_dir,
                               host=host, read_from=read_from)
        host_agent = Agent(settings)
    except (ValueError, OSError) as exc:
        raise typer.BadParameter(str(exc)) from None
    run_until_signalled(host_agent)


if __name__ == "__main__":
    app()
