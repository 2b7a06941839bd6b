"""Commit notices between replicas (service/notices.py), on a real PostgreSQL: a server's
commit is announced, and another process's notices wake the engine once they settle."""

import socket
import threading

import psycopg
import pytest
from conftest import chosen_backend, start_server

from faultgraph.service import notices, store

pytestmark = [pytest.mark.postgres,
              pytest.mark.skipif(chosen_backend() == "duckdb", reason="notices pass between replicas on PostgreSQL")]


def notify(db_url: str, *payloads: str) -> None:
    """Notices from another session, in one transaction (delivered together at its commit)."""
    with psycopg.connect(store.libpq_dsn(db_url)) as conn:
        for payload in payloads:
            conn.execute("SELECT pg_notify(%s, %s)", (notices.CHANNEL, payload))


@pytest.fixture
def woken(db_url):
    """A listener on the test's database counting its wakes, with a short quiet period."""
    engine = store.make_engine(db_url)
    calls: list[int] = []
    called = threading.Event()

    def on_commits() -> None:
        calls.append(1)
        called.set()

    listener = notices.Listener(engine, on_commits, quiet_s=0.05)
    assert listener.listening.wait(10)  # a notice sent before LISTEN is never delivered
    yield calls, called
    listener.close()
    engine.dispose()


def test_a_burst_of_other_processes_commits_wakes_the_engine_once(db_url, woken):
    calls, called = woken
    notify(db_url, *(f"other-{i}" for i in range(5)))
    assert called.wait(10)
    called.clear()
    assert not called.wait(0.5) and len(calls) == 1


def test_its_own_commits_do_not_wake_it(db_url, woken):
    calls, called = woken
    notify(db_url, notices.sender())
    assert not called.wait(0.5)  # its own writer's settling already wakes its engine
    notify(db_url, "other")
    assert called.wait(10) and len(calls) == 1


def test_a_servers_group_commit_is_announced_with_its_host_and_process_id(db_url):
    server = start_server(db_url)
    try:
        with psycopg.connect(store.libpq_dsn(db_url), autocommit=True) as conn:
            conn.execute(f"LISTEN {notices.CHANNEL}")
            answer = server.client.post("/v1/events", json=[{"time": "2026-11-30T10:00:00Z", "host": "node0001",
                                                              "kind": "gpu_xid", "attrs": {"xid": 79}}])
            assert answer.json()["accepted"] == 1
            heard = [notice.payload for notice in conn.notifies(timeout=10, stop_after=1)]
        assert heard == [f"{socket.gethostname()}:{server.process.pid}"]
    finally:
        server.stop()
