"""The `faultgraph` command: the server, and the tools around it."""

import inspect
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import httpx
import orjson
import sqlalchemy as sa
import typer
import uvicorn
from rich.console import Console
from rich.table import Table
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from faultgraph.attribution.generators import LAYOUTS
from faultgraph.service import client, store, transfer
from faultgraph.service.app import create_app
from faultgraph.service.auth import service as tokens
from faultgraph.service.client import JsonOption, TokenOption, UrlOption
from faultgraph.service.config import Settings
from faultgraph.service.stats import render as stats_render

app = typer.Typer(help="faultgraph: the fault-diagnosis timeline of a GPU training cluster.", no_args_is_help=True)
topology_app = typer.Typer(help="Generate cluster topologies and upload them.", no_args_is_help=True)
app.add_typer(topology_app, name="topology")

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



DirArgument = Annotated[Path, typer.Argument(help="Directory of the export (Parquet files and manifest.json).")]


def _print_counts(verb: str, counts: dict[str, int], where: str) -> None:
    for name, rows in counts.items():
        typer.echo(f"{name:<24} {rows:>12,} rows")
    typer.echo(f"{verb} {sum(counts.values()):,} rows in {len(counts)} tables {where}")


@app.command("export")
def export_command(directory: DirArgument, db: DbOption = None) -> None:
    """Write every table to Parquet files (one consistent snapshot), to move to another store."""
    settings = Settings(db_url=db) if db else Settings()
    engine = store.make_engine(settings.db_url)
    try:
        store.init_schema(engine)
        counts = transfer.export_all(engine, directory)
    finally:
        engine.dispose()
    _print_counts("exported", counts, f"to {directory}")


@app.command("import")
def import_command(directory: DirArgument, db: DbOption = None) -> None:
    """Load an export into a store (stop the service first); rows already there are skipped."""
    settings = Settings(db_url=db) if db else Settings()
    engine = store.make_engine(settings.db_url)
    try:
        counts = transfer.import_all(engine, directory)
    except ValueError as exc:
        typer.echo(f"faultgraph import: {exc}", err=True)
        raise typer.Exit(2) from None
    finally:
        engine.dispose()
    where = sa.engine.make_url(settings.db_url).render_as_string(hide_password=True)
    _print_counts("imported", counts, f"into {where} (rows already there are not counted)")


@app.command()
def prune(
    db: DbOption = None,
    retain_days: Annotated[int | None, typer.Option(help="Days raw low-severity events are kept (default FAULTGRAPH_RETAIN_RAW_DAYS or 30).")] = None,
    sample_days: Annotated[int | None, typer.Option(help="Days samples (train_step, gpu_perf) are kept (default FAULTGRAPH_RETAIN_SAMPLE_DAYS or 7).")] = None,
    archive: Annotated[Path | None, typer.Option(help="Folder that receives each pruned day as Parquet.")] = None,
) -> None:
    """Roll up, archive and remove raw low-severity events past their retention (idempotent;
    safe to interrupt). The service runs the same pass every hour."""
    from datetime import UTC, datetime

    from faultgraph.service.events.flows import Retention
    from faultgraph.service.events.flows import prune as prune_store

    settings = Settings(db_url=db) if db else Settings()
    defaults = Retention()
    retention = Retention(raw_days=defaults.raw_days if retain_days is None else retain_days,
                          sample_days=defaults.sample_days if sample_days is None else sample_days,
                          archive=archive or defaults.archive)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    engine = store.make_engine(settings.db_url)
    try:
        store.init_schema(engine)
        done = prune_store(engine, retention, now=datetime.now(UTC))
    finally:
        engine.dispose()
    typer.echo(f"pruned {done['rows']:,} raw events over {done['days']} days")


@app.command()
def simulate(
    out: Annotated[Path, typer.Option("--out", help="Directory to write topology.json, jobs.json, records.jsonl, truth.json.")],
    hosts: Annotated[int, typer.Option(help="Hosts in the generated rail-optimized cluster.")] = 128,
    faults: Annotated[int, typer.Option(help="Faults to inject (a concurrent pair counts two).")] = 200,
    seed: Annotated[int, typer.Option(help="Random seed; the same seed writes the same set.")] = 0,
    storm: Annotated[bool, typer.Option("--storm", help="Write the storm scenario instead: one job on every host, one XID 79, every other rank times out.")] = False,
) -> None:
    """Write a simulated scenario set: log lines and events with injected faults and their ground truth."""
    from faultgraph.attribution import simulate as sim

    try:
        scenario = sim.storm(seed=seed, hosts=hosts) if storm else sim.scenario_set(faults, seed=seed, hosts=hosts)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    scenario.save(out)
    typer.echo(f"{len(scenario.truth)} faults, {len(scenario.records)} records, {len(scenario.jobs)} jobs written to {out}")
@topology_app.command("generate")
def topology_generate(
    layout: Annotated[str, typer.Argument(help=f"One of: {', '.join(LAYOUTS)}.")],
    hosts: Annotated[int | None, typer.Option(help="Hosts (rail-optimized).")] = None,
    gpus_per_host: Annotated[int | None, typer.Option(help="GPUs, and NICs, per host.")] = None,
    nvswitches: Annotated[int | None, typer.Option(help="NVSwitches per host.")] = None,
    hosts_per_su: Annotated[int | None, typer.Option(help="Hosts per scalable unit (one leaf per rail each).")] = None,
    spines: Annotated[int | None, typer.Option(help="Spine switches (default: non-blocking).")] = None,
    host_prefix: Annotated[str | None, typer.Option(help="Host name prefix, e.g. node → node0042.")] = None,
    fabric: Annotated[str | None, typer.Option(help="ib or eth.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here instead of standard output.")] = None,
) -> None:
    """Write a generated topology as the JSON body of PUT /v1/topology."""
    generator = LAYOUTS.get(layout)
    if generator is None:
        raise typer.BadParameter(f"unknown layout {layout!r}; known: {', '.join(LAYOUTS)}", param_hint="LAYOUT")
    given = {name: value for name, value in {
        "hosts": hosts, "gpus_per_host": gpus_per_host, "nvswitches": nvswitches, "hosts_per_su": hosts_per_su,
        "spines": spines, "host_prefix": host_prefix, "fabric": fabric,
    }.items() if value is not None}
    accepted = inspect.signature(generator).parameters
    unused = [f"--{name.replace('_', '-')}" for name in given if name not in accepted]
    if unused:
        raise typer.BadParameter(f"{layout} does not take {', '.join(unused)}")
    try:
        body = generator(**given)
    except (TypeError, ValueError) as exc:
        raise typer.BadParameter(str(exc)) from None
    blob = orjson.dumps(body)
    if output is None:
        sys.stdout.buffer.write(blob + b"\n")
    else:
        output.write_bytes(blob)


@topology_app.command("upload")
def topology_upload(
    file: Annotated[Path, typer.Argument(help="A topology JSON file ('-' for standard input).", allow_dash=True)],
    url: Annotated[str, typer.Option(help="The service, e.g. http://127.0.0.1:8080.", envvar="FAULTGRAPH_URL")] = "http://127.0.0.1:8080",
    token: Annotated[str | None, typer.Option(help="Bearer token with the admin role.", envvar="FAULTGRAPH_TOKEN")] = None,
) -> None:
    """Replace the service's topology with FILE; prints the new version and its counts."""
    try:
        body = sys.stdin.buffer.read() if str(file) == "-" else file.read_bytes()
    except OSError as exc:
        typer.echo(f"cannot read {file}: {exc.strerror}", err=True)
        raise typer.Exit(1) from None
    headers = {"content-type": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    try:
        answer = httpx.put(url.rstrip("/") + "/v1/topology", content=body, headers=headers, timeout=600)
    except httpx.HTTPError as exc:
        typer.echo(f"upload failed: {exc}", err=True)
        raise typer.Exit(1) from None
    if answer.status_code != 200:
        try:
            detail = answer.json().get("detail", answer.text)
        except ValueError:
            detail = answer.text
        typer.echo(f"upload refused ({answer.status_code}): {detail}", err=True)
        raise typer.Exit(1)
    typer.echo(answer.text)
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


@app.command("eval")
def evaluate(
    scenario: Annotated[Path | None, typer.Option(help="A directory written by `faultgraph simulate`; default: generate one.")] = None,
    faults: Annotated[int, typer.Option(help="Faults to generate when no --scenario is given.")] = 200,
    hosts: Annotated[int, typer.Option(help="Hosts of the generated cluster.")] = 128,
    seed: Annotated[int, typer.Option(help="Seed of the generated scenario.")] = 0,
    url: Annotated[str | None, typer.Option(help="A running service to replay into (it should be empty); default: a throwaway server.", envvar="FAULTGRAPH_URL")] = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """Replay a simulated scenario through the service and score the incidents against its ground truth."""
    import tempfile

    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from faultgraph.attribution import simulate as sim
    from faultgraph.service import evaluate as ev

    loaded = sim.Scenario.load(scenario) if scenario else sim.scenario_set(faults, seed=seed, hosts=hosts)
    headers = {"authorization": f"Bearer {token}"} if token else {}

    def run(base: str) -> ev.Report:
        with httpx.Client(base_url=base, headers=headers, timeout=600) as http, Progress(transient=True) as progress:
            task = progress.add_task("replaying", total=len(loaded.records))
            ev.replay(http, loaded, progress=lambda n: progress.advance(task, n))
            return ev.score(ev.incidents(http), loaded.truth)

    if url:
        report = run(url)
    else:
        with tempfile.TemporaryDirectory() as tmp, ev.throwaway_server(Path(tmp)) as base:
            report = run(base)
    result = report.as_dict()
    if as_json:
        typer.echo(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
        return
    table = Table(title=f"faultgraph eval: {len(loaded.truth)} faults")
    for column in ("mechanism", "faults", "top-1 %", "top-3 %", "category %", "missed", "split", "decoy blamed"):
        table.add_column(column, justify="left" if column == "mechanism" else "right")
    for name, row in result["mechanisms"].items():
        table.add_row(name, str(row["faults"]), str(row["top1_pct"]), str(row["top3_pct"]), str(row["category_pct"]),
                      str(row["missed"]), str(row["split"]), str(row["decoy_blamed"]))
    console = Console()
    console.print(table)
    console.print(f"incidents merged wrongly: {result['merged']}; incidents matching no fault: {result['spurious']}")


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
    from faultgraph.ingest.agent.run import Agent, load_config, run_until_signalled

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


from faultgraph.service.oncall_cli import register as register_oncall  # noqa: E402  (incidents, show, timeline, ack, resolve, demo)

register_oncall(app)


if __name__ == "__main__":
    app()
