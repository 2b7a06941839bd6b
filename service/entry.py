"""The `faultgraph` command. What runs on every GPU node — `faultgraph agent` and the Slurm
hooks, whose budget is about a second — loads only what it needs; every other command loads
the full CLI."""

import sys
from importlib import import_module

# first argument -> the module whose `run(args)` serves it without the server stack
LIGHT = {"agent": "faultgraph.ingest.agent.cli", "slurm": "faultgraph.service.schedulers.cli"}


def main() -> None:
    light = LIGHT.get(sys.argv[1]) if len(sys.argv) > 1 else None
    if light:
        import_module(light).run(sys.argv[2:])
    else:
        from faultgraph.service.cli import app

        app()
