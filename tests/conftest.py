"""Test fixtures: a real `faultgraph serve` process on loopback over a real DuckDB file."""

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if not SHARED_DATA.exists():  # a clone placed elsewhere: the brief's ../shared
    SHARED_DATA = Path("/work/shared/data")


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
            self.process.wait(timeout=30)


def start_server(db_url: str, *, env: dict[str, str] | None = None, args: tuple[str, ...] = ()) -> Server:
    """Start `faultgraph serve` as its own process and wait until /healthz answers."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "serve", "--port", str(port), "--db", db_url, *args],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {process.stdout.read().decode(errors='replace')}")
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return Server(url, db_url, process, httpx.Client(base_url=url, timeout=60))
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("server did not become healthy in 30 s")


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"duckdb:///{tmp_path / 'faultgraph.duckdb'}"


@pytest.fixture
def server(db_url: str) -> Iterator[Server]:
    srv = start_server(db_url)
    yield srv
    srv.stop()


@pytest.fixture
def client(server: Server) -> httpx.Client:
    return server.client
