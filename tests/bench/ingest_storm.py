"""Benchmark: an ingest storm from many agents, with a SIGKILL-free accounting of every event.

Run: python tests/bench/ingest_storm.py [--agents 32] [--seconds 10] [--batch 1000]

Target (issue 8): 50,000 events/s from many agents without a crash or a lost acknowledged
event. Agent processes (not threads: a client must not share the GIL with another) post
pre-encoded batches as fast as they are answered, honour 503 + Retry-After, and count what
was acknowledged; afterwards every acknowledged id is looked up. The baseline, measured in
the same run, is one agent alone: the ratio says how much the service gains from
concurrency (group commit) rather than how fast this machine is.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conftest import start_server  # noqa: E402


def agent(url: str, n: int, seconds: float, batch: int, out: mp.Queue) -> None:
    """Post batches for `seconds`; report (acknowledged, 503s, latencies)."""
    acknowledged, busy, latencies = 0, 0, []
    deadline = time.monotonic() + seconds
    with httpx.Client(base_url=url, timeout=60) as client:
        b = 0
        while time.monotonic() < deadline:
            body = orjson.dumps([
                {"time": 1764403200 + i, "host": f"node{n:05d}", "kind": "nic_error", "id": f"a{n}-{b}-{i}",
                 "attrs": {"device": "mlx5_0", "count": i}}
                for i in range(batch)
            ])
            while True:
                started = time.perf_counter()
                answer = client.post("/v1/events", content=body, headers={"content-type": "application/json"})
                latencies.append(time.perf_counter() - started)
                if answer.status_code != 503:
                    break
                busy += 1
                time.sleep(float(answer.headers.get("retry-after", "1")))
            if answer.status_code != 200:
                raise SystemExit(f"agent {n}: {answer.status_code} {answer.text[:200]}")
            acknowledged += answer.json()["accepted"]
            b += 1
    out.put((acknowledged, busy, latencies))


def storm(url: str, agents: int, seconds: float, batch: int, offset: int) -> dict:
    out: mp.Queue = mp.Queue()
    procs = [mp.Process(target=agent, args=(url, offset + n, seconds, batch, out)) for n in range(agents)]
    started = time.monotonic()
    for proc in procs:
        proc.start()
    results = [out.get() for _ in procs]
    for proc in procs:
        proc.join()
    elapsed = time.monotonic() - started
    latencies = sorted(x for _, _, lat in results for x in lat)
    acknowledged = sum(r[0] for r in results)
    return {
        "acknowledged": acknowledged,
        "rate": acknowledged / elapsed,
        "busy": sum(r[1] for r in results),
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
    }


def count_stored(client: httpx.Client) -> int:
    total, cursor = 0, None
    while True:
        page = client.get("/v1/events", params={"limit": 10_000, **({"cursor": cursor} if cursor else {})}).json()
        total += len(page["events"])
        if not (cursor := page["next"]):
            return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        srv = start_server(f"duckdb:///{tmp}/storm.duckdb")
        try:
            alone = storm(srv.url, 1, args.seconds, args.batch, offset=0)
            crowd = storm(srv.url, args.agents, args.seconds, args.batch, offset=1)
            stored = count_stored(srv.client)
        finally:
            srv.stop()
    expected = alone["acknowledged"] + crowd["acknowledged"]
    print(f"baseline, 1 agent:   {alone['rate']:>9,.0f} events/s  p50 {alone['p50_ms']:.0f} ms  p99 {alone['p99_ms']:.0f} ms")
    print(f"storm, {args.agents} agents: {crowd['rate']:>9,.0f} events/s  p50 {crowd['p50_ms']:.0f} ms  "
          f"p99 {crowd['p99_ms']:.0f} ms  503s {crowd['busy']}  ({crowd['rate'] / alone['rate']:.1f}x baseline)")
    print(f"acknowledged {expected:,}, stored {stored:,}, lost {expected - stored:,}")
    if stored != expected:
        raise SystemExit("stored count differs from acknowledged count")


if __name__ == "__main__":
    main()
