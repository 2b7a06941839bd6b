"""Fail-slow benchmark: `train_step` of a 16,384-rank job, one sample per rank per 10 s step,
ingested over HTTP with the engine (and its degradation pass) live.

    python tests/bench/failslow.py [--steps 48] [--ranks 16384] [--batch 4096] [--concurrency 4]

Two fresh servers in one run: the baseline ingests the same number of events of a kind the
degradation pass does not read (`nic_error`); the second ingests the job's `train_step`s,
with one rank computing 40 % slower from the middle on. Prints both rates, their ratio,
the rate against what the job produces (16,384 events per 10 s = 1,638/s), how long the
engine took to catch up after the last batch, and the degradation incident it opened.
"""

import argparse
import asyncio
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conftest import peak_rss_mib, start_server  # noqa: E402

from ingest import post_all  # noqa: E402

START = datetime(2026, 11, 29, tzinfo=UTC)
STEP_S = 10.0


def job(ranks: int) -> dict:
    hosts = [f"node{i:04d}" for i in range(ranks // 8)]
    return {"id": "bench-16k", "start": START.isoformat(), "gpus_per_host": 8, "hosts": hosts,
            "parallelism": {"tp": 8, "pp": 16, "dp": ranks // 128}}


def steps(ranks: int, count: int, slow_rank: int, slow_from: int, batch: int) -> list[bytes]:
    """Per-rank samples, step by step, as `faultgraph.train` posts them."""
    rng = random.Random(3)
    bodies, pending, t = [], [], START
    for step in range(1, count + 1):
        t += timedelta(seconds=STEP_S * (1.4 if step > slow_from else 1.0))
        for rank in range(ranks):
            compute = 7000 * (1 + rng.gauss(0, 0.01)) * (1.4 if rank == slow_rank and step > slow_from else 1.0)
            duration = STEP_S * 1000 * (1.4 if step > slow_from else 1.0)
            pending.append({"time": t.isoformat(), "host": f"node{rank // 8:04d}", "kind": "train_step", "job": "bench-16k",
                            "rank": rank, "attrs": {"step": step, "duration_ms": duration, "compute_ms": round(compute, 1),
                                                    "wait_ms": round(duration - compute, 1)}})
            if len(pending) == batch:
                bodies.append(orjson.dumps(pending))
                pending = []
    if pending:
        bodies.append(orjson.dumps(pending))
    return bodies


def baseline_bodies(bodies: list[bytes]) -> list[bytes]:
    """The same events, same size and times, as a kind the degradation pass never reads."""
    out = []
    for body in bodies:
        events = orjson.loads(body)
        for event in events:
            event["kind"], event["attrs"] = "nic_error", {"device": "mlx5_0", "port": 1, "counter": "symbol_error",
                                                          "count": event["attrs"]["step"]}
        out.append(orjson.dumps(events))
    return out


def run(bodies: list[bytes], ranks: int, concurrency: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(f"duckdb:///{tmp}/bench.duckdb")
        try:
            server.client.post("/v1/jobs", json=job(ranks)).raise_for_status()
            seconds, accepted = asyncio.run(post_all(server.url, bodies, concurrency))
            started = time.perf_counter()
            server.client.post("/v1/analyze", timeout=600).raise_for_status()
            catch_up = time.perf_counter() - started
            found = server.client.get("/v1/incidents", params={"type": "degradation"}).json()["incidents"]
            return {"events_per_s": accepted / seconds, "accepted": accepted, "catch_up_s": catch_up,
                    "rss_mib": peak_rss_mib(server.process.pid), "degradations": found}
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=48)
    parser.add_argument("--ranks", type=int, default=16384)
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    slow_rank, slow_from = args.ranks // 3, args.steps // 2
    bodies = steps(args.ranks, args.steps, slow_rank, slow_from, args.batch)
    base = run(baseline_bodies(bodies), args.ranks, args.concurrency)
    train = run(bodies, args.ranks, args.concurrency)
    need = args.ranks / STEP_S
    print(f"{args.ranks} ranks × {args.steps} steps = {train['accepted']:,} train_step events "
          f"({args.steps * STEP_S / 60:.0f} min of event time)")
    print(f"baseline (nic_error, engine live):  {base['events_per_s']:,.0f} events/s, catch-up {base['catch_up_s']:.1f} s, "
          f"RSS {base['rss_mib']:.0f} MiB")
    print(f"train_step (engine + degradations): {train['events_per_s']:,.0f} events/s, catch-up {train['catch_up_s']:.1f} s, "
          f"RSS {train['rss_mib']:.0f} MiB")
    print(f"ratio train_step / baseline: {train['events_per_s'] / base['events_per_s']:.2f}; "
          f"vs the job's own rate ({need:,.0f}/s): ×{train['events_per_s'] / need:.1f}")
    for incident in train["degradations"]:
        print(f"degradation {incident['id']}: {incident['root_cause']['component']} ({incident['root_cause']['cause']}), "
              f"slowdown {incident['slowdown']}, from {incident['interruption']['start']}; "
              f"truth: rank {slow_rank} = node{slow_rank // 8:04d}/gpu{slow_rank % 8}, step {slow_from + 1}")


if __name__ == "__main__":
    main()
