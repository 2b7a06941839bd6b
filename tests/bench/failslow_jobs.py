"""Fail-slow benchmark with many jobs: what the background engine passes cost when every
job reports a step between them.

    python tests/bench/failslow_jobs.py [--jobs 40] [--steps 1000] [--passes 12] [--runs 2]

Fills a fresh DuckDB store in process (no HTTP) with `--jobs` registered jobs of 4 ranks on
2 hosts, each with a `--steps`-step series already analysed, then `--passes` times posts
one more step of every job and times the background pass it causes. Measured in the same
run, alternated: every job analysed at every pass (no schedule, as before the schedule),
and the service's `degradations.Schedule` (a job again after `EVERY` new steps).
"""

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conftest import store_events  # noqa: E402

from faultgraph.service import store  # noqa: E402
from faultgraph.service.cluster import Cluster  # noqa: E402
from faultgraph.service.events import service as events_service  # noqa: E402
from faultgraph.service.incidents import degradations, flows  # noqa: E402
from faultgraph.service.jobs import service as jobs_service  # noqa: E402
from faultgraph.service.jobs.models import JobIn  # noqa: E402

START = datetime(2026, 11, 29, 8, tzinfo=UTC)
RANKS = 4


def passes(jobs: int, steps: int, count: int, scheduled: bool) -> list[float]:
    """Seconds of each background pass after one more step of every job."""
    with tempfile.TemporaryDirectory() as tmp:
        engine = store.make_engine(f"duckdb:///{Path(tmp) / 'jobs.duckdb'}")
        store.init_schema(engine)
        with engine.begin() as conn:
            for j in range(jobs):
                job = JobIn(id=f"job{j}", start=START, gpus_per_host=2, hosts=[f"node{2 * j:04d}", f"node{2 * j + 1:04d}"])
                jobs_service.create(conn, row=jobs_service.to_row(job, registered=START, topology_version=None))
        cluster = Cluster(engine)
        cluster.load()

        def post(step_range: range) -> None:
            reports = [{"time": (START + timedelta(seconds=10 * step)).isoformat(), "host": f"node{2 * j + rank // 2:04d}",
                        "kind": "train_step", "job": f"job{j}", "rank": rank,
                        "attrs": {"step": step, "duration_ms": 10000.0, "compute_ms": 7000.0}}
                       for step in step_range for j in range(jobs) for rank in range(RANKS)]
            store_events(engine, events_service.validate_all(reports), received=START, enrich=cluster.enrich)

        schedule = degradations.Schedule() if scheduled else None
        post(range(1, steps + 1))
        flows.analyze_pending(engine, cluster, schedule=schedule, asked=True)
        seconds = []
        for step in range(steps + 1, steps + 1 + count):
            post(range(step, step + 1))
            started = time.perf_counter()
            flows.analyze_pending(engine, cluster, schedule=schedule, asked=False)
            seconds.append(time.perf_counter() - started)
        engine.dispose()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--passes", type=int, default=12)
    parser.add_argument("--runs", type=int, default=2, help="alternated runs of each")
    args = parser.parse_args()
    totals: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.runs):
        for scheduled in (False, True):
            seconds = passes(args.jobs, args.steps, args.passes, scheduled)
            totals[scheduled].append(sum(seconds))
            print(f"{'schedule ' if scheduled else 'every job'}  {args.jobs} jobs × {args.steps} steps: "
                  f"{args.passes} passes of one step each, mean {statistics.mean(seconds) * 1e3:5.0f} ms, "
                  f"max {max(seconds) * 1e3:5.0f} ms, in all {sum(seconds):5.2f} s")
    ratio = statistics.mean(totals[False]) / statistics.mean(totals[True])
    print(f"engine time of the passes, every job / schedule: {ratio:.1f}×")


if __name__ == "__main__":
    main()
