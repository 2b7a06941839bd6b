"""The `faultgraph` command: the server, and the tools around it."""

import logging
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

from service.oncall_cli import register as register_oncall  # noqa: E402  (incidents, show, timeline, ack, resolve, demo)

register_oncall(app)

if __name__ == "__main__":
    app()
