"""Prometheus metrics: what a platform team's existing Prometheus and Grafana scrape.

Counters and histograms are fed by one-line hooks on the ingest route and the engine
runner; the state gauges (open incidents, store size, MTBF, checkpoint interval) are
read from the store when Prometheus scrapes, so they are never stale and cost nothing
between scrapes. Each app has its own registry, so several apps in one process (tests,
benchmarks) do not share counts.

`host_class` is the host name without its trailing number (`node0042` → `node`,
`gpu-a-017` → `gpu-a`): the fleet's naming usually says which hardware generation or pool
a host is, and it keeps the label's cardinality to a handful of values.
"""

import math
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import sqlalchemy as sa
from fastapi import APIRouter, Depends, Request, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
    values,
)
from prometheus_client.core import GaugeMetricFamily
from sqlalchemy.engine import Connection, Engine
from starlette.types import ASGIApp, Receive, Scope, Send

from faultgraph.attribution.checkpoint import daly
from faultgraph.ingest.causes import CATEGORIES
from faultgraph.service.auth.dependencies import require
from faultgraph.service.events.models import KINDS, events
from faultgraph.service.incidents.flows import backlog
from faultgraph.service.incidents.models import incidents
from faultgraph.service.stats import service as stats

# Past this many distinct host classes, further ones are counted as "other".
MAX_HOST_CLASSES = 64
INGEST_PATHS = ("/v1/events", "/v1/logs")
# prometheus_client's own variable: set, every process keeps its samples in files there.
MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"
# The checkpoint save time assumed when the store has no checkpoint durations (minutes).
DEFAULT_SAVE_MINUTES = 5.0
TRAILING_NUMBER = r"[-_.]?[0-9]+$"

router = APIRouter(tags=["health"])


class Metrics:
    """The service's metrics, on a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.store: StoreCollector | None = None  # the gauges read from the store (`install`)
        self._classes: set[str] = set()
        labels = ("kind", "host_class")
        self.ingested = Counter("faultgraph_events_ingested", "Valid events received (duplicates included), by kind and host class.",
                                labels, registry=self.registry)
        self.rejected = Counter("faultgraph_events_rejected", "Events refused at validation, by kind and host class (\"invalid\" where unreadable).",
                                labels, registry=self.registry)
        self.duplicates = Counter("faultgraph_events_duplicate", "Valid events already stored (retried batches).", registry=self.registry)
        self.batch_size = Histogram("faultgraph_ingest_batch_events", "Events per posted batch.",
                                    buckets=(1, 10, 100, 1_000, 10_000, 100_000), registry=self.registry)
        self.ingest_latency = Histogram("faultgraph_ingest_latency_seconds", "Time to answer an ingest post (validate and commit).",
                                        ("route",), buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
                                        registry=self.registry)
        self.attribution_latency = Histogram("faultgraph_attribution_seconds", "Duration of one engine pass over newly committed events.",
                                             buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60), registry=self.registry)
        self.alerts = Counter("faultgraph_alerts", "Webhook deliveries by outcome (sent, retried, failed).",
                              ("target", "outcome"), registry=self.registry)
        self.remediations = Counter("faultgraph_remediations", "Remediation decisions by action and outcome "
                                    "(done, dry_run, failed, capped).", ("action", "outcome"), registry=self.registry)

    def host_class(self, host: str) -> str:
        """The host's class, bounded to MAX_HOST_CLASSES distinct values."""
        return self._bounded(re.sub(TRAILING_NUMBER, "", host))

    def _bounded(self, name: str) -> str:
        """A class name as counted: "numeric" for none, "other" past MAX_HOST_CLASSES."""
        name = name or "numeric"
        if name not in self._classes:
            if len(self._classes) >= MAX_HOST_CLASSES:
                return "other"
            self._classes.add(name)
        return name

    def observe_rows(self, rows: pa.Table) -> None:
        """Count valid rows by kind and host class: once per group commit, not per post."""
        if rows.num_rows:
            classes = pc.replace_substring_regex(rows.column("host"), TRAILING_NUMBER, "")
            counts = pa.table({"kind": rows.column("kind"), "host_class": classes}).group_by(["kind", "host_class"]).aggregate([([], "count_all")])
            for kind, cls, n in zip(*(counts.column(name).to_pylist() for name in ("kind", "host_class", "count_all")), strict=True):
                self.ingested.labels(kind, self._bounded(cls)).inc(n)

    def observe_batch(self, valid: int, rejected: list[dict], body: bytes, duplicates: int) -> None:
        """Count one posted batch's size, rejects and duplicates."""
        for kind, host in rejected_labels(body, [item["index"] for item in rejected]):
            self.rejected.labels(kind, self.host_class(host) if host != "invalid" else host).inc()
        self.duplicates.inc(duplicates)
        self.batch_size.observe(valid + len(rejected))

    def observe_pass(self, result: dict[str, int], seconds: float) -> None:
        """One engine pass (the runner's hook); passes with nothing new are not attribution."""
        if result.get("events"):
            self.attribution_latency.observe(seconds)


def rejected_labels(body: bytes, indices: list[int]) -> list[tuple[str, str]]:
    """(kind, host) of each rejected entry, read back from the body (only batches with rejects
    pay for this); "invalid" where the entry does not say, an unknown kind is "unknown"."""
    if not indices:
        return []
    try:
        whole = orjson.loads(body)
        items = whole.get("events") if isinstance(whole, dict) else whole
    except orjson.JSONDecodeError:
        items = None
    if not isinstance(items, list):
        items = []
        for line in body.splitlines():
            if line.strip():
                try:
                    items.append(orjson.loads(line))
                except orjson.JSONDecodeError:
                    items.append(None)
    labels = []
    for index in indices:
        item = items[index] if 0 <= index < len(items) else None
        kind = item.get("kind") if isinstance(item, dict) else None
        host = item.get("host") if isinstance(item, dict) else None
        kind = ("unknown" if isinstance(kind, str) and kind not in KINDS else kind) if isinstance(kind, str) else "invalid"
        labels.append((kind, host if isinstance(host, str) and host else "invalid"))
    return labels


class StoreCollector:
    """Gauges read from the store at scrape time."""

    def __init__(self, engine: Callable[[], Engine], db_url: str) -> None:
        self._engine = engine
        self._db_path = _duckdb_path(db_url)

    def describe(self) -> list:
        return []  # the gauges need the store, which is not open when the app registers this

    def collect(self) -> Iterator[GaugeMetricFamily]:
        engine = self._engine()
        with engine.connect() as conn:
            open_rows: dict[str, int] = dict(conn.execute(
                sa.select(incidents.c.category, sa.func.count())
                .where(incidents.c.status != "resolved").group_by(incidents.c.category)).all())
            stored = conn.execute(sa.select(sa.func.count()).select_from(events)).scalar() or 0
            n_incidents = conn.execute(sa.select(sa.func.count()).select_from(incidents)).scalar() or 0
            behind = backlog(conn)
            size = _store_bytes(conn, self._db_path)
            mtbf = stats.cluster_mtbf(conn, since=None, until=None, include_planned=False)["mtbf_hours"]
            save = stats.measured_save_minutes(conn)
        gauge = GaugeMetricFamily("faultgraph_open_incidents", "Incidents not yet resolved, by category.", labels=["category"])
        for category in CATEGORIES:
            gauge.add_metric([category], open_rows.get(category, 0))
        yield gauge
        yield GaugeMetricFamily("faultgraph_store_events", "Events held in the store.", value=stored)
        yield GaugeMetricFamily("faultgraph_store_incidents", "Incidents held in the store.", value=n_incidents)
        yield GaugeMetricFamily("faultgraph_engine_backlog_events",
                                "Events stored that the incident engine has not analysed yet.", value=behind)
        if size is not None:
            yield GaugeMetricFamily("faultgraph_store_bytes", "Size of the store on disk (DuckDB file and WAL, or the PostgreSQL database).",
                                    value=size)
        mtbf = math.nan if mtbf is None else mtbf
        yield GaugeMetricFamily("faultgraph_cluster_mtbf_hours",
                                "Cluster MTBF as GET /v1/stats/mtbf counts it over everything stored (NaN before the first interruption).",
                                value=mtbf)
        save_minutes = save or DEFAULT_SAVE_MINUTES
        yield GaugeMetricFamily("faultgraph_checkpoint_interval_minutes",
                                f"Recommended checkpoint interval (Daly's) at the current MTBF and the measured save time "
                                f"(else {DEFAULT_SAVE_MINUTES:g} min).",
                                value=daly(save_minutes=save_minutes, mtbf_minutes=mtbf * 60) if math.isfinite(mtbf) and mtbf > 0 else math.nan)


def _store_bytes(conn: Connection, duckdb_file: Path | None) -> int | None:
    """Bytes on disk; None for an in-memory store."""
    if conn.dialect.name == "postgresql":
        return conn.exec_driver_sql("SELECT pg_database_size(current_database())").scalar()
    if duckdb_file is None or not duckdb_file.exists():
        return None
    return duckdb_file.stat().st_size + _size(duckdb_file.with_name(duckdb_file.name + ".wal"))


def _duckdb_path(db_url: str) -> Path | None:
    url = sa.engine.make_url(db_url)
    if url.get_backend_name() != "duckdb" or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database).expanduser()


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


class IngestTimer:
    """ASGI middleware timing ingest posts from first byte to answer."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in INGEST_PATHS:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            self.metrics.ingest_latency.labels(scope["path"]).observe(time.perf_counter() - started)


def install(app, metrics: Metrics) -> None:
    """Register the store gauges, the ingest timer and `GET /metrics` on `app`."""
    metrics.store = StoreCollector(lambda: app.state.engine, app.state.settings.db_url)
    metrics.registry.register(metrics.store)
    app.add_middleware(IngestTimer, metrics=metrics)
    app.state.metrics = metrics
    app.include_router(router)


async def current(request: Request) -> Metrics:
    """The app's metrics, as a dependency of the /metrics route."""
    return request.app.state.metrics


@router.get("/metrics", dependencies=[Depends(require("reader"))])
def metrics_endpoint(metrics: Annotated[Metrics, Depends(current)]) -> Response:
    """Prometheus text format. Under `serve --workers` whichever worker answers sums every
    worker's counters (prometheus_client's multiprocess mode, see `share_between_processes`)."""
    registry = metrics.registry
    if os.environ.get(MULTIPROCESS_DIR):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        if metrics.store is not None:
            registry.register(metrics.store)
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


def share_between_processes(directory: Path) -> None:
    """Keep counters and histograms in files under `directory` that every worker forked from
    this process adds to, so a scrape of any worker counts them all. Called before the app
    (and its metrics) is made."""
    os.environ[MULTIPROCESS_DIR] = str(directory)
    values.ValueClass = values.MultiProcessValue()
