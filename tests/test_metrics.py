"""`GET /metrics` through Prometheus's own text parser, and the deploy/ files over it."""

import json
import math
import re
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import yaml
from conftest import free_port, serve_in_process
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from test_incidents_api import T0, gpu_falls_off

from faultgraph.attribution.checkpoint import daly
from faultgraph.service.metrics import Metrics

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"


def scrape(client) -> dict[str, dict[tuple, float]]:
    """family name → {sorted label items (plus the sample's suffix) → value}."""
    response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return families_of(response.text)


def families_of(exposition: str) -> dict[str, dict[tuple, float]]:
    """An exposition's samples as `scrape` gives them."""
    families = {}
    for family in text_string_to_metric_families(exposition):
        samples = families.setdefault(family.name, {})
        for sample in family.samples:
            samples[(sample.name, *sorted(sample.labels.items()))] = sample.value
    return families


def value(families, family: str, sample: str | None = None, **labels) -> float:
    return families[family][(sample or family, *sorted(labels.items()))]


def test_ingest_incidents_and_reliability_metrics(client):
    storm = gpu_falls_off()  # 66 events on node00xx, resolved by a restart
    bad = [{"time": "2026-11-29T08:00:00Z", "host": "gpu-a-017", "kind": "bogus"},
           {"time": "2026-11-29T08:00:00Z", "host": "gpu-a-018", "kind": "gpu_xid"},  # attrs.xid missing
           "not an event"]
    answer = client.post("/v1/events", json=storm + bad).json()
    assert answer["accepted"] == 66 and len(answer["rejected"]) == 3
    client.post("/v1/events", json=storm[:10])  # a retried part: duplicates
    # a second job, still down: one open gpu incident
    client.post("/v1/events", json=[e for e in gpu_falls_off("job-b", "node0103", at=T0 + timedelta(hours=3), first=100)
                                    if e["kind"] != "job_restart"])
    client.post("/v1/analyze")
    families = scrape(client)

    ingested = "faultgraph_events_ingested"
    assert value(families, ingested, ingested + "_total", kind="nccl_timeout", host_class="node") == 63 + 8 + 63  # storm[:10] holds 8 timeouts
    assert value(families, ingested, ingested + "_total", kind="gpu_xid", host_class="node") == 1 + 1 + 1
    rejected = "faultgraph_events_rejected"
    assert value(families, rejected, rejected + "_total", kind="unknown", host_class="gpu-a") == 1
    assert value(families, rejected, rejected + "_total", kind="gpu_xid", host_class="gpu-a") == 1
    assert value(families, rejected, rejected + "_total", kind="invalid", host_class="invalid") == 1
    assert value(families, "faultgraph_events_duplicate", "faultgraph_events_duplicate_total") == 10

    batch = "faultgraph_ingest_batch_events"
    assert value(families, batch, batch + "_count") == 3
    assert value(families, batch, batch + "_sum") == 69 + 10 + 65
    assert value(families, batch, batch + "_bucket", le="10.0") == 1
    latency = "faultgraph_ingest_latency_seconds"
    assert value(families, latency, latency + "_count", route="/v1/events") == 3
    assert value(families, "faultgraph_attribution_seconds", "faultgraph_attribution_seconds_count") >= 1

    assert value(families, "faultgraph_open_incidents", category="gpu") == 1
    assert value(families, "faultgraph_open_incidents", category="network") == 0
    assert value(families, "faultgraph_store_events") == 66 + 65
    assert value(families, "faultgraph_store_incidents") == 2
    assert value(families, "faultgraph_engine_backlog_events") == 0  # analysed above
    assert value(families, "faultgraph_store_bytes") > 0
    # two unplanned interruptions over the span of the stored events (07:30:00 → 11:10:04)
    mtbf = value(families, "faultgraph_cluster_mtbf_hours")
    assert math.isclose(mtbf, (3 * 3600 + 40 * 60 + 4) / 3600 / 2, rel_tol=1e-9)
    assert math.isclose(mtbf, client.get("/v1/stats/mtbf").json()["mtbf_hours"])  # one definition
    # no checkpoint durations stored: the 5-minute default save
    assert math.isclose(value(families, "faultgraph_checkpoint_interval_minutes"), daly(save_minutes=5, mtbf_minutes=mtbf * 60))
    client.post("/v1/events", json=[{"time": "2026-11-29T08:30:00Z", "host": "node0000", "kind": "checkpoint_save",
                                     "job": "llama", "attrs": {"step": 200, "duration_s": 120.0}}])
    interval = value(scrape(client), "faultgraph_checkpoint_interval_minutes")
    assert math.isclose(interval, daly(save_minutes=2, mtbf_minutes=mtbf * 60))


def test_ingested_rows_are_counted_by_kind_and_host_class():
    """A host's class is its name without the trailing number, taken off once, for stored
    events as for rejected ones (`rack1-12` is `rack1`, not `rack`); a host that is all
    digits is `numeric`."""
    rows = 30
    hosts = ["node0042", "rack1-12", "10017"]
    table = pa.table({"kind": ["gpu_xid" if i % 2 else "nccl_timeout" for i in range(rows)],
                      "host": [hosts[i % 3] for i in range(rows)]})
    metrics = Metrics()
    metrics.observe_rows(table)
    ingested = families_of(generate_latest(metrics.registry).decode())["faultgraph_events_ingested"]
    counted = {(labels["kind"], labels["host_class"]): count for (sample, *items), count in ingested.items()
               if sample.endswith("_total") for labels in [dict(items)]}
    expected: dict[tuple[str, str], float] = {}
    for i in range(rows):
        key = ("gpu_xid" if i % 2 else "nccl_timeout", {0: "node", 1: "rack1", 2: "numeric"}[i % 3])
        expected[key] = expected.get(key, 0) + 1
    assert counted == expected
    assert metrics.host_class("rack1-12") == "rack1"


def test_empty_store_has_no_mtbf_yet(client):
    families = scrape(client)
    assert math.isnan(value(families, "faultgraph_cluster_mtbf_hours"))
    assert math.isnan(value(families, "faultgraph_checkpoint_interval_minutes"))
    assert value(families, "faultgraph_store_events") == 0


def test_dashboard_references_only_metrics_that_exist(db_url):
    # a webhook target makes the alert counters exist; nothing listens there, which is fine
    server = serve_in_process(db_url, env={"FAULTGRAPH_WEBHOOKS": f"slack=http://127.0.0.1:{free_port()}/hook"})
    try:
        exposed = exposed_metrics(server.client)
    finally:
        server.stop()
    dashboard = json.loads((DEPLOY / "grafana" / "faultgraph.json").read_text())
    assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 30
    assert {i["name"] for i in dashboard["__inputs"]} == {"DS_PROMETHEUS"}
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids)) >= 10
    referenced = set()
    for panel in dashboard["panels"]:
        assert panel["targets"] and panel["gridPos"]["w"] > 0
        for target in panel["targets"]:
            referenced |= set(re.findall(r"\bfaultgraph_[a-z_]+", target["expr"]))
    missing = referenced - exposed
    assert not missing, f"the dashboard uses metrics /metrics does not expose: {missing}"
    # every metric the service exposes is on the dashboard somewhere
    unused = {family(name) for name in exposed} - {family(name) for name in referenced}
    assert not unused, f"metrics no panel shows: {unused}"


def family(sample: str) -> str:
    return re.sub(r"_(bucket|sum|count|total|created)$", "", sample)


def exposed_metrics(client) -> set[str]:
    """Names of the samples /metrics gives once every kind of metric has been fed."""
    client.post("/v1/events", json=gpu_falls_off() + [{"kind": "nope", "host": "x1", "time": "2026-11-29T08:00:00Z"}])
    client.post("/v1/analyze")
    return {sample.name for family in text_string_to_metric_families(client.get("/metrics").text) for sample in family.samples}


def test_prometheus_config_scrapes_metrics():
    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    [job] = [job for job in config["scrape_configs"] if job["job_name"] == "faultgraph"]
    assert job["metrics_path"] == "/metrics"
    assert job["static_configs"][0]["targets"] == ["127.0.0.1:8080"]
