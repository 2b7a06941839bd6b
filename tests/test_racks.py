"""GB200 NVL72 racks: the generator's ids, rack-part resolution, and the NVLink-domain rule
through the whole engine (two racks, three jobs)."""

from datetime import UTC, datetime, timedelta

import pytest

from faultgraph.attribution import racks
from faultgraph.attribution.classify import classify
from faultgraph.attribution.cluster import ClusterSnapshot
from faultgraph.attribution.engine import analyse
from faultgraph.attribution.generators import gb200_nvl72
from faultgraph.attribution.topology import Topology
from faultgraph.ingest.parse import parse_line

T0 = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
RACK0 = [f"node{i:04d}" for i in range(18)]
RACK1 = [f"node{i:04d}" for i in range(18, 36)]
JOBS = [
    {"id": "a", "start": "2026-11-29T00:00:00Z", "gpus_per_host": 4, "hosts": RACK0[:9]},
    {"id": "b", "start": "2026-11-29T00:00:00Z", "gpus_per_host": 4, "hosts": RACK0[9:]},
    {"id": "c", "start": "2026-11-29T00:00:00Z", "gpus_per_host": 4, "hosts": RACK1},
]
# A real SXid line (the catalogue's example, from leptonai/gpud and NVIDIA/NVSentinel tests),
# as a switch tray's NVOS would log it.
SXID_LINE = "nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20009, Non-fatal, Link 04 RX Short Error Rate"


@pytest.fixture(scope="module")
def topology() -> Topology:
    return Topology.from_dict(gb200_nvl72(racks=2))


@pytest.fixture(scope="module")
def cluster(topology) -> ClusterSnapshot:
    return ClusterSnapshot(topology, JOBS)


def test_generator_ids_follow_spec(topology: Topology) -> None:
    assert topology.type_of("rack01") == "rack"
    assert (topology.type_of("rack01/nvswitch11"), topology.host_of("rack01/nvswitch11")) == ("nvswitch", None)
    assert topology.type_of("rack01/pdu1") == "power"
    assert len(topology.of_type("nvswitch")) == 36 and len(topology.hosts()) == 36
    gpus = [c for c in topology.host_components("node0000") if topology.type_of(c) == "gpu"]
    assert len(gpus) == 4
    # every GPU reaches every chip of its rack, none of the other rack's
    chips = {n for n in topology.neighbours("node0000/gpu3") if topology.type_of(n) == "nvswitch"}
    assert chips == {f"rack00/nvswitch{k}" for k in range(18)}


def _event(id_: str, kind: str, host: str, at: datetime, **fields) -> dict:
    return {"id": id_, "time": at, "host": host, "kind": kind, "attrs": fields.pop("attrs", {}), **fields}


def test_switch_tray_sxid_resolves_to_the_rack_chip(cluster: ClusterSnapshot) -> None:
    event = parse_line(SXID_LINE, host="rack00-nvsw2", source="kmsg", received=T0)
    assert event["kind"] == "nvswitch_error" and event["attrs"]["sxid"] == 20009
    assert cluster.resolve(event) == "rack00/nvswitch5"  # tray 2, chip 1
    fm = _event("x", "nvswitch_error", "node0003", T0, attrs={"text": "fabric manager: GPU NVLink training failed"})
    assert cluster.resolve(fm) == "rack00"
    assert racks.reach(cluster.topology, ["node0020"]) == {"rack01"}


def _timeouts(events: list, job: dict, at: datetime) -> None:
    for h, host in enumerate(job["hosts"]):
        for g in range(4):
            rank = h * 4 + g
            events.append(_event(f"t-{job['id']}-{rank}", "nccl_timeout", host, at, job=job["id"], rank=rank,
                                 attrs={"op": "ALLREDUCE", "seq": 42, "timeout_ms": 600000, "elapsed_ms": 600000}))


def test_a_failing_nvswitch_chip_is_blamed_for_every_job_on_its_rack(cluster: ClusterSnapshot) -> None:
    sxid = parse_line("nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 12028, Fatal, Link 04 egress non-posted PRIV error",
                      host="rack00-nvsw2", source="kmsg", received=T0)
    events = [{**sxid, "id": "sxid", "component": cluster.resolve(sxid)}]
    for n, host in enumerate(RACK0[::2]):  # NVLink5 XIDs on trays all over the rack
        events.append(_event(f"x{n}", "gpu_xid", host, T0 + timedelta(seconds=2 + n), component=f"{host}/gpu{n % 4}",
                             attrs={"xid": 145, "text": "NVLink RLW error"}))
    _timeouts(events, JOBS[0], T0 + timedelta(minutes=10))
    _timeouts(events, JOBS[1], T0 + timedelta(minutes=10))
    incidents = {d.job: d for d in analyse(sorted(events, key=lambda e: (e["time"], e["id"])), cluster)}
    assert set(incidents) == {"a", "b"}  # job c, on the other rack, was not interrupted
    for job in ("a", "b"):
        root = incidents[job].root_cause
        assert (root["component"], root["cause"]) == ("rack00/nvswitch5", "nvswitch"), incidents[job].candidates


def test_nvlink_errors_on_many_trays_without_a_chip_error_blame_the_rack_fabric(cluster: ClusterSnapshot) -> None:
    events = [_event(f"x{n}", "gpu_xid", host, T0 + timedelta(seconds=n), component=f"{host}/gpu0",
                     attrs={"xid": 149, "text": "NVLink NETIR error"}) for n, host in enumerate(RACK1[:6])]
    _timeouts(events, JOBS[2], T0 + timedelta(minutes=10))
    [incident] = analyse(sorted(events, key=lambda e: (e["time"], e["id"])), cluster)
    assert (incident.root_cause["component"], incident.root_cause["cause"]) == ("rack01", "nvswitch")


def test_a_compute_tray_fault_stays_on_its_tray(cluster: ClusterSnapshot) -> None:
    events = [_event("x79", "gpu_xid", "node0020", T0, component="node0020/gpu2",
                     attrs={"xid": 79, "text": "GPU has fallen off the bus."})]
    _timeouts(events, JOBS[2], T0 + timedelta(minutes=10))
    [incident] = analyse(sorted(events, key=lambda e: (e["time"], e["id"])), cluster)
    assert incident.root_cause["component"] == "node0020/gpu2"
    assert classify(events[0]).cause == "gpu_fell_off_bus"


def test_layout_lists_each_racks_trays_in_order(topology: Topology) -> None:
    """What the UI's rack lanes read (GET /v1/topology/racks)."""
    rack01 = racks.layout(topology)[1]
    assert rack01["id"] == "rack01" and rack01["power"] == ["rack01/pdu0", "rack01/pdu1"]
    assert [(t["tray"], t["host"]) for t in rack01["compute_trays"]] == list(enumerate(RACK1))
    assert [(t["tray"], t["host"]) for t in rack01["switch_trays"]] == [(t, f"rack01-nvsw{t}") for t in range(9)]
    assert rack01["switch_trays"][5]["chips"] == ["rack01/nvswitch10", "rack01/nvswitch11"]


def test_layout_of_a_discovered_rack_numbers_trays_by_host() -> None:
    """Discovery knows a rack from the GPUs' clique, not tray numbers or switch-tray hosts."""
    hosts = ["gb-b10", "gb-b2", "gb-b1"]
    body = {"components": [{"id": "rack00", "type": "rack", "host": None, "attrs": {}},
                           *({"id": f"rack00/nvswitch{k}", "type": "nvswitch", "host": None,
                              "attrs": {"rack": "rack00", "tray": k // 2}} for k in range(18)),
                           *({"id": h, "type": "host", "host": h, "attrs": {"rack": "rack00"}} for h in hosts),
                           {"id": "other", "type": "host", "host": "other", "attrs": {}}], "links": []}
    [rack] = racks.layout(Topology.from_dict(body))
    assert [(t["tray"], t["host"]) for t in rack["compute_trays"]] == [(0, "gb-b1"), (1, "gb-b2"), (2, "gb-b10")]
    assert len(rack["switch_trays"]) == 9 and rack["switch_trays"][8] == {
        "tray": 8, "host": None, "chips": ["rack00/nvswitch16", "rack00/nvswitch17"]}
    assert racks.layout(None) == []
