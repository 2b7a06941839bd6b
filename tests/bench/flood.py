"""Benchmark: one agent floods ingest while eight others post at their normal pace.

Run: python tests/bench/flood.py [--seconds 10] [--flooders 3] [--flood-batch 2000] [--runs 1]

Three servers in one run, each on a fresh DuckDB file, each with nine agent tokens:
  baseline   the eight steady agents alone;
  limited    the same, plus one token posting 2,000-event batches in a loop from several
             processes at once, under the default ingest limits (service/auth/limits.py);
  unlimited  the same flood with the limits lifted (rate, burst and queue share huge).
A steady agent posts 50 events every 0.5 s and counts every answer that is not a 200; the
flooder honours nothing and counts its 429s; it runs niced, as its CPU would be
another host's on a real cluster. Reported: the steady agents' p50/p99 latency
as a ratio to the baseline's, their failures, and what the flooder got stored. A second
figure is the limiter's own cost per ingest request (admit + release, in process).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conftest import start_server  # noqa: E402

from faultgraph.service import store  # noqa: E402
from faultgraph.service.auth import service as tokens  # noqa: E402
from faultgraph.service.auth.limits import IngestLimiter  # noqa: E402

STEADY_AGENTS = 8


def steady(url: str, token: str, host: str, seconds: float, out: mp.Queue) -> None:
    """50 events every 0.5 s; report (latencies, failures, acknowledged)."""
    latencies, failures, acked = [], 0, 0
    deadline = time.monotonic() + seconds
    with httpx.Client(base_url=url, timeout=60, headers={"authorization": f"Bearer {token}"}) as http:
        http.get("/healthz")  # connect first: the first request's handshake is not the service's latency
        batch = 0
        while time.monotonic() < deadline:
            body = orjson.dumps([{"time": 1764403200 + i, "host": host, "kind": "nic_error", "id": f"{host}-{batch}-{i}",
                                  "attrs": {"device": "mlx5_0", "count": i}} for i in range(50)])
            started = time.perf_counter()
            answer = http.post("/v1/events", content=body, headers={"content-type": "application/json"})
            latencies.append(time.perf_counter() - started)
            if answer.status_code == 200:
                acked += answer.json()["accepted"]
            else:
                failures += 1
            batch += 1
            time.sleep(max(0.0, 0.5 - (time.perf_counter() - started)))
    out.put(("steady", latencies, failures, acked))


def flooder(url: str, token: str, n: int, seconds: float, size: int, out: mp.Queue) -> None:
    """Post `size`-event batches back to back, ignoring Retry-After; report (429s, acknowledged).
    Niced: on a real cluster the flooder's own CPU is another host's, not the server's."""
    os.nice(10)
    throttled, acked, other = 0, 0, 0
    deadline = time.monotonic() + seconds
    with httpx.Client(base_url=url, timeout=60, headers={"authorization": f"Bearer {token}"}) as http:
        batch = 0
        while time.monotonic() < deadline:
            body = orjson.dumps([{"time": 1764403200 + i, "host": "node0000", "kind": "nic_error",
                                  "id": f"flood{n}-{batch}-{i}", "attrs": {"device": "mlx5_0", "count": i}}
                                 for i in range(size)])
            answer = http.post("/v1/events", content=body, headers={"content-type": "application/json"})
            if answer.status_code == 200:
                acked += answer.json()["accepted"]
            elif answer.status_code == 429:
                throttled += 1
            else:
                other += 1
            batch += 1
    out.put(("flood", throttled, acked, other))


def scenario(name: str, seconds: float, flooders: int, flood_batch: int, env: dict[str, str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        db_url = f"duckdb:///{Path(tmp) / 'flood.duckdb'}"
        engine = store.make_engine(db_url)
        store.init_schema(engine)
        with engine.begin() as conn:
            made = [tokens.create(conn, role="agent", name=f"node{n:04d}")[0] for n in range(STEADY_AGENTS + 1)]
        engine.dispose()
        server = start_server(db_url, env=env)
        try:
            out: mp.Queue = mp.Queue()
            procs = [mp.Process(target=steady, args=(server.url, made[n + 1], f"node{n + 1:04d}", seconds, out))
                     for n in range(STEADY_AGENTS)]
            procs += [mp.Process(target=flooder, args=(server.url, made[0], n, seconds, flood_batch, out))
                      for n in range(flooders)]
            for proc in procs:
                proc.start()
            results = [out.get(timeout=seconds + 120) for _ in procs]
            for proc in procs:
                proc.join()
        finally:
            server.stop()
    latencies = sorted(x for r in results if r[0] == "steady" for x in r[1])
    return {
        "name": name,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[int(0.99 * (len(latencies) - 1))] * 1000,
        "steady_requests": len(latencies),
        "steady_failures": sum(r[2] for r in results if r[0] == "steady"),
        "steady_acked": sum(r[3] for r in results if r[0] == "steady"),
        "flood_429": sum(r[1] for r in results if r[0] == "flood"),
        "flood_acked_per_s": sum(r[2] for r in results if r[0] == "flood") / seconds,
        "flood_other": sum(r[3] for r in results if r[0] == "flood"),
    }


def limiter_cost_ns(calls: int = 200_000) -> float:
    """Nanoseconds of admit + release for one request (callers spread over 1,000 keys)."""
    limiter = IngestLimiter(rate=1e9, burst=1e9, max_in_flight=1 << 30)
    keys = [("t", f"10.0.{n // 256}.{n % 256}") for n in range(1000)]
    started = time.perf_counter()
    for i in range(calls):
        key = keys[i % 1000]
        limiter.admit(key)
        limiter.release(key, 100_000)
    return (time.perf_counter() - started) / calls * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--flooders", type=int, default=3, help="processes posting with the flooding token")
    parser.add_argument("--flood-batch", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    lifted = {"FAULTGRAPH_INGEST_RATE": "1e9", "FAULTGRAPH_INGEST_BURST": "1e9", "FAULTGRAPH_INGEST_QUEUE_SHARE": "1",
              "FAULTGRAPH_INGEST_REQUEST_BYTES": str(1 << 40)}
    for run in range(args.runs):
        base = scenario("baseline", args.seconds, 0, args.flood_batch, {})
        rows = [base, scenario("limited", args.seconds, args.flooders, args.flood_batch, {}),
                scenario("unlimited", args.seconds, args.flooders, args.flood_batch, lifted)]
        print(f"run {run + 1}: {STEADY_AGENTS} steady agents (50 events / 0.5 s), flooder {args.flooders} processes "
              f"x {args.flood_batch}-event batches, {args.seconds:.0f} s")
        print(f"{'scenario':<10} {'p50 ms':>8} {'p99 ms':>8} {'p99/base':>9} {'steady req':>10} {'failed':>7} "
              f"{'flood 429':>10} {'flood ev/s':>11}")
        for row in rows:
            print(f"{row['name']:<10} {row['p50_ms']:>8.1f} {row['p99_ms']:>8.1f} {row['p99_ms'] / base['p99_ms']:>9.2f} "
                  f"{row['steady_requests']:>10} {row['steady_failures']:>7} {row['flood_429']:>10} "
                  f"{row['flood_acked_per_s']:>11,.0f}")
    print(f"limiter cost per ingest request (admit + release): {limiter_cost_ns():.0f} ns")


if __name__ == "__main__":
    main()
