"""The `faultgraph` command: the server, and the tools around it."""

import gc
import inspect
import logging
import socket
import ssl
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any

import httpx
import orjson
import sqlalchemy as sa
import typer
import uvicorn
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table
from rich.text import Text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from faultgraph.attribution.generators import LAYOUTS
from faultgraph.ingest.agent.cli import agent as agent_command
from faultgraph.ingest.agent.connection import CaFileOption, CertOption, KeyOption
from faultgraph.service import audit, client, metrics, store, transfer
from faultgraph.service.app import create_app
from faultgraph.service.auth import service as tokens
from faultgraph.service.auth.tls import PeerNameProtocol
from faultgraph.service.auth.tls import server_context as server_tls_context
from faultgraph.service.auth.views import audit_detail
from faultgraph.service.client import JsonOption, TokenOption, UrlOption
from faultgraph.service.config import Settings
from faultgraph.service.stats import render as stats_render
from faultgraph.service.workers import run_workers

app = typer.Typer(help="faultgraph: the fault-diagnosis timeline of a GPU training cluster.", no_args_is_help=True)
topology_app = typer.Typer(help="Discover, generate and upload cluster topologies.", no_args_is_help=True)
app.add_typer(topology_app, name="topology")

@app.callback()
def main(ca_file: CaFileOption = None, cert: CertOption = None, key: KeyOption = None) -> None:
    """faultgraph: the fault-diagnosis timeline of a GPU training cluster.

    --ca-file/--cert/--key (or FAULTGRAPH_CA_FILE/_CERT/_KEY) apply to every command that
    calls a server: `faultgraph --ca-file ca.pem incidents --url https://…`."""
    client.use_tls(client.Tls(ca_file, cert, key))


def load_settings(db: str | None = None) -> Settings:
    """The settings from flags and environment; a malformed variable ends the command with its name."""
    try:
        return Settings(db_url=db) if db else Settings()
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        typer.echo(f"invalid setting: {problems}", err=True)
        raise typer.Exit(2) from None


def _check_archive(settings: Settings) -> None:
    """A malformed FAULTGRAPH_ARCHIVE* ends the command with what is wrong, not a traceback."""
    from faultgraph.service.events import archive

    try:
        archive.from_settings(settings)
    except ValueError as exc:
        typer.echo(f"invalid setting: {exc}", err=True)
        raise typer.Exit(2) from None


DbOption = Annotated[str | None, typer.Option("--db", help="Database URL (env FAULTGRAPH_DB); default a DuckDB file in the user's data directory.")]

# The server's collector thresholds (CPython's are 700, 10, 10). An engine pass holds about
# 100,000 events of a dense stream as dicts; at the defaults the request threads' allocations
# set off collections over them every few seconds, and the collector held the interpreter
# lock for 13.6 s of a 36 s bulk run (service/README, bulk ingest). Nearly everything the
# service allocates is freed by reference counting; cycles are still collected, less often.
GC_THRESHOLDS = (50_000, 20, 10)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    db: DbOption = None,
    tls_cert: Annotated[Path | None, typer.Option(envvar="FAULTGRAPH_TLS_CERT", help="Serve HTTPS with this certificate (PEM, chain included).")] = None,
    tls_key: Annotated[Path | None, typer.Option(envvar="FAULTGRAPH_TLS_KEY", help="Its private key, if not in the certificate file.")] = None,
    tls_client_ca: Annotated[Path | None, typer.Option(envvar="FAULTGRAPH_TLS_CLIENT_CA", help="Require client certificates signed by this CA: mutual TLS.")] = None,
    workers: Annotated[int, typer.Option(min=1, envvar="FAULTGRAPH_WORKERS", help="Server processes on one socket, each a replica (PostgreSQL only).")] = 1,
) -> None:
    """Run the service (ingest, query, incidents, statistics, web UI)."""
    settings = load_settings(db)
    _check_archive(settings)
    if workers > 1 and not settings.db_url.startswith("postgresql"):
        typer.echo(f"--workers {workers}: one process owns a DuckDB file; more than one worker needs a PostgreSQL store",
                   err=True)
        raise typer.Exit(2)
    ssl_context = _server_tls(tls_cert, tls_key, tls_client_ca)
    with _open_store(settings.db_url, instead=TOKENS_OVER_HTTP) as engine, engine.connect() as conn:
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
    gc.set_threshold(*GC_THRESHOLDS)  # before the workers fork: they inherit it
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("faultgraph")
    tls: dict[str, Any] = {"ssl_context_factory": lambda *_: ssl_context, "http": PeerNameProtocol} if ssl_context else {}

    def configured() -> uvicorn.Config:
        return uvicorn.Config(create_app(settings, open_without_tokens=loopback), host=host, port=port,
                              log_level="warning", access_log=False, **tls)

    def listening(config: uvicorn.Config) -> socket.socket:
        """The bound socket, and only then the line saying so: a port in use ends in
        uvicorn's one error line (exit 3), not after "listening on"."""
        sock = config.bind_socket()
        log.info(
            "faultgraph listening on %s://%s:%d, data in %s, %s%s", "https" if ssl_context else "http", host, port,
            settings.db_url, f"{live_tokens} access token(s) live" if live_tokens else "no tokens: open to local clients",
            ", client certificates required" if tls_client_ca else "",
        )
        if ssl_context is None and not loopback:
            log.warning("serving plain HTTP on %s: bearer tokens cross the network in clear text; "
                        "give --tls-cert/--tls-key", host)
        return sock

    if workers == 1:
        config = configured()
        uvicorn.Server(config).run(sockets=[listening(config)])
        return
    with tempfile.TemporaryDirectory(prefix="faultgraph-metrics-") as shared:
        metrics.share_between_processes(Path(shared))  # before the app makes its metrics
        config = configured()
        code = run_workers(lambda sock: uvicorn.Server(config).run(sockets=[sock]), listening(config), workers)
    raise typer.Exit(code)


def _server_tls(cert: Path | None, key: Path | None, client_ca: Path | None) -> ssl.SSLContext | None:
    """The HTTPS context `serve` was asked for, or a clear exit naming the file that failed."""
    if cert is None:
        if key or client_ca:
            typer.echo("--tls-key and --tls-client-ca need --tls-cert", err=True)
            raise typer.Exit(2)
        return None
    try:
        return server_tls_context(cert, key, client_ca)
    except (OSError, ValueError) as exc:
        typer.echo(f"cannot serve HTTPS with --tls-cert {cert}"
                   f"{f' --tls-key {key}' if key else ''}{f' --tls-client-ca {client_ca}' if client_ca else ''}: {exc}", err=True)
        raise typer.Exit(2) from None


TOKENS_OVER_HTTP = ", or manage tokens over HTTP with an admin token: POST/GET /v1/tokens, DELETE /v1/tokens/{id}"


@contextmanager
def _open_store(db_url: str, *, instead: str = "") -> Iterator[Engine]:
    """The store, schema ready, or one clear line and exit 1 when another process holds it
    (DuckDB's lock error is a page of traceback); `instead` names another way to do it."""
    engine = store.make_engine(db_url)
    try:
        store.init_schema(engine)
        yield engine
    except DBAPIError as exc:
        if "lock" not in str(exc).lower():
            raise
        typer.echo(f"the database {db_url} is held by another process (a running faultgraph serve?). "
                   f"Stop it first{instead}.", err=True)
        raise typer.Exit(1) from None
    finally:
        engine.dispose()


token_app = typer.Typer(help="Access tokens: create, list, rotate, revoke (roles: reader, agent, admin).", no_args_is_help=True)
app.add_typer(token_app, name="token")
DurationOption = Annotated[str | None, typer.Option(help="Lifetime, e.g. 30d, 12h, 2w; after it the token gets 401 like a wrong one.")]


def _duration(text: str | None, option: str) -> timedelta | None:
    try:
        return tokens.parse_duration(text) if text else None
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=option) from None


@token_app.command("create")
def token_create(
    role: Annotated[str, typer.Option(help="agent (post events, logs, jobs), reader (read everything) or admin (all).")],
    name: Annotated[str | None, typer.Option(help="A label for `token list`, e.g. the host or team.")] = None,
    host_pattern: Annotated[str | None, typer.Option(help="Agent tokens only: a shell glob (node00*) of the hosts it may post for.")] = None,
    cert_name: Annotated[str | None, typer.Option(help="Accept it only over mutual TLS from a client certificate of this name (CN or DNS name).")] = None,
    expires: DurationOption = None,
    db: DbOption = None,
) -> None:
    """Create a token and print it, alone, on standard output (it is not shown again)."""
    settings = load_settings(db)
    expires_in = _duration(expires, "--expires")
    try:
        with _open_store(settings.db_url, instead=TOKENS_OVER_HTTP) as engine, engine.begin() as conn:
            token, info = tokens.create(conn, role=role, name=name, host_pattern=host_pattern, cert_name=cert_name,
                                        expires_in=expires_in)
            audit.record_in(conn, action="token.create", target=info.id, detail=audit_detail(info))
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(token)


@token_app.command("list")
def token_list(
    all_: Annotated[bool, typer.Option("--all", help="Include revoked and expired tokens.")] = False,
    db: DbOption = None,
) -> None:
    """List tokens (never their secrets), one per line, tab-separated; times in UTC."""
    settings = load_settings(db)
    with _open_store(settings.db_url, instead=TOKENS_OVER_HTTP) as engine, engine.connect() as conn:
        infos = tokens.get_all(conn, include_revoked=all_)
    typer.echo("id\trole\tname\thost_pattern\tcert_name\tcreated\texpires\tlast_used\trevoked")
    for info in infos:
        fields = (info.id, info.role, info.name, info.host_pattern, info.cert_name, info.created, info.expires,
                  info.last_used, info.revoked)
        typer.echo("\t".join("-" if value is None else str(value) for value in fields))


@token_app.command("rotate")
def token_rotate(
    token_id: Annotated[str, typer.Argument(help="The token's id, the token itself, or its name if only one live token has it.")],
    overlap: Annotated[str, typer.Option(help="How long the old token stays valid beside the new one.")] = "24h",
    expires: DurationOption = None,
    db: DbOption = None,
) -> None:
    """Print a new token with the old one's name, role and bindings.

    The old one keeps working for --overlap, so hosts can be handed the new one without a gap.
    """
    settings = load_settings(db)
    overlap_for, expires_in = _duration(overlap, "--overlap"), _duration(expires, "--expires")
    try:
        with _open_store(settings.db_url, instead=TOKENS_OVER_HTTP) as engine, engine.begin() as conn:
            token_id = tokens.resolve_id(conn, token_id)
            done = tokens.rotate(conn, token_id=token_id, overlap=overlap_for or timedelta(0), expires_in=expires_in)
            if done is not None:
                audit.record_in(conn, action="token.rotate", target=token_id,
                                detail={"new": done[1].id, "old_expires": str(done[2].expires), **audit_detail(done[1])})
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if done is None:
        typer.echo(f"no live token has id {token_id}", err=True)
        raise typer.Exit(1)
    typer.echo(done[0])
    typer.echo(f"{token_id} stays valid until {done[2].expires} UTC", err=True)


@token_app.command("revoke")
def token_revoke(
    token_id: Annotated[str, typer.Argument(help="The token's id (see `token list`), the token itself, or its name if only one live token has it.")],
    db: DbOption = None,
) -> None:
    """Revoke a token; a running server stops accepting it within seconds."""
    settings = load_settings(db)
    try:
        with _open_store(settings.db_url, instead=TOKENS_OVER_HTTP) as engine, engine.begin() as conn:
            token_id = tokens.resolve_id(conn, token_id)
            done = tokens.revoke(conn, token_id=token_id)
            if done:
                audit.record_in(conn, action="token.revoke", target=token_id)
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
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
    settings = load_settings(db)
    with _open_store(settings.db_url) as engine:
        counts = transfer.export_all(engine, directory)
    _print_counts("exported", counts, f"to {directory}")


@app.command("import")
def import_command(directory: DirArgument, db: DbOption = None) -> None:
    """Load an export into a store (stop the service first); rows already there are skipped."""
    settings = load_settings(db)
    try:
        transfer.read_manifest(directory)  # a wrong directory is told before a store is created
        with _open_store(settings.db_url) as engine:
            counts = transfer.import_all(engine, directory)
    except ValueError as exc:
        typer.echo(f"faultgraph import: {exc}", err=True)
        raise typer.Exit(2) from None
    where = sa.engine.make_url(settings.db_url).render_as_string(hide_password=True)
    _print_counts("imported", counts, f"into {where} (rows already there are not counted)")


@app.command()
def prune(
    db: DbOption = None,
    retain_days: Annotated[int | None, typer.Option(min=0, help="Days raw low-severity events are kept (default FAULTGRAPH_RETAIN_RAW_DAYS or 30).")] = None,
    sample_days: Annotated[int | None, typer.Option(min=0, help="Days samples (train_step, gpu_perf) are kept (default FAULTGRAPH_RETAIN_SAMPLE_DAYS or 7).")] = None,
    archive: Annotated[str | None, typer.Option(help="Folder or s3://bucket/prefix that receives each pruned day as Parquet "
                                                     "(default FAULTGRAPH_ARCHIVE; S3 endpoint and keys from FAULTGRAPH_ARCHIVE_*).")] = None,
) -> None:
    """Roll up, archive and remove raw low-severity events past their retention.

    Idempotent and safe to interrupt; the service runs the same pass every hour.
    """
    from datetime import UTC, datetime

    from faultgraph.service.events.flows import Retention
    from faultgraph.service.events.flows import prune as prune_store

    settings = load_settings(db)
    given = {"retain_raw_days": retain_days, "retain_sample_days": sample_days, "archive": archive}
    settings = settings.model_copy(update={name: value for name, value in given.items() if value is not None})
    _check_archive(settings)
    retention = Retention.from_settings(settings)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with _open_store(settings.db_url, instead=": the service runs this pass every hour") as engine:
        done = prune_store(engine, retention, now=datetime.now(UTC))
    typer.echo(f"pruned {done['rows']:,} raw events over {done['days']} days")


@app.command()
def simulate(
    out: Annotated[Path, typer.Option("--out", help="Directory to write topology.json, jobs.json, records.jsonl, truth.json.")],
    hosts: Annotated[int, typer.Option(help="Hosts in the generated rail-optimized cluster.")] = 128,
    faults: Annotated[int, typer.Option(help="Faults to inject (a concurrent pair counts two).")] = 200,
    seed: Annotated[int, typer.Option(help="Random seed; the same seed writes the same set.")] = 0,
    storm: Annotated[bool, typer.Option("--storm", help="Write the storm scenario instead: one job on every host, one XID 79, every other rank times out.")] = False,
    families: Annotated[str, typer.Option(help="classic (the original mechanisms), hard (postmortem families, skewed clocks, months 1–9, benign noise), heldout (Llama 3 mechanisms the engine was never tuned on: GSP, SRAM, host memory, SSD, power, silent data corruption), heldout2 (held-out round 2: IB retries exceeded, a GPU's fatal PCIe AER, Fabric Manager down, a kernel soft lockup), heldout3 (held-out round 3: a PCIe switch failing under a GPU and its NIC, the OOM killer ending a rank, a GPU missing after a reboot) or heldout4 (held-out round 4: an HCA's firmware fatal error, a failed optic, one GPU's NVLink, a host's NFS client hanging in a checkpoint write).")] = "classic",
    layout: Annotated[str, typer.Option(help="rail-optimized (DGX H100-style) or gb200-nvl72 (racks of 18 trays; see --racks).")] = "rail-optimized",
    racks: Annotated[int, typer.Option(help="GB200 NVL72 racks (--layout gb200-nvl72).")] = 4,
    failslow: Annotated[int | None, typer.Option(help="Write fail-slow jobs instead: this many per family (simulate/failslow.py).")] = None,
) -> None:
    """Write a simulated scenario set: log lines and events with injected faults and their ground truth."""
    from faultgraph.simulate import failslow as simulate_slow
    from faultgraph.simulate import scenarios as sim

    try:
        scenario = (simulate_slow.scenario_set(failslow, seed=seed) if failslow else
                    _nvl72_scenario(layout, faults, seed, racks) or (
                        sim.storm(seed=seed, hosts=hosts) if storm else _scenario(families, faults, seed, hosts)))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    scenario.save(out)
    typer.echo(f"{len(scenario.truth)} faults, {len(scenario.records)} records, {len(scenario.jobs)} jobs written to {out}")
def _nvl72_scenario(layout: str, faults: int, seed: int, racks: int):
    """The GB200 NVL72 families' scenario for `--layout gb200-nvl72`, else None."""
    if layout == "rail-optimized":
        return None
    if layout != "gb200-nvl72":
        raise ValueError(f"unknown layout {layout!r}; known: rail-optimized, gb200-nvl72")
    from faultgraph.simulate import nvl72

    return nvl72.scenario_set(faults, seed=seed, racks=racks)


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
    racks: Annotated[int | None, typer.Option(help="GB200 NVL72 racks (gb200-nvl72).")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here instead of standard output.")] = None,
) -> None:
    """Write a generated topology as the JSON body of PUT /v1/topology."""
    generator = LAYOUTS.get(layout)
    if generator is None:
        raise typer.BadParameter(f"unknown layout {layout!r}; known: {', '.join(LAYOUTS)}", param_hint="LAYOUT")
    given = {name: value for name, value in {
        "hosts": hosts, "gpus_per_host": gpus_per_host, "nvswitches": nvswitches, "hosts_per_su": hosts_per_su,
        "spines": spines, "host_prefix": host_prefix, "fabric": fabric, "racks": racks,
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


@topology_app.command("discover")
def topology_discover(
    directory: Annotated[Path, typer.Argument(help="DIR/<host>/nvidia-smi-topo-m.txt, nvidia-smi-q.xml|txt, ibdev2netdev.txt, ibstat.txt, lspci.txt, ip-addr.json; DIR/fabric/ibnetdiscover.txt.", exists=True, file_okay=False)],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here instead of standard output.")] = None,
) -> None:
    """Build the topology from the tools' outputs (one folder per host: nvidia-smi, ibstat, lspci, ip); missing or unreadable inputs are named on standard error."""
    from faultgraph.ingest.discover.build import discover

    body, problems = discover(directory)
    for problem in problems:
        typer.echo(f"discover: {problem}", err=True)
    if not body["components"]:  # piped to `topology upload`, an empty graph would replace the real one
        typer.echo(f"discover: nothing found in {directory}; no topology written", err=True)
        raise typer.Exit(1)
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
    try:
        with client.http_client(url, token=token, timeout=600) as http:
            answer = http.put("/v1/topology", content=body, headers={"content-type": "application/json"})
    except (httpx.HTTPError, client.ApiError) as exc:
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
          tables: Callable[[dict], Sequence[Table | Text]]) -> None:
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
    simulate: Annotated[int | None, typer.Option(min=2, max=1_000_000, help="Also run this many Monte Carlo runs (2 to 1,000,000).")] = None,
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


def _scenario(families: str, faults: int, seed: int, hosts: int):
    """A generated scenario of the named families (`faultgraph simulate`, `faultgraph eval`)."""
    from faultgraph.simulate import heldout, postmortems
    from faultgraph.simulate import scenarios as sim

    if families == "heldout":
        return heldout.heldout_set(faults, seed=seed, hosts=hosts)
    if families == "heldout2":
        return heldout.heldout_set(faults, seed=seed, hosts=hosts, families=heldout.ROUND_2)
    if families == "heldout3":
        return heldout.heldout_set(faults, seed=seed, hosts=hosts, families=heldout.ROUND_3)
    if families == "heldout4":
        return heldout.heldout_set(faults, seed=seed, hosts=hosts, families=heldout.ROUND_4)
    if families == "hard":
        return postmortems.hard_set(faults, seed=seed, hosts=hosts)
    if families == "classic":
        return sim.scenario_set(faults, seed=seed, hosts=hosts)
    raise typer.BadParameter(f"--families: expected classic, hard, heldout, heldout2, heldout3 or heldout4, got {families!r}")


def _refuse_unless_empty(url: str, token: str | None) -> None:
    """A scenario's replay replaces the server's topology and jobs, and every incident the
    server holds is scored against the scenario: only an empty server gives a true score."""
    try:
        held = client.get(url, "/v1/events", token=token, params={"limit": 1})["events"]
    except client.ApiError as exc:
        raise typer.BadParameter(str(exc), param_hint="--url") from None
    if held:
        raise typer.BadParameter(f"{url} already holds events: replaying would overwrite its topology and jobs, "
                                 "and its incidents would be scored as the scenario's; give an empty server, "
                                 "or omit --url for a throwaway one", param_hint="--url")


@app.command("eval")
def evaluate(
    scenario: Annotated[Path | None, typer.Option(help="A directory written by `faultgraph simulate`; default: generate one.")] = None,
    faults: Annotated[int, typer.Option(help="Faults to generate when no --scenario is given.")] = 200,
    hosts: Annotated[int, typer.Option(help="Hosts of the generated cluster.")] = 128,
    seed: Annotated[int, typer.Option(help="Seed of the generated scenario.")] = 0,
    families: Annotated[str, typer.Option(help="Generated scenario: classic, hard, heldout, heldout2, heldout3 or heldout4 (see `faultgraph simulate --help`).")] = "classic",
    failslow: Annotated[int | None, typer.Option(help="Generate fail-slow jobs instead: this many per family.")] = None,
    url: Annotated[str | None, typer.Option(help="An empty running service to replay into; default: a throwaway server. Not read from FAULTGRAPH_URL: a replay overwrites the server's topology and jobs.")] = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
    layout: Annotated[str, typer.Option(help="Generated scenario's layout: rail-optimized or gb200-nvl72.")] = "rail-optimized",
    racks: Annotated[int, typer.Option(help="GB200 NVL72 racks (--layout gb200-nvl72).")] = 4,
) -> None:
    """Replay a simulated scenario through the service and score the incidents against its ground truth."""
    import tempfile

    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from faultgraph.simulate import evaluate as ev
    from faultgraph.simulate import failslow as simulate_slow
    from faultgraph.simulate import scenarios as sim

    try:
        generated = None if scenario or failslow else _nvl72_scenario(layout, faults, seed, racks)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    loaded = (sim.Scenario.load(scenario) if scenario else simulate_slow.scenario_set(failslow, seed=seed) if failslow
              else generated or _scenario(families, faults, seed, hosts))
    slow = bool(loaded.truth) and all(f["mechanism"] in simulate_slow.FAMILIES for f in loaded.truth)

    def run(base: str) -> ev.Report | dict:
        with client.http_client(base, token=token, timeout=600) as http, Progress(transient=True) as progress:
            task = progress.add_task("replaying", total=len(loaded.records))
            ev.replay(http, loaded, progress=lambda n: progress.advance(task, n))
            found = ev.incidents(http)
            return simulate_slow.score(found, loaded.truth) if slow else ev.score(found, loaded.truth)

    if url:
        _refuse_unless_empty(url, token)
        report = run(url)
    else:
        with tempfile.TemporaryDirectory() as tmp, ev.throwaway_server(Path(tmp)) as base:
            report = run(base)
    if slow:  # fail-slow families: their own table
        typer.echo(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
        return
    assert isinstance(report, ev.Report)  # the fail-slow families' dict was printed above
    result = report.as_dict()
    if as_json:
        typer.echo(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
        return
    table = Table(title=f"faultgraph eval: {len(loaded.truth)} faults")
    for column in ("mechanism", "faults", "top-1 %", "top-3 %", "category %", "cause %", "missed", "split", "decoy blamed"):
        table.add_column(column, justify="left" if column == "mechanism" else "right")
    for name, row in result["mechanisms"].items():
        table.add_row(name, str(row["faults"]), str(row["top1_pct"]), str(row["top3_pct"]), str(row["category_pct"]),
                      str(row["cause_pct"]), str(row["missed"]), str(row["split"]), str(row["decoy_blamed"]))
    console = Console()
    console.print(table)
    console.print(f"incidents merged wrongly: {result['merged']}; incidents matching no fault: {result['spurious']}")
    other = ", ".join(f"{n} {kind}" for kind, n in sorted(result["other_types"].items())) or "none"
    console.print(f"incidents that are not interruptions: {other}")
    reliability = Table(title="confidence vs top-1 accuracy")
    for column in ("confidence", "incidents", "right", "accuracy %"):
        reliability.add_column(column, justify="right")
    for row in result["reliability"]:
        reliability.add_row(row["confidence"], str(row["incidents"]), str(row["right"]),
                            "—" if row["accuracy_pct"] is None else str(row["accuracy_pct"]))
    console.print(reliability)


app.command(name="agent")(agent_command)


from faultgraph.service.oncall_cli import register as register_oncall  # noqa: E402  (incidents, show, timeline, ack, resolve, demo)

register_oncall(app)

from faultgraph.service.diagnose.cli import register as register_diagnose  # noqa: E402  (diagnose FILE…)

register_diagnose(app)

from faultgraph.service.schedulers.cli import k8s_app, slurm_app  # noqa: E402  (SPEC §4; slurm also by a short path, see entry.py)

app.add_typer(slurm_app, name="slurm")
app.add_typer(k8s_app, name="k8s")

from faultgraph.service.fleet.cli import register as register_fleet  # noqa: E402  (fleet, goodput)

register_fleet(app)


if __name__ == "__main__":
    app()
