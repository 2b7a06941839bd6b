"""Engine-pass benchmark: what one pass costs when the new events extend a long incident.

    python tests/bench/engine_pass.py [--sizes 12500,25000,50000,100000,200000] [--new 5000] [--per-day 300000]
                                      [--memory]

The bulk stream of `tests/bench/ingest.py` (one job's timeouts spread over a day, XIDs and
NIC counters on every host, no restart) chains into one incident as long as the stream.
A pass re-reads the stored incidents its new events touch, back to the engine's horizon
(service/incidents/flows.py, `HORIZON`), so once the incident is longer than that its cost
should stop growing with the incident's length. For each size this
fills a fresh DuckDB store in process (no HTTP) with the first `size` events of that stream,
runs the pass that opens the incident, appends the next `--new` events and times the pass
they cause. Measured in the same run for each size: the same pass with the horizon lifted
(every touched incident re-read whole, as before the horizon), and the baseline, the same
new events analysed on an empty store.

With `--memory`, instead of timing, the pass runs once per size under `tracemalloc`, in the
service's steps of `MAX_NEW` new events and, in the same run, in one step: the most events
a window held and the pass's peak allocation, what a pass costs the server's RSS. A large
`--new` is a pass that is behind (`--new 300000`: a slow pass under a million a day).
"""

import argparse
import statistics
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
from sqlalchemy.engine import Engine

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from faultgraph.service import store  # noqa: E402
from faultgraph.service.cluster import Cluster  # noqa: E402
from faultgraph.service.events import service as events_service  # noqa: E402
from faultgraph.service.incidents import flows  # noqa: E402
from ingest import payloads  # noqa: E402

BATCH = 1000


def append(engine, cluster: Cluster, bodies: list[bytes], first_seq: int) -> int:
    """Store the bodies' events as the writer would (validated, enriched, one seq each)."""
    seq = first_seq
    with engine.connect() as conn:
        for body in bodies:
            decoded = events_service.decode(body, content_type="application/json", max_events=len(body))
            rows = events_service.rows_of_group([events_service.Pending(decoded.valid, datetime.now(UTC))],
                                                enrich=cluster.enrich)
            rows = rows.append_column("seq", pa.array(range(seq, seq + rows.num_rows), pa.int64()))
            seq += rows.num_rows
            store.insert_ignoring_duplicates(conn, rows, table_name="events")
        conn.commit()
    return seq


def behind(history: list[bytes], new: list[bytes], folder: Path) -> tuple[Engine, Cluster]:
    """A fresh store holding `history`, analysed, and then `new`, not yet analysed."""
    engine = store.make_engine(f"duckdb:///{tempfile.mkdtemp(dir=folder)}/store.duckdb")
    store.init_schema(engine)
    cluster = Cluster(engine)
    cluster.load()
    seq = append(engine, cluster, history, 1)
    flows.analyze_pending(engine, cluster)
    append(engine, cluster, new, seq)
    return engine, cluster


def timed_pass(history: list[bytes], new: list[bytes], folder: Path, runs: int, horizon: timedelta) -> float:
    """Median seconds of the pass the `new` events cause after `history` was analysed, with
    the engine reading incidents back `horizon` from new events."""
    flows.HORIZON = horizon
    seconds = []
    for _ in range(runs):
        engine, cluster = behind(history, new, folder)
        started = time.perf_counter()
        flows.analyze_pending(engine, cluster)
        seconds.append(time.perf_counter() - started)
        engine.dispose()
    return statistics.median(seconds)


def pass_memory(history: list[bytes], new: list[bytes], folder: Path, max_new: int) -> tuple[int, float]:
    """(the most events one window held, the peak allocation in MiB) of the pass the `new`
    events cause after `history` was analysed, in steps of `max_new`, under tracemalloc."""
    flows.MAX_NEW = max_new
    engine, cluster = behind(history, new, folder)
    read: list[int] = []
    analyse = flows.analyse
    flows.analyse = lambda events, cluster: read.append(len(events)) or analyse(events, cluster)
    tracemalloc.start()
    try:
        flows.analyze_pending(engine, cluster)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        flows.analyse = analyse
        engine.dispose()
    return max(read, default=0), peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="12500,25000,50000,100000,200000", help="events stored before the timed pass")
    parser.add_argument("--new", type=int, default=5000, help="events the timed pass analyses as new")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--per-day", type=int, default=300_000,
                        help="events of the day-long stream (ingest.py --events): how dense the window is")
    parser.add_argument("--memory", action="store_true", help="peak allocation of one pass instead of timings")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    new_batches = args.new // BATCH
    # One day-long stream, cut at each size: the timed events are the ones just after the cut.
    stream = payloads(max(args.per_day, (max(sizes) // BATCH + new_batches) * BATCH), BATCH)
    horizon = flows.HORIZON
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.memory:
            step = flows.MAX_NEW
            print(f"{args.new:,} new events, one pass under tracemalloc: in steps of {step:,} (the service's) "
                  "and, same run, in one step; the largest window each read and the pass's peak allocation")
            print(f"{'events before':>14} {'window':>9} {'peak MiB':>9} {'one step':>9} {'peak MiB':>9}")
            for size in sizes:
                cut = size // BATCH
                new = stream[cut:cut + new_batches]
                held, peak = pass_memory(stream[:cut], new, folder, step)
                whole, whole_peak = pass_memory(stream[:cut], new, folder, len(new) * BATCH + 1)
                print(f"{size:>14,} {held:>9,} {peak:>9.0f} {whole:>9,} {whole_peak:>9.0f}")
            return
        print(f"{args.new:,} new events each time; pass seconds, median of {args.runs} runs")
        print(f"{'events before':>14} {'pass':>8} {'ratio':>7} {'whole re-read':>14} {'ratio':>7} {'empty store':>12}")
        for size in sizes:
            cut = size // BATCH
            new = stream[cut:cut + new_batches]
            seconds = timed_pass(stream[:cut], new, folder, args.runs, horizon)
            whole = timed_pass(stream[:cut], new, folder, args.runs, timedelta(days=365))
            baseline = timed_pass([], new, folder, args.runs, horizon)
            print(f"{size:>14,} {seconds:>7.2f}s {seconds / baseline:>7.1f} {whole:>13.2f}s {whole / baseline:>7.1f}"
                  f" {baseline:>11.2f}s")


if __name__ == "__main__":
    main()
