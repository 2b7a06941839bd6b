"""The `faultgraph` command: the server, and the tools around it."""

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
import uvicorn
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from service import store
from service.app import create_app
from service.auth import service as tokens
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
    with _open_store(settings.db_url) as engine, engine.connect() as conn:
        live_tokens = tokens.count(conn)
    loopback = tokens.is_loopback(host)
    if not live_tokens and not loopback:
        typer.echo(
            f"refusing to listen on {host}: no access tokens exist, so anyone who can reach it could "
            f"post and read everything. Create one first (faultgraph token create --role admin "
            f"--db {settings.db_url}), or listen on 127.0.0.1.",
            err=True,
        )
        raise typer.Exit(2)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("faultgraph").info(
        "faultgraph listening on http://%s:%d, data in %s, %s", host, port, settings.db_url,
        f"{live_tokens} access token(s) live" if live_tokens else "no tokens: open to local clients",
    )
    uvicorn.run(create_app(settings, open_without_tokens=loopback), host=host, port=port, log_level="warning", access_log=False)


@contextmanager
def _open_store(db_url: str) -> Iterator[Engine]:
    """The store, schema ready, or a clear exit when another process holds it."""
    engine = store.make_engine(db_url)
    try:
        store.init_schema(engine)
        yield engine
    except DBAPIError as exc:
        if "lock" not in str(exc).lower():
            raise
        typer.echo(
            f"the database {db_url} is held by another process (a running faultgraph serve?). "
            "Stop it first, or manage tokens over HTTP with an admin token: POST/GET /v1/tokens, "
            "DELETE /v1/tokens/{id}.",
            err=True,
        )
        raise typer.Exit(1) from None
    finally:
        engine.dispose()


token_app = typer.Typer(help="Access tokens: create, list, revoke (SPEC §9).", no_args_is_help=True)
app.add_typer(token_app, name="token")


@token_app.command("create")
def token_create(
    role: Annotated[str, typer.Option(help="agent (post events, logs, jobs), reader (read everything) or admin (all).")],
    name: Annotated[str | None, typer.Option(help="A label for `token list`, e.g. the host or team.")] = None,
    host_pattern: Annotated[str | None, typer.Option(help="Agent tokens only: a shell glob (node00*) of the hosts it may post for.")] = None,
    db: DbOption = None,
) -> None:
    """Create a token and print it, alone, on standard output (it is not shown again)."""
    settings = Settings(db_url=db) if db else Settings()
    try:
        with _open_store(settings.db_url) as engine, engine.begin() as conn:
            token, _ = tokens.create(conn, role=role, name=name, host_pattern=host_pattern)
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(token)


@token_app.command("list")
def token_list(
    all_: Annotated[bool, typer.Option("--all", help="Include revoked tokens.")] = False,
    db: DbOption = None,
) -> None:
    """List tokens (never their secrets), one per line, tab-separated."""
    settings = Settings(db_url=db) if db else Settings()
    with _open_store(settings.db_url) as engine, engine.connect() as conn:
        infos = tokens.get_all(conn, include_revoked=all_)
    typer.echo("id\trole\tname\thost_pattern\tcreated\trevoked")
    for info in infos:
        fields = (info.id, info.role, info.name, info.host_pattern, info.created, info.revoked)
        typer.echo("\t".join("-" if value is None else str(value) for value in fields))


@token_app.command("revoke")
def token_revoke(
    token_id: Annotated[str, typer.Argument(help="The token's id (see `token list`), or the token itself.")],
    db: DbOption = None,
) -> None:
    """Revoke a token; a running server stops accepting it within seconds."""
    settings = Settings(db_url=db) if db else Settings()
    if token_id.startswith(tokens.PREFIX + "_"):
        token_id = token_id.split("_", 2)[1]
    with _open_store(settings.db_url) as engine, engine.begin() as conn:
        done = tokens.revoke(conn, token_id=token_id)
    if not done:
        typer.echo(f"no live token has id {token_id}", err=True)
        raise typer.Exit(1)
    typer.echo(f"revoked {token_id}", err=True)


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


if __name__ == "__main__":
    app()
