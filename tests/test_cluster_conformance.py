"""Both implementations of the engine's `Cluster` protocol — the library's in-memory
`ClusterSnapshot` and the service's store-backed `Cluster` — answer every question the
engine asks alike, and the engine draws the same incidents on either."""

from datetime import UTC, datetime, timedelta

import orjson
import pytest

from faultgraph.attribution.cluster import ClusterSnapshot
from faultgraph.attribution.engine import analyse
from faultgraph.attribution.generators import rail_optimized
from faultgraph.attribution.topology import Topology
from faultgraph.service import store
from faultgraph.service.cluster import Cluster
from faultgraph.service.jobs import service as jobs_service
from faultgraph.service.jobs.models import JobIn
from faultgraph.service.topology import service as topology_service

T0 = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
GRAPH = rail_optimized(16)
JOBS = [
    {"id": "train-a", "start": "2026-11-29T00:00:00Z", "gpus_per_host": 8,
     "hosts": [f"node{i:04d}" for i in range(8)], "parallelism": {"tp": 8, "dp": 8}},
    {"id": "train-b", "start": "2026-11-29T06:00:00Z", "gpus_per_host": 8,
     "hosts": [f"node{i:04d}" for i in range(8, 16)], "parallelism": {"tp": 4, "pp": 2, "dp": 8}},
]


@pytest.fixture(scope="module")
def implementations(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    topology = Topology.from_dict(GRAPH)
    engine = store.make_engine(f"duckdb:///{tmp_path_factory.mktemp('conformance') / 'c.duckdb'}")
    store.init_schema(engine)
    with engine.begin() as conn:
        topology_service.create(conn, topology=topology, graph_json=orjson.dumps(GRAPH))
        for job in JOBS:
            jobs_service.create(conn, row=jobs_service.to_row(JobIn.model_validate(job), registered=T0,
                                                               topology_version=1))
    served = Cluster(engine)
    served.load()
    yield {"snapshot": ClusterSnapshot(topology, JOBS), "service": served}
    engine.dispose()


QUESTIONS: list[tuple[str, tuple, dict]] = [
    ("jobs_on", ("node0003", T0), {}),
    ("jobs_on", ("node0012", T0 - timedelta(hours=4)), {}),  # before train-b started
    ("jobs_on", ("node0099", T0), {}),
    ("resolve", ({"host": "node0005", "kind": "gpu_xid", "attrs": {"xid": 79, "pci": "0000:3b:00"}},), {}),
    ("resolve", ({"host": "node0005", "kind": "nic_link", "attrs": {"device": "mlx5_2", "port": 1, "state": "down"}},), {}),
    ("resolve", ({"host": "node0009", "kind": "nccl_timeout", "rank": 12, "job": "train-b", "attrs": {}},), {}),
    ("resolve", ({"host": "node0001", "kind": "host_mce", "attrs": {"text": "x"}},), {}),
    ("peer", ("node0004",), {}),
    ("reach", (["node0001", "node0002"],), {}),
    ("reach", (JOBS[0]["hosts"],), {"job": "train-a"}),  # with a job: its hosts, cached per job
]


@pytest.mark.parametrize(("method", "args", "kwargs"), QUESTIONS, ids=lambda q: str(q)[:40])
def test_same_answers(implementations, method, args, kwargs):
    answers = {name: getattr(impl, method)(*args, **kwargs) for name, impl in implementations.items()}
    assert answers["snapshot"] == answers["service"]


def test_same_placements(implementations):
    for job in JOBS:
        snapshot = implementations["snapshot"].placement(job["id"])
        served = implementations["service"].placement(job["id"])
        assert snapshot.hosts() == served.hosts()
        assert [snapshot.rank_to_gpu(r) for r in range(64)] == [served.rank_to_gpu(r) for r in range(64)]
        assert snapshot.all_groups("tp") == served.all_groups("tp") and snapshot.all_groups("dp") == served.all_groups("dp")


def test_same_incidents(implementations):
    pci = Topology.from_dict(GRAPH).attrs("node0002/gpu3")["pci"]
    events = [{"id": "x", "time": T0, "host": "node0002", "kind": "gpu_xid", "severity": "critical",
               "attrs": {"xid": 79, "pci": pci}}]
    for rank in range(64):
        if rank != 19:
            events.append({"id": f"t{rank}", "time": T0 + timedelta(minutes=10), "host": f"node{rank // 8:04d}",
                           "kind": "nccl_timeout", "job": "train-a", "rank": rank, "severity": "error",
                           "attrs": {"op": "ALLREDUCE", "seq": 7, "timeout_ms": 600_000, "elapsed_ms": 600_020}})
    drafts = {name: analyse(events, impl) for name, impl in implementations.items()}
    summary = {name: [(d.scope, d.root_cause.get("component"), d.root_cause.get("cause"), d.action.get("kind"))
                      for d in found] for name, found in drafts.items()}
    assert summary["snapshot"] == summary["service"]  # the action too: both price it on the same placement
    assert [row[:3] for row in summary["service"]] == [("job:train-a", "node0002/gpu3", "gpu_fell_off_bus")]
