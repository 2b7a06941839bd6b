"""Engine-pass benchmark: what one pass costs when the new events extend a long incident.

    python tests/bench/engine_pass.py [--sizes 12500,25000,50000,100000] [--new 5000]

The bulk stream of `tests/bench/ingest.py` (one job's timeouts spread over a day, XIDs and
NIC counters on every host, no restart) chains into one incident as long as the stream.
A pass re-reads every stored incident its new events touch, whole (service/incidents/flows.py),
so its cost follows the incident's length, not the number of new events. For each size this
fills a fresh DuckDB store in process (no HTTP) with the first `size` events of that stream,
runs the pass that opens the incident, appends the next `--new` events and times the pass
they cause. The baseline, measured in the same run for each size: the same new events
analysed on an empty store.
"""

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from faultgraph.service import store  # noqa: E402
from faultgraph.service.cluster import Cluster  # noqa: E402
from faultgraph.service.events import service as events_service  # noqa: E402
from faultgraph.service.incidents.flows import analyze_pending  # noqa: E402
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


def timed_pass(history: list[bytes], new: list[bytes], folder: Path, runs: int) -> float:
    """Median seconds of the pass the `new` events cause after `history` was analysed."""
    seconds = []
    for _ in range(runs):
        engine = store.make_engine(f"duckdb:///{tempfile.mkdtemp(dir=folder)}/store.duckdb")
        store.init_schema(engine)
        cluster = Cluster(engine)
        cluster.load()
        seq = append(engine, cluster, history, 1)
        analyze_pending(engine, cluster)
        append(engine, cluster, new, seq)
        started = time.perf_counter()
        analyze_pending(engine, cluster)
        seconds.append(time.perf_counter() - started)
        engine.dispose()
    return statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="12500,25000,50000,100000", help="events stored before the timed pass")
    parser.add_argument("--new", type=int, default=5000, help="events the timed pass analyses as new")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    new_batches = args.new // BATCH
    # One day-long stream, cut at each size: the timed events are the ones just after the cut.
    stream = payloads((max(sizes) // BATCH + new_batches) * BATCH * 4, BATCH)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        print(f"{args.new:,} new events each time; pass seconds, median of {args.runs} runs")
        print(f"{'events before':>14} {'pass':>8} {'on empty store':>15} {'ratio':>7} {'µs per event read':>18}")
        for size in sizes:
            cut = size // BATCH
            new = stream[cut:cut + new_batches]
            seconds = timed_pass(stream[:cut], new, folder, args.runs)
            baseline = timed_pass([], new, folder, args.runs)
            print(f"{size:>14,} {seconds:>7.2f}s {baseline:>14.2f}s {seconds / baseline:>7.1f} "
                  f"{seconds / (size + args.new) * 1e6:>18.0f}")


if __name__ == "__main__":
    main()
