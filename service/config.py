"""Runtime settings, read once from flags and environment (FAULTGRAPH_*)."""

import os
from dataclasses import dataclass, field
from pathlib import Path

from platformdirs import user_data_dir

MiB = 1024 * 1024


def default_db_url() -> str:
    """A DuckDB file in the user's data directory, so `faultgraph serve` needs no flags."""
    path = Path(user_data_dir("faultgraph")) / "faultgraph.duckdb"
    return f"duckdb:///{path}"


@dataclass(frozen=True)
class Settings:
    db_url: str = field(default_factory=lambda: os.environ.get("FAULTGRAPH_DB") or default_db_url())
    max_body_bytes: int = int(os.environ.get("FAULTGRAPH_MAX_BODY_BYTES", 16 * MiB))
    # PUT /v1/topology only: a 4,096-host graph is ~35 MB of JSON.
    max_topology_bytes: int = int(os.environ.get("FAULTGRAPH_MAX_TOPOLOGY_BYTES", 256 * MiB))
    max_batch_events: int = int(os.environ.get("FAULTGRAPH_MAX_BATCH_EVENTS", 100_000))
    # Batches waiting for the single writer; past this the service answers 503 + Retry-After.
    writer_queue_batches: int = int(os.environ.get("FAULTGRAPH_WRITER_QUEUE", 512))
    # A host whose agent sent heartbeats is marked lost after this much silence.
    heartbeat_timeout_s: float = float(os.environ.get("FAULTGRAPH_HEARTBEAT_TIMEOUT", 60))
    # Rows one group commit may gather from queued batches.
    group_commit_rows: int = int(os.environ.get("FAULTGRAPH_GROUP_COMMIT_ROWS", 50_000))
    # Fair ingest (service/auth/limits.py), per caller (token × client certificate or address):
    # requests a second and at once, each `ingest_request_bytes` of body counting one more
    # request (defaults: ~320 KiB/s, ~3,000 events/s sustained, 40 requests at once); and the
    # share of the writer queue one caller may hold with requests in flight.
    ingest_rate_per_s: float = float(os.environ.get("FAULTGRAPH_INGEST_RATE", 20))
    ingest_burst: float = float(os.environ.get("FAULTGRAPH_INGEST_BURST", 40))
    ingest_request_bytes: int = int(os.environ.get("FAULTGRAPH_INGEST_REQUEST_BYTES", 16 * 1024))
    ingest_queue_share: float = float(os.environ.get("FAULTGRAPH_INGEST_QUEUE_SHARE", 0.05))
