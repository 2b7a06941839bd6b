"""Benchmark: a 4,096-host / 32,768-GPU rail-optimized topology end to end.

Run: PYTHONPATH=. /work/venv/bin/python tests/bench/topology.py [--hosts 4096]

Targets (issue 4): JSON upload + load under 10 s, a path query under 1 ms, the
footprint of a 16,384-rank job under 1 s. Each figure is printed with a baseline measured
in the same run: loading against building a bare networkx graph from the same lists,
path queries against networkx's own single shortest path, the footprint against merely
listing the job's GPUs.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import networkx as nx
import orjson

from attribution.generators import rail_optimized
from attribution.paths import Paths
from attribution.placement import Placement
from attribution.resolve import Resolver
from attribution.topology import Topology


def rss_mb() -> float:
    with open("/proc/self/status") as status:
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

    baseline_body = orjson.loads(blob)

    def bare_graph() -> nx.Graph:
        graph = nx.Graph()
        graph.add_nodes_from((c["id"], c) for c in baseline_body["components"])
        graph.add_edges_from((lk["a"], lk["b"], lk) for lk in baseline_body["links"])
        return graph

    _, t_bare = timed(bare_graph)
    del baseline_body

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


if __name__ == "__main__":
    main()
