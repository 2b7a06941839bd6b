"""`faultgraph agent`: the host agent's command. It runs on every GPU node, so it starts
without importing the server stack (FastAPI, SQLAlchemy, DuckDB, pyarrow, networkx):
`faultgraph.service.entry` routes `faultgraph agent …` here before anything else loads.
"""

import logging
import threading
from pathlib import Path
from typing import Annotated

import typer

from faultgraph.ingest.agent.connection import CaFileOption, CertOption, KeyOption


def agent(
    url: Annotated[str | None, typer.Option(help="The service, e.g. http://faultgraph:8080.")] = None,
    token: Annotated[str | None, typer.Option(envvar="FAULTGRAPH_TOKEN", help="Bearer token of role agent.")] = None,
    file: Annotated[list[str] | None, typer.Option("--file", help="A file or glob to follow like tail -F; repeatable.")] = None,
    kmsg: Annotated[bool | None, typer.Option("--kmsg/--no-kmsg", help="Read the kernel log (/dev/kmsg, else journalctl -k).")] = None,
    state_dir: Annotated[Path | None, typer.Option(help="Spool and saved positions (default /var/lib/faultgraph-agent).")] = None,
    config: Annotated[Path | None, typer.Option(help="TOML file with the same settings (flags win).")] = None,
    host: Annotated[str | None, typer.Option(help="This host's name in events (default: the hostname).")] = None,
    read_from: Annotated[str | None, typer.Option(help="Files present at the very first start: end (default) or beginning.")] = None,
    ca_file: CaFileOption = None,
    cert: CertOption = None,
    key: KeyOption = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log every queued batch.")] = False,
    inventory: Annotated[bool, typer.Option("--inventory", help="Also post this host's nvidia-smi/ibstat/lspci/ip outputs at start and daily (POST /v1/inventory).")] = False,
) -> None:
    """Run the host agent: follow logs, parse at the edge, spool, post to the service."""
    from faultgraph.ingest.agent.run import Agent, load_config, run_until_signalled

    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        settings = load_config(config, url=url, token=token, files=file, kmsg=kmsg, state_dir=state_dir,
                               host=host, read_from=read_from, ca_file=ca_file, cert=cert, key=key)
        host_agent = Agent(settings)
    except (ValueError, OSError) as exc:
        raise typer.BadParameter(str(exc)) from None
    if inventory:
        from faultgraph.ingest.agent.client import tls_context
        from faultgraph.ingest.agent.inventory import InventoryReporter

        tls = settings.ca_file or settings.cert or settings.key
        verify = tls_context(ca_file=settings.ca_file, cert=settings.cert, key=settings.key) if tls else True
        InventoryReporter(settings.url, settings.host, token=settings.token, verify=verify).start(threading.Event())
    run_until_signalled(host_agent)


def run(args: list[str]) -> None:
    """Run `faultgraph agent` with `args`, as the full CLI would."""
    app = typer.Typer(add_completion=False)
    app.command()(agent)
    typer.main.get_command(app).main(args=args, prog_name="faultgraph agent")
