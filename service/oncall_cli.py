"""The on-call commands: `incidents`, `show`, `timeline`, `ack`, `resolve` over the REST
API (through service/client.py), and `demo`, which serves a simulated run of faults so the
UI has something to show.

Registered on the main `faultgraph` app by `register(app)` (see service/cli.py), so the
module can be imported without importing the CLI that imports it.
"""

import contextlib
import json
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
import uvicorn
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.progress import Progress
from rich.table import Table
from rich.text import Text

from faultgraph.ingest.causes import CAUSE_CATEGORY
from faultgraph.service import client
from faultgraph.service import demo as demo_day
from faultgraph.service.client import JsonOption as AsJson
from faultgraph.service.client import TokenOption as Token
from faultgraph.service.client import UrlOption as Url
from faultgraph.service.client import counted, short_time
from faultgraph.simulate import evaluate

# Piped output is read by people too (less, a ticket): no 80-column squeeze; scripts use --json.
console = Console() if sys.stdout.isatty() else Console(width=160)
errors = Console(stderr=True)

Incident = Annotated[str, typer.Argument(help="Incident id, e.g. inc-000123.")]
STATUS_STYLE = {"open": "bold red", "acknowledged": "yellow", "resolved": "green"}
# `timeline` prints these kinds one per line; the storm of symptoms is summarised.
SYMPTOM_KINDS = frozenset({"nccl_timeout", "nccl_error", "host_heartbeat", "train_anomaly"})


def call(method: str, url: str, path: str, token: str | None, **kwargs: Any) -> Any:
    """The API's answer; a failure becomes a one-line message and exit status 1."""
    try:
        return client.request(method, url, path, token=token, **kwargs)
    except client.ApiError as exc:
        fail(str(exc))


def fail(message: str) -> None:
    errors.print(f"[red]error:[/red] {message}", highlight=False)
    raise typer.Exit(1)


def emit_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2) + "\n")


def action_text(action: dict) -> str:
    """What on-call should do, as the incidents page words it: kind `none` is no action,
    whatever component it names (planned maintenance names its host)."""
    if action.get("kind", "none") == "none":
        return "no action"
    return f"{action['kind']} {action.get('target') or ''}".strip()


def root_text(incident: dict) -> str:
    root = incident.get("root_cause") or {}
    confirmed = " (confirmed)" if root.get("confirmed") else ""
    return f"{root.get('cause', 'unknown')} [{root.get('category', '?')}]{confirmed}"


def list_incidents(url: Url = client.DEFAULT_URL, token: Token = None,
                   status: Annotated[str | None, typer.Option(help="open, acknowledged or resolved.")] = None,
                   job: Annotated[str | None, typer.Option(help="Only this job's incidents.")] = None,
                   category: Annotated[str | None, typer.Option(help="gpu, host, network, software, maintenance, unknown.")] = None,
                   since: Annotated[str | None, typer.Option(help="RFC 3339 time or epoch seconds.")] = None,
                   limit: Annotated[int, typer.Option(min=1, max=1000)] = 50,
                   as_json: AsJson = False) -> None:
    """Incidents, newest first."""
    params = {k: v for k, v in {"status": status, "job": job, "category": category, "since": since, "limit": limit}.items() if v is not None}
    page = call("GET", url, "/v1/incidents", token, params=params)
    if as_json:
        emit_json(page)
        return
    if not page["incidents"]:  # said in words, not as a header with no rows
        asked = " ".join(f"--{name} {value}" for name, value in params.items() if name != "limit")
        console.print(f"No incident{' matches ' + asked if asked else ' yet'}.", highlight=False)
        return
    table = Table(title=f"{len(page['incidents'])} incident(s)", title_justify="left")
    table.add_column("id", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("started (UTC)", no_wrap=True)
    table.add_column("job", no_wrap=True)
    table.add_column("root cause", ratio=1)
    table.add_column("symptoms", justify="right", no_wrap=True)
    table.add_column("action", ratio=1)
    for incident in page["incidents"]:
        action = incident.get("action") or {}
        table.add_row(incident["id"], Text(incident["status"], style=STATUS_STYLE.get(incident["status"], "")),
                      short_time((incident.get("interruption") or {}).get("start") or incident.get("opened"))[5:16],
                      incident.get("job") or incident.get("scope") or "—",
                      Text(f"{root_text(incident)} on {(incident.get('root_cause') or {}).get('component') or '?'}"),
                      f"{incident.get('symptoms', 0):,}", action_text(action))
    console.print(table)


def show(incident_id: Incident, url: Url = client.DEFAULT_URL, token: Token = None, as_json: AsJson = False) -> None:
    """One incident: root cause, explanation, action, candidates, cost."""
    incident = call("GET", url, f"/v1/incidents/{incident_id}", token)
    if as_json:
        emit_json(incident)
        return
    root = incident.get("root_cause") or {}
    action = incident.get("action") or {}
    interruption = incident.get("interruption") or {}
    lines = [
        f"[bold]{escape(root.get('explanation') or 'No explanation.')}[/bold]",
        "",
        f"status      [{STATUS_STYLE.get(incident['status'], '')}]{escape(incident['status'])}[/]",
        escape(f"root cause  {root_text(incident)} on {root.get('component') or 'unknown component'}, "
        f"confidence {float(root.get('confidence') or 0):.0%}"),
        escape(f"action      {action_text(action)}: {action.get('detail') or ''}".rstrip(": ")),
        escape(f"job         {incident.get('job') or incident.get('scope') or '—'}"),
        f"symptoms    {incident.get('symptoms', 0):,} on {counted(incident.get('hosts', 0), 'host')}",
        f"interrupted {short_time(interruption.get('start'))} → {short_time(interruption.get('end')) if interruption.get('end') else 'ongoing'}"
        f", {interruption.get('gpus', 0):,} GPUs, {interruption.get('gpu_hours_lost', 0):,.1f} GPU-hours lost",
    ]
    for candidate in incident.get("candidates") or []:
        lines.append(escape(f"candidate   {candidate.get('component')}  {float(candidate.get('score') or 0):.0%}"))
    for note in incident.get("notes") or []:
        lines.append(escape(f"note        {short_time(note.get('time'))} {note.get('author') or ''}: {note.get('text')}"))
    console.print(Panel("\n".join(lines), title=escape(incident["id"]), title_align="left", highlight=False))


def timeline(incident_id: Incident, url: Url = client.DEFAULT_URL, token: Token = None,
             every: Annotated[bool, typer.Option("--all", help="Every symptom on its own line, not summarised.")] = False,
             as_json: AsJson = False) -> None:
    """The incident's events in time order; symptoms away from the root's host are summarised."""
    incident = call("GET", url, f"/v1/incidents/{incident_id}", token)
    events = call("GET", url, f"/v1/incidents/{incident_id}/timeline", token)["events"]
    if as_json:
        emit_json(events)
        return
    root = incident.get("root_cause") or {}
    root_hosts = {end.split("/")[0] for end in (root.get("component") or "").split("~") if end}
    evidence = set(root.get("evidence") or [])
    table = Table(title=f"{incident_id}: {len(events):,} events", title_justify="left")
    for column in ("time", "host", "component", "kind", "rank"):
        table.add_column(column, no_wrap=True)
    # The message column alone may shrink (rich narrows wrappable columns first; with every
    # column no_wrap it narrowed all alike, to "2026-12…" and zero-width hosts), each message
    # cut to one line.
    table.add_column("message", overflow="ellipsis")
    summarised: Counter = Counter()
    summarised_hosts: set[str] = set()
    for event in events:
        if not every and event["kind"] in SYMPTOM_KINDS and event["host"] not in root_hosts and event["id"] not in evidence:
            summarised[event["kind"]] += 1
            summarised_hosts.add(event["host"])
            continue
        style = "bold red" if event["id"] in evidence else ""
        table.add_row(short_time(event["time"]), Text(event["host"]), Text(event.get("component") or "—"), event["kind"],
                      "" if event.get("rank") is None else str(event["rank"]), Text(event.get("message") or "", no_wrap=True, overflow="ellipsis"), style=style)
    console.print(table)
    if summarised:
        kinds = ", ".join(f"{n:,} {kind}" for kind, n in summarised.most_common())
        console.print(f"… and {kinds} on {len(summarised_hosts):,} other hosts (--all prints them)")


def ack(incident_id: Incident, url: Url = client.DEFAULT_URL, token: Token = None,
        note: Annotated[str | None, typer.Option(help="A note for the incident's record.")] = None,
        as_json: AsJson = False) -> None:
    """Acknowledge: someone is on it."""
    incident = call("PATCH", url, f"/v1/incidents/{incident_id}", token, json={"status": "acknowledged", **({"note": note} if note else {})})
    if as_json:
        emit_json(incident)
    else:
        console.print(f"{incident['id']} acknowledged")


def resolve(incident_id: Incident, url: Url = client.DEFAULT_URL, token: Token = None,
            cause: Annotated[str | None, typer.Option(help="The confirmed cause, e.g. gpu_hbm or network_switch_cable (an unknown one is answered with the list); its category follows.")] = None,
            component: Annotated[str | None, typer.Option(help="The confirmed root component, e.g. node0042/gpu3.")] = None,
            note: Annotated[str | None, typer.Option(help="A note for the incident's record.")] = None,
            as_json: AsJson = False) -> None:
    """Resolve, optionally confirming or correcting the root cause (statistics use it)."""
    if cause is not None and cause not in CAUSE_CATEGORY:
        fail(f"--cause {cause!r}: expected one of {', '.join(CAUSE_CATEGORY)}")
    body: dict[str, Any] = {"status": "resolved"}
    if cause or component:
        body["root_cause"] = {k: v for k, v in {"cause": cause, "component": component}.items() if v}
    if note:
        body["note"] = note
    incident = call("PATCH", url, f"/v1/incidents/{incident_id}", token, json=body)
    if as_json:
        emit_json(incident)
    else:
        console.print(f"{incident['id']} resolved: {root_text(incident)} on {incident['root_cause'].get('component')}", markup=False)


def _seed(server: uvicorn.Server, url: str, hosts: int) -> None:
    """Wait for the server, replay the simulated run as `faultgraph eval` does, print where to look."""
    while not server.started:
        time.sleep(0.05)
    sent = demo_day.scenario(hosts)
    with Progress(console=console) as progress, httpx.Client(base_url=url, timeout=600) as http:
        # the bar counts events posted; how many lines the parsers keep is known only at the end
        task = progress.add_task("replaying the simulated faults", total=None)
        evaluate.replay(http, sent, progress=lambda n: progress.advance(task, n), batch=demo_day.BATCH)
        progress.update(task, total=progress.tasks[task].completed)
    incidents = call("GET", url, "/v1/incidents", None, params={"limit": 1000})["incidents"]
    console.print(f"{len(sent.records):,} log lines and events, {len(sent.truth)} faults injected; "
                  f"{len(incidents)} incidents", highlight=False)
    console.print(f"UI:             {url}/ui/", highlight=False)
    # the on-call commands default to :8080; this says where the demo is, whatever its port
    console.print(f"CLI:            FAULTGRAPH_URL={url} faultgraph incidents", highlight=False)
    if incidents:
        console.print(f"first incident: {url}/ui/incident.html?id={incidents[-1]['id']}", highlight=False)
    console.print("Ctrl-C stops the demo.", highlight=False)


def demo(host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
         port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
         db: Annotated[str | None, typer.Option("--db", help="Database URL; default a fresh DuckDB file in a temporary directory.")] = None,
         hosts: Annotated[int, typer.Option(min=4, help="Hosts in the generated cluster (two jobs share them).")] = 32) -> None:
    """Serve a generated cluster and its jobs through a simulated run of faults.

    One fault of every kind the simulator knows; then the addresses of the UI and of the first incident are printed.
    """
    from faultgraph.service.app import create_app
    from faultgraph.service.auth import service as tokens
    from faultgraph.service.config import Settings

    if not tokens.is_loopback(host):
        fail(f"--host {host}: the demo serves without tokens, so only on loopback (e.g. 127.0.0.1)")
    with contextlib.ExitStack() as scratch:  # the default store goes when the demo stops, however it stops
        db_url = db or f"duckdb:///{Path(scratch.enter_context(tempfile.TemporaryDirectory(prefix='faultgraph-demo-'))) / 'demo.duckdb'}"
        app = create_app(Settings(db_url=db_url), open_without_tokens=True)
        server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False))
        console.print(f"faultgraph demo: data in {db_url}{'' if db else ' (removed when the demo stops; --db keeps it)'}",
                      highlight=False)
        seeding = threading.Thread(target=_seed_or_stop, args=(server, f"http://{host}:{port}", hosts), daemon=True)
        seeding.start()
        # uvicorn re-raises the SIGTERM it stopped on once it has restored the handler it
        # found: the default one would end the process before the scratch directory goes
        signal.signal(signal.SIGTERM, _exit)
        server.run()


def _exit(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _seed_or_stop(server: uvicorn.Server, url: str, hosts: int) -> None:
    try:
        _seed(server, url, hosts)
    except (typer.Exit, Exception) as exc:  # the server must not outlive a failed demo
        if not isinstance(exc, typer.Exit):
            errors.print(f"[red]error:[/red] the demo could not be loaded: {exc}", highlight=False)
        server.should_exit = True


def register(app: typer.Typer) -> None:
    """Add the on-call commands to the `faultgraph` command."""
    app.command("incidents")(list_incidents)
    app.command("show")(show)
    app.command("timeline")(timeline)
    app.command("ack")(ack)
    app.command("resolve")(resolve)
    app.command("demo")(demo)
