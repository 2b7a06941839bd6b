"""Ingest benchmark: events/s over HTTP against the in-process ceiling, measured in one run.

    python tests/bench/ingest.py [--events 1000000] [--batch 1000] [--concurrency 8] [--db URL]
                                 [--workers N]   (N server processes: PostgreSQL only)
                                 [--compare-postgres SERVER_URL [--compare-workers N]]

Starts `faultgraph serve` on loopback, posts pre-serialised batches from concurrent
connections, then measures the ceiling: the same payloads parsed with orjson and
bulk-inserted into a fresh store of the same backend directly. Prints both, their ratio, the
server's peak RSS, how far behind the incident engine was when the last batch was
acknowledged and how long it took to catch up, and GET /v1/events latency for 1-hour
windows on the filled, analysed store.

    python tests/bench/ingest.py --compare-postgres postgresql://postgres@127.0.0.1:5432/postgres

runs everything a second time on a fresh database created on that PostgreSQL server (and
dropped afterwards), and prints the two backends side by side with their ratios. With
`--compare-workers N` that PostgreSQL server is `serve --workers N`: the deployment a
PostgreSQL store allows and a DuckDB file (one writing process) does not.
"""

import argparse
import asyncio
import contextlib
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import orjson
import pyarrow as pa
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conftest import child_pids, fresh_postgres_database, peak_rss_mib, start_server  # noqa: E402

from faultgraph.service import store  # noqa: E402
from faultgraph.service.cluster import Cluster  # noqa: E402
from faultgraph.service.events import service as events_service  # noqa: E402

START = datetime(2026, 11, 28, tzinfo=UTC)
SPAN_HOURS = 24


def make_event(i: int, rng: random.Random, total: int) -> dict:
    """A realistic mix: mostly NIC counters and NCCL symptoms, some XIDs and host events.

    Times advance with the stream (spread over SPAN_HOURS, a minute of jitter), as a live
    cluster's do: what arrives together happened together.
    """
    host = f"node{rng.randrange(2048):04d}"
    offset = i / total * SPAN_HOURS * 3600 + rng.uniform(-60, 60)
    when = (START + timedelta(seconds=max(0.0, offset))).isoformat()
    roll = rng.random()
    if roll < 0.4:
        kind, attrs = "nic_error", {"device": f"mlx5_{rng.randrange(8)}", "port": 1, "counter": "symbol_error", "count": rng.randrange(100)}
    elif roll < 0.7:
        rank = rng.randrange(16384)
        kind, attrs = "nccl_timeout", {"rank": rank, "op": "ALLREDUCE", "seq": 80000 + rng.randrange(10), "timeout_ms": 600000, "elapsed_ms": 600000 + rng.randrange(100)}
    elif roll < 0.85:
        kind, attrs = "gpu_xid", {"xid": rng.choice([13, 31, 43, 48, 63, 74, 79, 94, 119]), "pci": f"0000:{rng.randrange(256):02x}:00"}
    else:
        kind, attrs = "pcie_aer", {"bdf": f"0000:{rng.randrange(256):02x}:00.0", "severity": "corrected"}
    return {"time": when, "host": host, "kind": kind, "attrs": attrs, "message": f"event {i}", "job": "llama-405b-r7"}


def payloads(total: int, batch: int) -> list[bytes]:
    rng = random.Random(7)
    return [orjson.dumps([make_event(i + j, rng, total) for j in range(batch)]) for i in range(0, total, batch)]


async def post_all(url: str, bodies: list[bytes], concurrency: int) -> tuple[float, int]:
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)
    accepted = 0

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal accepted
        while not queue.empty():
            body = queue.get_nowait()
            while True:
                answer = await client.post("/v1/events", content=body, headers={"content-type": "application/json"})
                if answer.status_code == 503:
                    await asyncio.sleep(float(answer.headers.get("retry-after", "1")))
                    continue
                answer.raise_for_status()
                accepted += answer.json()["accepted"]
                break

    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as client:
        started = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        return time.perf_counter() - started, accepted


def ceiling(bodies: list[bytes], db_url: str, chunk_rows: int = 50_000) -> float:
    """Events/s of the bare minimum: orjson parse, Arrow columns, bulk insert with the same
    primary key; no HTTP, no validation, no enrichment."""
    engine = store.make_engine(db_url)
    store.init_schema(engine)
    received = datetime.now(UTC).replace(tzinfo=None)
    started = time.perf_counter()
    items = [item for body in bodies for item in orjson.loads(body)]
    for i, item in enumerate(items):
        item["id"] = f"c{i}"
        item["seq"] = i
        item["time"] = datetime.fromisoformat(item["time"])
        item["received"] = received
        item["attrs"] = orjson.dumps(item["attrs"]).decode()
    with engine.connect() as conn:
        for start in range(0, len(items), chunk_rows):
            rows = pa.Table.from_pylist(items[start : start + chunk_rows])
            store.insert_ignoring_duplicates(conn, rows, table_name="events")
            conn.commit()
    elapsed = time.perf_counter() - started
    engine.dispose()
    return len(items) / elapsed



def stages(bodies: list[bytes], db_url: str, group: int = 10) -> dict[str, float]:
    """CPU µs per event of each step the server takes, run here one after the other: what
    bounds one Python process (the steps hold the GIL except inside DuckDB)."""
    engine = store.make_engine(db_url)
    store.init_schema(engine)
    cluster = Cluster(engine)
    cluster.load()
    n = sum(len(orjson.loads(body)) for body in bodies)
    started = time.process_time()
    decoded = [events_service.decode(body, content_type="application/json", max_events=len(body)) for body in bodies]
    validated = time.process_time()
    pending = [events_service.Pending(d.valid, datetime.now(UTC)) for d in decoded]
    tables = [events_service.rows_of_group(pending[i:i + group], enrich=cluster.enrich) for i in range(0, len(pending), group)]
    converted = time.process_time()
    seq = 0
    with engine.connect() as conn:
        for table in tables:
            table = table.append_column("seq", pa.array(range(seq, seq + table.num_rows), pa.int64()))
            seq += table.num_rows
            store.insert_ignoring_duplicates(conn, table, table_name="events")
            conn.commit()
    inserted = time.process_time()
    engine.dispose()
    return {"validate": (validated - started) / n * 1e6, "convert": (converted - validated) / n * 1e6,
            "insert": (inserted - converted) / n * 1e6}


def query_latency(url: str, samples: int = 100) -> tuple[float, float]:
    rng = random.Random(1)
    timings = []
    with httpx.Client(base_url=url, timeout=60) as client:
        for _ in range(samples):
            since = START + timedelta(seconds=rng.random() * (SPAN_HOURS - 1) * 3600)
            params = {"since": since.isoformat(), "until": (since + timedelta(hours=1)).isoformat(), "limit": 1000}
            started = time.perf_counter()
            client.get("/v1/events", params=params).raise_for_status()
            timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    return statistics.median(timings), timings[int(len(timings) * 0.99) - 1]


@dataclass
class Figures:
    accepted: int
    elapsed: float
    http_rate: float
    ceiling_rate: float
    p50: float
    p99: float
    rss: float
    store_mib: float
    stages: dict[str, float]
    backlog: float  # events the engine had not analysed at the last acknowledgement
    caught_up: float  # seconds from then until it had


def engine_backlog(client: httpx.Client) -> float:
    """The server's `faultgraph_engine_backlog_events`."""
    for family in text_string_to_metric_families(client.get("/metrics").text):
        if family.name == "faultgraph_engine_backlog_events":
            return family.samples[0].value
    raise RuntimeError("/metrics has no faultgraph_engine_backlog_events")


def catch_up(url: str, poll_s: float = 0.5) -> tuple[float, float]:
    """(backlog now, seconds until the engine has analysed everything stored): the cost of
    ingest going first, which the events/s figure alone hides."""
    started = time.perf_counter()
    with httpx.Client(base_url=url, timeout=120) as client:
        behind = left = engine_backlog(client)
        while left:
            time.sleep(poll_s)
            left = engine_backlog(client)
    return behind, time.perf_counter() - started


@contextlib.contextmanager
def fresh_store(server: str | None, tmp: Path, name: str) -> Iterator[str]:
    """An empty store: a DuckDB file when `server` is None, else a new PostgreSQL database."""
    if server is None:
        yield f"duckdb:///{tmp / (name + '.duckdb')}"
    else:
        with fresh_postgres_database(server) as url:
            yield url


def measure(bodies: list[bytes], concurrency: int, server_db: str, ceiling_db: str, stages_db: str,
            workers: int = 1) -> Figures:
    server = start_server(server_db, args=("--workers", str(workers)))
    try:
        elapsed, accepted = asyncio.run(post_all(server.url, bodies, concurrency))
        backlog, caught_up = catch_up(server.url)
        p50, p99 = query_latency(server.url)
        pid = server.process.pid
        rss = max(peak_rss_mib(p) for p in [pid, *child_pids(pid)])
    finally:
        server.stop()
    size = store_mib(server_db)
    return Figures(accepted, elapsed, accepted / elapsed, ceiling(bodies, ceiling_db), p50, p99, rss, size,
                   stages(bodies, stages_db), backlog, caught_up)


def store_mib(db_url: str) -> float:
    """Bytes on disk of the filled store: the DuckDB file, or the events table with its indexes."""
    engine = store.make_engine(db_url)
    try:
        if engine.dialect.name == "postgresql":
            with engine.connect() as conn:
                size = conn.exec_driver_sql("SELECT pg_total_relation_size('events')").scalar_one()
        else:
            size = Path(engine.url.database).stat().st_size
    finally:
        engine.dispose()
    return size / 2**20


def report(label: str, f: Figures, batch: int, concurrency: int) -> None:
    print(f"[{label}]")
    print(f"events posted          {f.accepted:>12,} in batches of {batch}, {concurrency} connections")
    print(f"HTTP ingest            {f.http_rate:>12,.0f} events/s ({f.elapsed:.1f} s)")
    print(f"engine backlog         {f.backlog:>12,.0f} events at the last acknowledgement, analysed {f.caught_up:.1f} s later")
    print(f"in-process ceiling     {f.ceiling_rate:>12,.0f} events/s (orjson + Arrow + bulk insert)")
    print(f"HTTP / ceiling         {f.http_rate / f.ceiling_rate:>12.2f}")
    steps = ", ".join(f"{name} {micros:.1f}" for name, micros in f.stages.items())
    print(f"server steps, CPU µs/event {steps} (in-process, one after the other: "
          f"{1e6 / sum(f.stages.values()):,.0f} events/s for one core)")
    print(f"server peak RSS        {f.rss:>12,.0f} MiB")
    print(f"store on disk          {f.store_mib:>12,.1f} MiB ({f.store_mib * 2**20 / f.accepted:,.0f} bytes/event)")
    print(f"GET 1-hour window      p50 {f.p50:.1f} ms, p99 {f.p99:.1f} ms (limit 1000, {f.accepted:,}-event store)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--db", help="database URL for the server (default: a fresh DuckDB file)")
    parser.add_argument("--workers", type=int, default=1, help="server processes (serve --workers; PostgreSQL only)")
    parser.add_argument("--compare-postgres", metavar="SERVER_URL",
                        help="also measure on a fresh database created on this PostgreSQL server")
    parser.add_argument("--compare-workers", type=int, default=1,
                        help="server processes for the --compare-postgres run")
    args = parser.parse_args()

    bodies = payloads(args.events, args.batch)
    results: list[tuple[str, Figures]] = []
    with tempfile.TemporaryDirectory() as tmp:
        server_db = args.db or f"duckdb:///{Path(tmp) / 'bench.duckdb'}"
        backend = server_db.split(":", 1)[0].split("+", 1)[0]
        ceiling_server = None if backend == "duckdb" else server_db
        with fresh_store(ceiling_server, Path(tmp), "ceiling") as ceiling_db, \
                fresh_store(ceiling_server, Path(tmp), "stages") as stages_db:
            results.append((backend, measure(bodies, args.concurrency, server_db, ceiling_db, stages_db, args.workers)))
        if args.compare_postgres:
            with fresh_store(args.compare_postgres, Path(tmp), "") as pg_db, \
                    fresh_store(args.compare_postgres, Path(tmp), "") as pg_ceiling_db, \
                    fresh_store(args.compare_postgres, Path(tmp), "") as pg_stages_db:
                label = "postgresql" + (f", {args.compare_workers} workers" if args.compare_workers > 1 else "")
                results.append((label, measure(bodies, args.concurrency, pg_db, pg_ceiling_db, pg_stages_db,
                                               args.compare_workers)))

    for label, figures in results:
        report(label, figures, args.batch, args.concurrency)
    if len(results) == 2:
        (base_label, base), (label, other) = results
        print(f"{label} / {base_label}: HTTP ingest {other.http_rate / base.http_rate:.2f}, "
              f"ceiling {other.ceiling_rate / base.ceiling_rate:.2f}, "
              f"GET p50 {other.p50 / base.p50:.2f}")


if __name__ == "__main__":
    main()
