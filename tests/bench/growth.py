"""Growth benchmark: a 2,048-host cluster's stream filled into one store over HTTP, engine
live, measuring whether ingest, memory and queries stay flat as the store grows.

    python tests/bench/growth.py [--events 5000000] [--noise 0.02] [--checkpoint 500000] [--samples 45]
                                 [--db URL [--reference-db URL]]

The stream is what today's agent sends: every host's `ok` heartbeat each 15 s of cluster
time, plus a `--noise` fraction of correctable-error events (NIC symbol errors, GPU SBE,
corrected PCIe AER) from random hosts; batches of 1,000 posted from 8 connections. At the
first checkpoint (100,000 events) and every `--checkpoint` events after it, prints the
ingest rate over the last stretch, the server's RSS (current and peak) and the p50 of three
queries (`--samples` of each): one host's hour, one component's events, the whole
cluster's last hour (GET /v1/events, limit 1000). At the end: the ratios to the
100,000-event figures (targets: ingest ≥ 0.8, query p50 ≤ 1.5, RSS < 1 GiB throughout), the
restart time (< 10 s), rows stored and bytes on disk per stored and per posted event.

The small store's p50s measured minutes before the large one's drift with the machine
(4.0 and 5.8 ms for the same component query in two runs of one morning), so a second
server keeps a reference store of the stream's first 100,000 events, and at every
checkpoint the two are asked in turn, sample by sample: the end's ratio to the reference is
printed beside the ratio to the first checkpoint. At the first checkpoint the two stores
hold the same events, so their p50s there show the method's own noise. The reference is a
fresh DuckDB file by default; with `--db`, `--reference-db` names an empty database of the
same backend (without it there is no reference).

The ingest rate of the first 100,000 events is a stretch of under 2 s, as noisy as those
p50s (50,700–63,100 events/s over six runs of one afternoon whose last stretches all ran
at 44,200–49,400/s). So at the first checkpoint and at the end both stores also take the
next `--probe` events of their own streams in turn, 10,000 at a time, and the rates of the
two are compared: at the end, a store of millions of events against one of a few hundred
thousand, at the same moment; at the first checkpoint, where both are small, the method's
own noise. Those events count in the figures printed after them.
"""

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conftest import peak_rss_mib, start_server  # noqa: E402

from faultgraph.service import store  # noqa: E402

HOSTS = 2048
BEAT_S = 15
START = datetime(2026, 1, 1, tzinfo=UTC)


def stream(noise: float, seed: int = 3):
    """Events in cluster-time order: per 15-s tick, each host's heartbeat, and noise events
    so that they are `noise` of the total."""
    rng = random.Random(seed)
    per_tick = round(HOSTS * noise / (1 - noise))
    tick = 0
    while True:
        base = START + timedelta(seconds=tick * BEAT_S)
        for h in range(HOSTS):
            yield {"time": (base + timedelta(milliseconds=h * 7)).isoformat(), "host": f"node{h:04d}",
                   "kind": "host_heartbeat", "attrs": {"state": "ok"}}
        for _ in range(per_tick):
            host = f"node{rng.randrange(HOSTS):04d}"
            when = (base + timedelta(seconds=rng.uniform(0, BEAT_S))).isoformat()
            roll = rng.random()
            if roll < 0.5:
                yield {"time": when, "host": host, "kind": "nic_error",
                       "attrs": {"device": f"mlx5_{rng.randrange(8)}", "port": 1, "counter": "symbol_error", "count": rng.randrange(1, 50)}}
            elif roll < 0.8:
                yield {"time": when, "host": host, "kind": "gpu_ecc", "attrs": {"type": "sbe", "count": 1},
                       "component": f"{host}/gpu{rng.randrange(8)}"}
            else:
                yield {"time": when, "host": host, "kind": "pcie_aer",
                       "attrs": {"bdf": f"0000:{rng.randrange(256):02x}:00.0", "severity": "corrected"}}
        tick += 1


async def post(url: str, bodies: list[bytes], concurrency: int) -> None:
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)

    async def worker(client: httpx.AsyncClient) -> None:
        while not queue.empty():
            body = queue.get_nowait()
            while (answer := await client.post("/v1/events", content=body, headers={"content-type": "application/json"})).status_code == 503:
                await asyncio.sleep(float(answer.headers.get("retry-after", "1")))
            answer.raise_for_status()

    async with httpx.AsyncClient(base_url=url, timeout=300, limits=httpx.Limits(max_connections=concurrency)) as client:
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def query_p50s(stores: list[tuple[httpx.Client, datetime]], samples: int) -> list[dict[str, float]]:
    """For each (client, the store's last event time): p50 ms of a host's hour, a component's
    events, and the cluster's last hour. The stores are asked in turn, sample by sample, the
    same host and component of each, so that their p50s share the machine's moment."""
    rng = random.Random(5)
    timings: list[dict[str, list[float]]] = [{"host-hour": [], "component": [], "cluster-hour": []} for _ in stores]
    for _ in range(samples):
        host, gpu, at = f"node{rng.randrange(HOSTS):04d}", rng.randrange(8), rng.random()
        for (client, until), times in zip(stores, timings, strict=True):
            since = START + timedelta(seconds=at * max(1.0, (until - START).total_seconds() - 3600))
            queries = {
                "host-hour": {"host": host, "since": since.isoformat(), "until": (since + timedelta(hours=1)).isoformat()},
                "component": {"component": f"{host}/gpu{gpu}"},
                "cluster-hour": {"since": (until - timedelta(hours=1)).isoformat(), "until": until.isoformat()},
            }
            for name, params in queries.items():
                started = time.perf_counter()
                client.get("/v1/events", params={**params, "limit": 1000}).raise_for_status()
                times[name].append(1000 * (time.perf_counter() - started))
    return [{name: statistics.median(values) for name, values in times.items()} for times in timings]


def disk_bytes(db_url: str) -> tuple[int, int]:
    """(bytes on disk, rows in events)."""
    engine = store.make_engine(db_url)
    try:
        with engine.connect() as conn:
            rows = conn.exec_driver_sql("SELECT count(*) FROM events").scalar_one()
            if engine.dialect.name == "postgresql":
                size = conn.exec_driver_sql("SELECT pg_database_size(current_database())").scalar_one()
            else:
                path = Path(engine.url.database)
                size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    finally:
        engine.dispose()
    return size, rows


def ingest_in_turn(targets: list[tuple[str, Iterator[dict]]], *, total: int, batch: int,
                   concurrency: int, step: int = 10_000) -> tuple[list[float], list[datetime]]:
    """Each (url, stream)'s ingest rate over `total` more events of its stream, posted in
    steps of `step` that alternate between the targets so that their rates share the
    machine's moments; and each stream's last event time."""
    elapsed, last = [0.0] * len(targets), [START] * len(targets)
    steps = max(1, total // step)
    for _ in range(steps):
        for i, (url, events) in enumerate(targets):
            bodies, last[i] = bodies_until(events, step, batch)
            started = time.perf_counter()
            asyncio.run(post(url, bodies, concurrency))
            elapsed[i] += time.perf_counter() - started
    return [steps * step / seconds for seconds in elapsed], last


def bodies_until(events, count: int, batch: int) -> tuple[list[bytes], datetime]:
    """The next `count` events of the stream as posted bodies, and the last one's time."""
    bodies, last = [], START
    for first in range(0, count, batch):
        chunk = [next(events) for _ in range(min(batch, count - first))]
        last = datetime.fromisoformat(chunk[-1]["time"])
        bodies.append(orjson.dumps(chunk))
    return bodies, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--noise", type=float, default=0.02, help="fraction of events that are not heartbeats")
    parser.add_argument("--checkpoint", type=int, default=500_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--db", help="database URL (default: a fresh DuckDB file)")
    parser.add_argument("--reference-db", help="an empty database for the reference store of the first 100,000 events "
                                               "(default: a fresh DuckDB file, or none when --db is given)")
    parser.add_argument("--samples", type=int, default=45,
                        help="queries of each kind per checkpoint (15 let one run's first p50 alone decide a ratio)")
    parser.add_argument("--probe", type=int, default=200_000,
                        help="events each store takes in turn at the first checkpoint and at the end (0: none)")
    args = parser.parse_args()

    marks = [100_000, *range(args.checkpoint, args.events + 1, args.checkpoint)]
    if marks[-1] != args.events:
        marks.append(args.events)
    events = stream(args.noise)
    with tempfile.TemporaryDirectory() as tmp:
        db_url = args.db or f"duckdb:///{Path(tmp) / 'growth.duckdb'}"
        reference_url = args.reference_db or (None if args.db else f"duckdb:///{Path(tmp) / 'reference.duckdb'}")
        reference = start_server(reference_url) if reference_url else None
        started = time.perf_counter()
        server = start_server(db_url)
        first_start = time.perf_counter() - started
        rows: list[dict] = []
        posted, probed, peak, last_time = 0, 0, 0.0, START
        reference_events = stream(args.noise)
        try:
            if reference is not None:
                reference_bodies, reference_until = bodies_until(reference_events, marks[0], args.batch)
                asyncio.run(post(reference.url, reference_bodies, args.concurrency))
            for mark in marks:
                bodies, last_time = bodies_until(events, mark - posted, args.batch)
                size, posted = mark - posted, mark
                started = time.perf_counter()
                asyncio.run(post(server.url, bodies, args.concurrency))
                elapsed = time.perf_counter() - started
                in_turn = None
                if reference is not None and args.probe and mark in (marks[0], marks[-1]):
                    in_turn, (last_time, reference_until) = ingest_in_turn(
                        [(server.url, events), (reference.url, reference_events)],
                        total=args.probe, batch=args.batch, concurrency=args.concurrency)
                    probed += args.probe
                    print(f"{posted + probed:>10,} posted  in turn with the reference store: {in_turn[0]:,.0f} against "
                          f"{in_turn[1]:,.0f} events/s ({in_turn[0] / in_turn[1]:.2f})", flush=True)
                stores = [(server.client, last_time)] + ([(reference.client, reference_until)] if reference else [])
                queries, *alongside = query_p50s(stores, args.samples)
                rss = rss_mib(server.process.pid)
                peak = max(peak, peak_rss_mib(server.process.pid))
                rows.append({"posted": posted + probed, "rate": size / elapsed, "rss": rss, "peak": peak, **queries,
                             "reference": alongside[0] if alongside else None, "in_turn": in_turn})
                print(f"{posted + probed:>10,} posted  {size / elapsed:>8,.0f} events/s  RSS {rss:>5,.0f} MiB (peak {peak:,.0f})  "
                      + "  ".join(f"{name} {ms:.1f} ms" for name, ms in queries.items())
                      + (f"  (reference {' / '.join(f'{ms:.1f}' for ms in alongside[0].values())} ms)" if alongside else ""),
                      flush=True)
            server.stop()
            size, stored = disk_bytes(db_url)
            started = time.perf_counter()
            server = start_server(db_url)
            restart = time.perf_counter() - started
        finally:
            server.stop()
            if reference is not None:
                reference.stop()
    first, last = rows[0], rows[-1]
    print(f"cluster time covered        {(last_time - START).total_seconds() / 3600:.1f} h of {HOSTS:,} hosts "
          f"(heartbeat each {BEAT_S} s, noise {args.noise:.0%})")
    print(f"ingest at end / at 100k     {last['rate'] / first['rate']:.2f}  (target ≥ 0.8)")
    if last["in_turn"] and first["in_turn"]:
        print(f"ingest at end / reference store in turn  {last['in_turn'][0] / last['in_turn'][1]:.2f}  "
              f"(at the first checkpoint, both small: {first['in_turn'][0] / first['in_turn'][1]:.2f})")
    for name in ("host-hour", "component", "cluster-hour"):
        alongside = last["reference"]
        print(f"{name:<12} p50 end/100k  {last[name] / first[name]:.2f}  ({first[name]:.1f} → {last[name]:.1f} ms)"
              + (f";  end / reference asked in turn {last[name] / alongside[name]:.2f} ({alongside[name]:.1f} ms)" if alongside else "")
              + "  (target ≤ 1.5)")
    print(f"server peak RSS             {peak:,.0f} MiB  (target < 1,024)")
    print(f"restart                     {restart:.1f} s  (target < 10 s; first start on the empty store {first_start:.1f} s)")
    print(f"events stored               {stored:,} of {last['posted']:,} posted")
    print(f"on disk                     {size / 2**20:,.1f} MiB: {size / max(stored, 1):,.0f} bytes per stored event, "
          f"{size / last['posted']:,.1f} per posted event")


if __name__ == "__main__":
    main()
