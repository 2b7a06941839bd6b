"""Test fixtures: the service over a real database, in this process or as its own process.

Route tests talk to the app in this process (`server`, `client`: the same `create_app` and
lifespan as `faultgraph serve` on loopback, with its store, writer and background loops,
requests through Starlette's TestClient). Where the process boundary is what is tested (a
crash, TLS, replicas, an agent or a CLI talking HTTP to the service) `start_server` runs
`faultgraph serve` as its own process on loopback; `live_server` is one per test module.

The backend is chosen by FAULTGRAPH_TEST_DB: unset or `duckdb` gives each test a fresh DuckDB
file; `postgresql` (the server on 127.0.0.1:5432 as user postgres) or a full
`postgresql://…` URL of a server where the user may create databases gives each test a
freshly created database on that server, dropped afterwards.
"""

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from fastapi import FastAPI

if TYPE_CHECKING:
    from datetime import datetime

    from fastapi.testclient import TestClient
    from sqlalchemy.engine import Engine

REFERENCE_DATA = Path(__file__).resolve().parent / "data" / "reference"  # sources in its README


def peak_rss_mib(pid: int) -> float:
    """A process's peak resident memory (VmHWM), for the benchmarks' reports."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int, *, main_thread: bool = False) -> float:
    """User + system CPU time a process has used so far (fields 14 and 15 of /proc/PID/stat):
    all its threads, or only its main thread (a server's event loop)."""
    stat = f"/proc/{pid}/task/{pid}/stat" if main_thread else f"/proc/{pid}/stat"
    fields = Path(stat).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def child_pids(pid: int) -> list[int]:
    """A server's worker processes (`serve --workers`); none for a single process."""
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def wait_until(condition, *, within: float, what: str) -> float:
    """Poll `condition` until true; the seconds it took, or fail after `within`."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > within:
            raise AssertionError(f"{what}: not within {within:.0f} s")
        time.sleep(0.1)
    return time.monotonic() - started


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    """A running service process and a client bound to it."""

    url: str
    db_url: str
    process: subprocess.Popen
    client: httpx.Client

    def stop(self, *, kill: bool = False) -> None:
        self.client.close()
        if self.process.poll() is None:
            self.process.kill() if kill else self.process.terminate()
            # A graceful stop waits up to 60 s for an engine pass in progress (service/loops.py).
            self.process.wait(timeout=90)


def start_server(db_url: str, *, env: dict[str, str] | None = None, args: tuple[str, ...] = ()) -> Server:
    """Start `faultgraph serve` as its own process and wait until /healthz answers."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "faultgraph.service.cli", "serve", "--port", str(port), "--db", db_url, *args],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90  # a loaded 2-core machine imports the stack slowly
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {process.stdout.read().decode(errors='replace')}")
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return Server(url, db_url, process, httpx.Client(base_url=url, timeout=60))
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("server did not become healthy in 90 s")


@dataclass
class InProcessServer:
    """The service app running in this process, and a client bound to it (no socket)."""

    db_url: str
    app: FastAPI
    client: "TestClient"

    def stop(self) -> None:
        """Run the app's shutdown (writer drained, loops stopped, store closed)."""
        self.client.__exit__(None, None, None)


def serve_in_process(db_url: str, *, env: dict[str, str] | None = None) -> InProcessServer:
    """What `faultgraph serve --db db_url` on 127.0.0.1 runs, in this process: the settings
    read from the environment, with `env` (`FAULTGRAPH_*` names) over them, the app's lifespan
    started. `env` is handed to the settings, not set in the process's environment: other
    threads (a test's webhook receiver, the app's loops) read the environment meanwhile, and
    under libfaketime every clock read does, so setting it while they run crashed the
    interpreter. Errors come back as the 500 a real server would send, not raised into the
    test."""
    # Imported here, not at the top: the benchmarks import this module's process helpers, and
    # Starlette 1.x warns on importing its TestClient beside httpx (pytest filters that).
    from fastapi.testclient import TestClient

    from faultgraph.service.app import create_app
    from faultgraph.service.config import Settings

    app = create_app(Settings(db_url=db_url, **(env or {})), open_without_tokens=True)
    client = TestClient(app, raise_server_exceptions=False)
    client.__enter__()
    return InProcessServer(db_url, app, client)


DEFAULT_POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def chosen_backend() -> str:
    """`duckdb`, or the URL of the PostgreSQL server the tests create their databases on."""
    choice = os.environ.get("FAULTGRAPH_TEST_DB", "duckdb").strip() or "duckdb"
    if choice == "duckdb":
        return choice
    if choice == "postgresql":
        return DEFAULT_POSTGRES
    if choice.startswith(("postgresql://", "postgresql+psycopg://", "postgres://")):
        return choice
    raise pytest.UsageError(f"FAULTGRAPH_TEST_DB={choice!r}: expected duckdb, postgresql, or a postgresql:// URL")


@contextmanager
def fresh_postgres_database(server_url: str) -> Iterator[str]:
    """Create a uniquely named database on the server at `server_url`; yield its URL (for
    psycopg 3); drop it afterwards, disconnecting whatever still holds it."""
    import psycopg
    import sqlalchemy as sa

    admin = sa.engine.make_url(server_url).set(drivername="postgresql+psycopg")
    name = f"faultgraph_test_{uuid.uuid4().hex[:16]}"
    dsn = admin.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def stored_ids(client: httpx.Client) -> list[str]:
    """Every stored event id, in time order, paging through GET /v1/events."""
    ids, cursor = [], None
    while True:
        page = client.get("/v1/events", params={"limit": 10_000, **({"cursor": cursor} if cursor else {})}).json()
        ids += [event["id"] for event in page["events"]]
        if not (cursor := page["next"]):
            return ids


def empty_store(tmp_path: Path, name: str) -> Iterator[str]:
    """The URL of a new, empty store on the backend under test (a DuckDB file in
    `tmp_path`, or a fresh PostgreSQL database dropped afterwards)."""
    backend = chosen_backend()
    if backend == "duckdb":
        yield f"duckdb:///{tmp_path / f'{name}.duckdb'}"
        return
    with fresh_postgres_database(backend) as url:
        yield url


@pytest.fixture
def db_url(tmp_path: Path) -> Iterator[str]:
    yield from empty_store(tmp_path, "faultgraph")


def store_token(db_url: str, *, role: str, name: str) -> str:
    """Create the store at `db_url` with one token of `role` (so every request then needs
    one) and return the token, before a server opens the store."""
    from faultgraph.service import store
    from faultgraph.service.auth import service as tokens

    engine = store.make_engine(db_url)
    store.init_schema(engine)
    with engine.begin() as conn:
        made = tokens.create(conn, role=role, name=name)[0]
    engine.dispose()
    return made


def store_events(engine: "Engine", items: list[dict], *, received: "datetime", enrich=None) -> None:
    """Insert validated events straight into a store, numbered after its last `seq`: the
    writer's insert without its thread, for tests of what reads the store."""
    import pyarrow as pa

    from faultgraph.service import store
    from faultgraph.service.events import service as events_service
    from faultgraph.service.events.models import events

    rows = events_service.to_rows(items, received=received, enrich=enrich)
    first = store.max_value(engine, events.c.seq) + 1
    rows = rows.append_column("seq", pa.array(range(first, first + rows.num_rows), pa.int64()))
    with engine.begin() as conn:
        store.insert_ignoring_duplicates(conn, rows, table_name="events")


@pytest.fixture
def engine(db_url: str) -> Iterator["Engine"]:
    """A fresh store's engine, schema created, for tests of the store itself."""
    from faultgraph.service import store

    engine = store.make_engine(db_url)
    store.init_schema(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def server(db_url: str) -> Iterator[InProcessServer]:
    """The service in this process over a fresh store."""
    srv = serve_in_process(db_url)
    yield srv
    srv.stop()


@pytest.fixture
def client(server: InProcessServer) -> "TestClient":
    return server.client


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`faultgraph serve` as its own process over a fresh store, one for the whole module:
    for tests whose subject talks HTTP to it from outside (an agent, a CLI, a raw socket)."""
    stores = empty_store(tmp_path_factory.mktemp("live"), "faultgraph")
    srv = start_server(next(stores))
    yield srv
    srv.stop()
    stores.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Markers from what a test needs, so `-m "not browser"` and the like select by need:
    `browser` (Debian's chromium), `slurm` (a real slurmctld + slurmd), `postgres` (a
    shared PostgreSQL store). `slow` is put on the tests themselves (tests/README.md)."""
    for item in items:
        needs = set(getattr(item, "fixturenames", ()))
        if needs & {"page", "browser"}:
            item.add_marker(pytest.mark.browser)
        if "slurm_cluster" in needs or item.module.__name__ == "test_slurm":
            item.add_marker(pytest.mark.slurm)
        if item.module.__name__ == "test_replicas":
            item.add_marker(pytest.mark.postgres)
