"""The `faultgraph` command. `faultgraph agent` runs on every GPU node and loads only what
the agent needs; every other command loads the full CLI."""

import sys


def main() -> None:
    if sys.argv[1:2] == ["agent"]:
        from faultgraph.ingest.agent.cli import run

        run(sys.argv[2:])
    else:
        from faultgraph.service.cli import app

        app()
