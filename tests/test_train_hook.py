"""faultgraph.train: samples reach a real server in batches; a dead service costs the loop nothing."""

import subprocess
import sys
import time

import pytest

from faultgraph.train import Reporter


def test_steps_are_posted_in_batches_with_compute_and_wait(live_server):
    """The hook in a training process posts over HTTP to the service's process."""
    server = live_server
    reporter = Reporter(server.url, job="hook-job", rank=3, host="node0003", interval=0.2)
    for step in range(1, 6):
        with reporter.timed_step(step, tokens=4096):
            time.sleep(0.01)
            with reporter.waiting():
                time.sleep(0.02)
    reporter.close()
    assert reporter.posted == 5 and reporter.failures == 0
    got = server.client.get("/v1/events", params={"kind": "train_step", "job": "hook-job"}).json()["events"]
    assert sorted(e["attrs"]["step"] for e in got) == [1, 2, 3, 4, 5]
    sample = got[0]
    assert sample["rank"] == 3 and sample["host"] == "node0003" and sample["attrs"]["tokens"] == 4096
    attrs = sample["attrs"]
    assert attrs["wait_ms"] >= 15 and attrs["compute_ms"] >= 5
    assert abs(attrs["compute_ms"] + attrs["wait_ms"] - attrs["duration_ms"]) < 0.01


def test_a_dead_service_neither_blocks_nor_raises():
    reporter = Reporter("http://127.0.0.1:9", job="j", rank=0, interval=0.05, max_queue=100, timeout=0.5)
    for step in range(10_000):
        reporter.step(step, 1000.0, compute_ms=800.0, wait_ms=200.0)
    reporter.step("not a step", "nor a time")  # bad input from the loop is dropped, not raised
    time.sleep(0.3)
    reporter.close(timeout=2.0)
    assert reporter.posted == 0 and reporter.failures >= 1 and reporter.dropped >= 9_900


def test_the_hook_imports_only_the_standard_library():
    code = ("import sys, faultgraph.train; "
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('fastapi', 'sqlalchemy', 'httpx', 'pydantic', 'numpy', 'orjson', 'ruptures', 'duckdb') "
            "or m.startswith(('faultgraph.service', 'faultgraph.attribution', 'faultgraph.ingest'))); print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_only_an_http_url_is_accepted():
    """The hook opens its URL with urllib, which would also read `file:` URLs: refused up front."""
    for url in ("file:///etc/passwd", "ftp://faultgraph:8080", "faultgraph:8080"):
        with pytest.raises(ValueError, match="expected http:// or https://"):
            Reporter(url, job="j")
