"""Engine-pass benchmark: what one pass costs when the new events extend a long incident.

    python tests/bench/engine_pass.py [--sizes 12500,25000,50000,100000,200000] [--new 5000] [--per-day 300000]

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
"""

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa

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


def timed_pass(history: list[bytes], new: list[bytes], folder: Path, runs: int, horizon: timedelta) -> float:
    """Median seconds of the pass the `new` events cause after `history` was analysed, with
    the engine reading incidents back `horizon` from new events."""
    flows.HORIZON = horizon
    seconds = []
    for _ in range(runs):
        engine = store.make_engine(f"duckdb:///{tempfile.mkdtemp(dir=folder)}/store.duckdb")
        store.init_schema(engine)
        cluster = Cluster(engine)
        cluster.load()
        seq = append(engine, cluster, history, 1)
        flows.analyze_pending(engine, cluster)
        append(engine, cluster, new, seq)
        started = time.perf_counter()
        flows.analyze_pending(engine, cluster)
        seconds.append(time.perf_counter() - started)
        engine.dispose()
    return statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="12500,25000,50000,100000,200000", help="events stored before the timed pass")
    parser.add_argument("--new", type=int, default=5000, help="events the timed pass analyses as new")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--per-day", type=int, default=300_000,
                        help="events of the day-long stream (ingest.py --events): how dense the window is")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    new_batches = args.new // BATCH
    # One day-long stream, cut at each size: the timed events are the ones just after the cut.
    stream = payloads(max(args.per_day, (max(sizes) // BATCH + new_batches) * BATCH), BATCH)
    horizon = flows.HORIZON
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
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
