"""`faultgraph diagnose FILE…`: the same diagnosis as `POST /v1/diagnose`, in process, no
server. Registered on the main command by `register(app)` (see service/cli.py)."""

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from faultgraph.service.client import counted
from faultgraph.service.diagnose import service
from faultgraph.service.diagnose.models import DiagnoseBodyAdapter
from faultgraph.service.events.service import BodyError
from faultgraph.service.http import first_error

console = Console() if sys.stdout.isatty() else Console(width=160)
CATEGORY_STYLE = {"gpu": "bold red", "host": "magenta", "network": "blue", "software": "green",
                  "maintenance": "white", "unknown": "dim"}
# Where a paste names no host, the answer's component and action target are null.
UNNAMED = "[dim]an unnamed host[/dim]"


def _read(files: list[Path]) -> list[str]:
    lines: list[str] = []
    for path in files:
        try:
            text = sys.stdin.read() if str(path) == "-" else path.read_text(errors="replace")
        except OSError as exc:
            raise typer.BadParameter(f"{path}: {exc.strerror}") from None
        lines += text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
    return lines


def diagnose(
    files: Annotated[list[Path], typer.Argument(help="Log files as pasted or saved (job output, dmesg, py-spy dumps); '-' reads stdin.")],
    host: Annotated[str | None, typer.Option("--host", help="The host the lines came from, where they do not say.")] = None,
    job_hosts: Annotated[str | None, typer.Option("--job-hosts", help="The job's hosts in rank order, comma-separated, so ranks can be named as GPUs.")] = None,
    gpus_per_host: Annotated[int, typer.Option(min=1, help="With --job-hosts: ranks per host.")] = 8,
    as_json: Annotated[bool, typer.Option("--json", help="Print the answer as POST /v1/diagnose gives it.")] = False,
) -> None:
    """Diagnose pasted logs without a server: ranked incidents, the lines that decided them, what is missing."""
    body: dict = {"lines": _read(files), "host": host}
    if job_hosts:
        body["job"] = {"hosts": [h.strip() for h in job_hosts.split(",") if h.strip()], "gpus_per_host": gpus_per_host}
    try:
        checked = DiagnoseBodyAdapter.validate_python(body)
        answer = service.diagnose(checked, received=datetime.now(UTC))
    except BodyError as exc:
        raise typer.BadParameter(str(exc)) from None
    except ValidationError as exc:  # a host that is not a host name: named by the option it came from
        where, what = first_error(exc)
        option = "--job-hosts" if where.startswith("job.hosts") else "--host" if where == "host" else where
        raise typer.BadParameter(what, param_hint=option) from None
    if as_json:
        typer.echo(json.dumps(answer, indent=2))
        return
    _print(answer)


def _print(answer: dict) -> None:
    console.print(f"{counted(answer['lines'], 'line')}, {counted(answer['events'], 'event')}, "
                  f"{counted(answer['unmatched'], 'line')} matched no rule")
    if not answer["incidents"]:
        console.print("[bold]No diagnosis:[/] nothing in these lines names a failure. Paste the job's error output, "
                      "the hosts' `dmesg`, or a `py-spy dump` of every rank.")
        return
    for n, incident in enumerate(answer["incidents"], 1):
        root = incident["root_cause"]
        style = CATEGORY_STYLE.get(root["category"], "")
        place = f"[bold]{escape(root['component'])}[/bold]" if root["component"] else UNNAMED
        console.print(f"\n[bold]{n}. [{style}]{root['category']}[/{style}] / {root['cause']}[/bold] at {place}"
                      f"  (confidence {root['confidence']:.0%})")
        console.print(f"   {escape(root['explanation'])}")
        action = incident["action"]
        target = f" {escape(action['target'])}" if action["target"] else ""
        console.print(f"   [bold]Action:[/] {action['kind']}{target}: {escape(action['detail'])}")
        for quoted in incident["lines"][:12]:
            console.print(f"   [dim]{quoted['line']:>6}[/dim] [yellow]{escape(quoted['text'])}[/yellow]", soft_wrap=True)
        if len(incident["lines"]) > 12:
            console.print(f"   [dim]… {len(incident['lines']) - 12} more lines[/dim]")
        for hint in incident["missing"]:
            console.print(f"   [bold]Missing:[/] {escape(hint)}")


def register(app: typer.Typer) -> None:
    """Add `diagnose` to the `faultgraph` command."""
    app.command("diagnose")(diagnose)
