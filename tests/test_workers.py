"""`faultgraph serve --workers N` (service/workers.py): N processes on one socket, each a
replica on one PostgreSQL store, supervised as one service."""

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import Server, child_pids, chosen_backend, start_server, stored_ids, wait_until
from typer.testing import CliRunner

from faultgraph.service.cli import app


@pytest.fixture
def two_workers(db_url: str) -> Iterator[tuple[Server, list[int]]]:
    """`serve --workers 2` on the test's PostgreSQL store, and its two worker pids."""
    server = start_server(db_url, args=("--workers", "2"))
    try:
        workers = child_pids(server.process.pid)
        assert len(workers) == 2
        yield server, workers
    finally:
        server.stop()


def test_more_than_one_worker_on_a_duckdb_file_is_refused_by_name(tmp_path):
    done = CliRunner().invoke(app, ["serve", "--workers", "2", "--db", f"duckdb:///{tmp_path / 'one.duckdb'}"])
    assert done.exit_code == 2 and "one process owns a DuckDB file" in done.stderr


@pytest.mark.postgres
@pytest.mark.skipif(chosen_backend() == "duckdb", reason="workers share a PostgreSQL store")
def test_workers_share_the_socket_store_everything_and_stop_together(two_workers):
    server, workers = two_workers
    ids = [f"w{i}" for i in range(40)]
    for i, event_id in enumerate(ids):  # a fresh connection each: the kernel picks the worker
        answer = httpx.post(server.url + "/v1/events", json=[{"id": event_id, "time": 1764403200 + i,
                                                               "host": "node0001", "kind": "gpu_xid",
                                                               "attrs": {"xid": 79}}])
        assert answer.json()["accepted"] == 1, answer.text
    assert set(ids) <= set(stored_ids(server.client))
    # One of them leads the engine (the lease): asked often enough, it answers once.
    assert any(httpx.get(server.url + "/healthz").json()["leader"] for _ in range(300))
    # Whichever worker a scrape reaches counts every worker's events.
    for _ in range(10):
        scraped = httpx.get(server.url + "/metrics").text
        assert 'faultgraph_events_ingested_total{host_class="node",kind="gpu_xid"} 40.0' in scraped, scraped[:2000]
        assert "faultgraph_store_events 40.0" in scraped

    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=30) == 0
    assert not any(Path(f"/proc/{pid}").exists() for pid in workers)


@pytest.mark.postgres
@pytest.mark.skipif(chosen_backend() == "duckdb", reason="workers share a PostgreSQL store")
def test_a_worker_that_dies_takes_the_service_down_for_its_manager_to_restart(two_workers):
    server, (first, second) = two_workers
    os.kill(first, signal.SIGKILL)
    assert server.process.wait(timeout=30) == 1
    # reaped by the parent before it exits; the check is that it is gone
    wait_until(lambda: not Path(f"/proc/{second}").exists(), within=10, what="the other worker gone")


def _gone(pid: int) -> bool:
    """Exited: no process, or a zombie nobody has reaped yet (its parent was killed)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.postgres
@pytest.mark.skipif(chosen_backend() == "duckdb", reason="workers share a PostgreSQL store")
def test_workers_stop_when_their_parent_is_killed_outright(two_workers):
    server, workers = two_workers
    server.process.kill()  # SIGKILL: the parent cannot pass anything on
    server.process.wait(timeout=10)
    wait_until(lambda: all(_gone(pid) for pid in workers), within=30, what="orphaned workers stopped")
