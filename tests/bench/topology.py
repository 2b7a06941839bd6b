"""Benchmark: a 4,096-host / 32,768-GPU rail-optimized topology end to end.

Run: python tests/bench/topology.py [--hosts 4096] [--no-http]

Targets (issue 4): JSON upload + load under 10 s, a path query under 1 ms, the
footprint of a 16,384-rank job under 1 s. Each figure is printed with a baseline measured
in the same run: loading against building a bare networkx graph from the same lists,
path queries against networkx's own single shortest path, the footprint against merely
listing the job's GPUs. The service stages run a real `faultgraph serve` process: the
HTTP PUT (send, parse, validate, store, index) against the in-process parse + load, a
restart that reloads the stored version, component lookups over HTTP, and the per-event
cost of ingest enrichment (job from host + rank + time, component) against the resolver
alone.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import networkx as nx
import orjson

from faultgraph.attribution.generators import rail_optimized
from faultgraph.attribution.paths import Paths
from faultgraph.attribution.placement import Placement
from faultgraph.attribution.resolve import Resolver
from faultgraph.attribution.topology import Topology
from faultgraph.service.cluster import Cluster, Job
from faultgraph.service.store import make_engine

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conftest import start_server  # noqa: E402  (the tests' real-server launcher)


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def process_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=4096)
    parser.add_argument("--queries", type=int, default=5000)
    parser.add_argument("--job-hosts", type=int, default=2048)
    parser.add_argument("--no-http", action="store_true", help="skip the real-server stages")
    args = parser.parse_args()
    rng = random.Random(4)

    body, t_generate = timed(rail_optimized, args.hosts)
    blob, t_dump = timed(orjson.dumps, body)
    del body
    rss_before = rss_mb()
    parsed, t_parse = timed(orjson.loads, blob)
    topology, t_load = timed(Topology.from_dict, parsed)
    del parsed
    rss_after = rss_mb()
    counts = topology.counts()

    def bare_graph(graph_body: dict) -> nx.Graph:
        graph = nx.Graph()
        graph.add_nodes_from((c["id"], c) for c in graph_body["components"])
        graph.add_edges_from((lk["a"], lk["b"], lk) for lk in graph_body["links"])
        return graph

    _, t_bare = timed(bare_graph, orjson.loads(blob))

    resolver, t_resolver = timed(Resolver, topology)
    paths = Paths(topology)
    gpus = topology.of_type("gpu")
    pairs = [(rng.choice(gpus), rng.choice(gpus)) for _ in range(args.queries)]
    same_host = [(f"{h}/gpu{rng.randrange(8)}", f"{h}/gpu{rng.randrange(8)}") for h in rng.sample(topology.hosts(), 500)]
    latencies = []
    for a, b in pairs + same_host:
        start = time.perf_counter()
        paths.between(a, b)
        latencies.append(time.perf_counter() - start)
    baseline_latencies = []
    for a, b in pairs[:500]:
        start = time.perf_counter()
        nx.shortest_path(topology.graph, a, b)
        baseline_latencies.append(time.perf_counter() - start)

    job_hosts = topology.hosts()[: args.job_hosts]
    job = Placement.from_job({
        "id": "bench", "gpus_per_host": 8, "hosts": job_hosts,
        "parallelism": {"tp": 8, "pp": 16, "dp": len(job_hosts) * 8 // 128},
    })
    footprint, t_footprint = timed(job.footprint, topology)
    _, t_list = timed(lambda: [job.rank_to_gpu(r) for r in range(job.world_size)])
    _, t_groups = timed(job.all_groups, "dp")

    events = [{"host": f"node{rng.randrange(args.hosts):04d}", "kind": "gpu_xid",
               "attrs": {"xid": 79, "pci": "00000000:9A:00.0"}} for _ in range(20000)]
    _, t_resolve = timed(lambda: [resolver.resolve(e) for e in events])

    # Ingest enrichment: the job from host + rank + time, then the component.
    cluster = Cluster(make_engine("duckdb:///:memory:"))
    cluster.use_topology(topology, 1)
    start = datetime(2026, 11, 29, 8, tzinfo=UTC)
    cluster.add_job(Job("bench", start, None, "running", start, job))
    when = datetime(2026, 11, 29, 9, tzinfo=UTC)
    ranked = []
    for _ in range(20000):
        rank = rng.randrange(job.world_size)
        ranked.append({"time": when, "host": job.host_of(rank), "kind": "nccl_timeout", "rank": rank, "attrs": {}})
    _, t_resolve_ranked = timed(lambda: [resolver.resolve(e, job) for e in ranked])
    _, t_enrich = timed(lambda: [cluster.enrich(e) for e in ranked])
    assert all(e["job"] == "bench" and e["component"].startswith(e["host"] + "/gpu") for e in ranked)

    p50, p99 = percentile(latencies, 0.5) * 1e3, percentile(latencies, 0.99) * 1e3
    base_p50 = statistics.median(baseline_latencies) * 1e3
    upload = t_dump + t_parse + t_load
    print(f"topology: {counts['host']:,} hosts, {counts['gpu']:,} GPUs, {len(topology):,} components, "
          f"{topology.graph.number_of_edges():,} links, JSON {len(blob) / 1e6:.1f} MB")
    print(f"generate            {t_generate:6.2f} s")
    print(f"to JSON (client)    {t_dump:6.2f} s")
    print(f"parse JSON          {t_parse:6.2f} s")
    print(f"from_dict (load)    {t_load:6.2f} s   baseline bare nx graph {t_bare:.2f} s  ratio {t_load / t_bare:.2f}x")
    print(f"upload + load       {upload:6.2f} s   target < 10 s")
    print(f"memory (RSS)        {rss_after:6.0f} MB  (+{rss_after - rss_before:.0f} MB for parse + graph)")
    print(f"resolver index      {t_resolver:6.2f} s   resolve {len(events):,} events {t_resolve:.2f} s "
          f"({t_resolve / len(events) * 1e6:.1f} us each)")
    print(f"path query          p50 {p50:.3f} ms  p99 {p99:.3f} ms   target < 1 ms; "
          f"baseline nx.shortest_path p50 {base_p50:.3f} ms  ratio {p50 / base_p50:.2f}x")
    print(f"footprint {job.world_size:,} ranks  {t_footprint:6.2f} s   target < 1 s; {len(footprint):,} ids; "
          f"baseline listing GPUs {t_list:.3f} s  ratio {t_footprint / t_list:.1f}x")
    print(f"dp groups           {t_groups:6.3f} s")
    print(f"ingest enrich       {t_enrich / len(ranked) * 1e6:6.1f} us/event (job + component); "
          f"baseline resolve with known placement {t_resolve_ranked / len(ranked) * 1e6:.1f} us  "
          f"ratio {t_enrich / t_resolve_ranked:.2f}x")
    if not args.no_http:
        del topology, paths, resolver, cluster
        http_stages(blob, t_parse + t_load, rng)


def http_stages(blob: bytes, t_library: float, rng: random.Random) -> None:
    """PUT the topology to a real server, restart it, and read components over HTTP."""
    with tempfile.TemporaryDirectory() as directory:
        db_url = f"duckdb:///{directory}/bench.duckdb"
        started = time.perf_counter()
        server = start_server(db_url)
        t_start_empty = time.perf_counter() - started
        try:
            rss_idle = process_rss_mb(server.process.pid)
            answer, t_put = timed(server.client.put, "/v1/topology", content=blob,
                                  headers={"content-type": "application/json"}, timeout=600)
            assert answer.status_code == 200, answer.text
            rss_loaded = process_rss_mb(server.process.pid)
            got, t_get = timed(server.client.get, "/v1/topology", timeout=600)
            assert got.status_code == 200
            hosts = [f"node{h:04d}" for h in range(answer.json()["hosts"])]
            lookups = []
            for _ in range(300):
                component = f"{rng.choice(hosts)}/mlx5_{rng.randrange(8)}"
                _, seconds = timed(server.client.get, f"/v1/topology/components/{component}", params={"events": 0})
                lookups.append(seconds)
        finally:
            server.stop()
        started = time.perf_counter()
        server = start_server(db_url)
        t_restart = time.perf_counter() - started
        try:
            assert server.client.get("/v1/topology/versions").json()["versions"][0]["version"] == 1
        finally:
            server.stop()
        stored_mb = Path(f"{directory}/bench.duckdb").stat().st_size / 1e6
    print(f"HTTP PUT (real server) {t_put:6.2f} s   target < 10 s; baseline in-process parse + load "
          f"{t_library:.2f} s  ratio {t_put / t_library:.2f}x")
    print(f"server RSS          {rss_loaded:6.0f} MB after PUT ({rss_idle:.0f} MB idle); database file {stored_mb:.1f} MB")
    print(f"HTTP GET topology   {t_get:6.2f} s for {len(got.content) / 1e6:.1f} MB")
    print(f"restart to healthy  {t_restart:6.2f} s   (reloads the stored version); baseline start on an empty "
          f"database {t_start_empty:.2f} s  ratio {t_restart / t_start_empty:.1f}x")
    print(f"HTTP component      p50 {statistics.median(lookups) * 1e3:.2f} ms  p99 {percentile(lookups, 0.99) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
