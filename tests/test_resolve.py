"""Component resolution from every raw identifier kind, including the shared log corpus."""

import json
from pathlib import Path

import pytest

from faultgraph.attribution.generators import heterogeneous_example, rail_optimized
from faultgraph.attribution.placement import Placement
from faultgraph.attribution.resolve import Resolver, normalise_ip, parse_pci
from faultgraph.attribution.topology import Topology

CORPUS = Path(__file__).resolve().parent / "data" / "reference" / "real-logs.jsonl"


@pytest.fixture(scope="module")
def resolver() -> Resolver:
    return Resolver(Topology.from_dict(rail_optimized(hosts=4, hosts_per_su=2)))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0000:3b:00", ("0000:3b:00", None)),
        ("0000:3b:00.0", ("0000:3b:00", 0)),
        ("00000000:3B:00.0", ("0000:3b:00", 0)),
        ("PCI:0018:01:00", ("0018:01:00", None)),
        ("3b:00.1", ("0000:3b:00", 1)),
        ("0000:3b", None),
        ("100000000:3b:00.0", None),
        ("zz:00:00", None),
        (42, None),
    ],
)
def test_parse_pci(text, expected):
    assert parse_pci(text) == expected


def test_normalise_ip():
    assert normalise_ip("fe80::966d:ae03:8b:df78%ib0") == "fe80::966d:ae03:8b:df78"
    assert normalise_ip("FE80:0:0:0:966D:AE03:8B:DF78") == "fe80::966d:ae03:8b:df78"
    assert normalise_ip("10.0.35.1") == "10.0.35.1" and normalise_ip("node0001") is None


@pytest.mark.parametrize("pci", ["0000:3a:00", "0000:3a:00.0", "00000000:3A:00.0", "3a:00.0"])
def test_gpu_by_pci_in_every_spelling(resolver, pci):
    assert resolver.resolve({"host": "node0002", "kind": "gpu_xid", "attrs": {"xid": 79, "pci": pci}}) == "node0002/gpu2"


def test_other_components_by_pci(resolver):
    assert resolver.resolve({"host": "node0001", "kind": "pcie_aer", "attrs": {"bdf": "0000:5e:00.0"}}) == "node0001/nic3"
    assert resolver.resolve({"host": "node0001", "kind": "nvswitch_error", "attrs": {"pci": "0000:07:00.0"}}) == "node0001/nvswitch2"


def test_nic_by_device_netdev_and_ip(resolver):
    assert resolver.resolve({"host": "node0003", "kind": "nic_link", "attrs": {"device": "mlx5_2"}}) == "node0003/nic2"
    assert resolver.resolve({"host": "node0003", "kind": "nic_link", "attrs": {"device": "ib6"}}) == "node0003/nic6"
    assert resolver.resolve({"host": "node0003", "kind": "nic_link", "device": "ib1", "attrs": {}}) == "node0003/nic1"
    assert resolver.resolve({"host": "node0003", "kind": "nic_error", "attrs": {"ip": "10.104.0.4"}}) == "node0003/nic4"
    assert resolver.host_of_ip("10.107.0.1") == "node0000"
    assert resolver.host_of_ip("10.107.9.9") is None


def test_nvlink_by_port_index_and_peer(resolver):
    event = {"host": "node0000", "kind": "nvlink_error", "attrs": {"pci": "0000:18:00", "link": 16}}
    assert resolver.resolve(event) == "node0000/gpu0~node0000/nvswitch3"
    event["attrs"] = {"pci": "0000:18:00", "link": 99}
    assert resolver.resolve(event) == "node0000/gpu0"
    event["attrs"] = {"pci": "0000:18:00", "peer": "node0000/nvswitch1"}
    assert resolver.resolve(event) == "node0000/gpu0~node0000/nvswitch1"


def test_nvswitch_by_index_uuid_and_serial(resolver):
    assert resolver.resolve({"host": "node0001", "kind": "nvswitch_error", "attrs": {"nvswitch": 3}}) == "node0001/nvswitch3"
    topo = resolver.topology
    uuid, serial = topo.attrs("node0002/gpu7")["uuid"], topo.attrs("node0002/gpu7")["serial"]
    assert resolver.resolve({"host": "node0002", "kind": "gpu_xid", "attrs": {"gpu_uuid": uuid}}) == "node0002/gpu7"
    assert resolver.resolve({"host": "node0002", "kind": "gpu_ecc", "attrs": {"serial": serial}}) == "node0002/gpu7"


def test_rank_through_placement(resolver):
    job = Placement.from_job({"hosts": ["node0002", "node0003"], "gpus_per_host": 8})
    event = {"host": "node0003", "kind": "nccl_timeout", "rank": 13, "attrs": {"op": "ALLREDUCE"}}
    assert resolver.resolve(event, job) == "node0003/gpu5"
    assert resolver.resolve(event) == "node0003"  # no placement: the host is what we know
    event["host"] = "node0000"  # placement says another host: do not invent a GPU there
    assert resolver.resolve(event, job) == "node0000"
    assert resolver.resolve({"host": "node0002", "kind": "nccl_error", "attrs": {"rank": 2}}, job) == "node0002/gpu2"


def test_component_aliases(resolver):
    assert resolver.canonical("node0001/mlx5_2") == "node0001/nic2"
    assert resolver.canonical("node0001/ib2") == "node0001/nic2"
    assert resolver.canonical("node0001/0000:2a:00.0") == "node0001/gpu1"
    assert resolver.canonical("node0001/nvidia-nvswitch1") == "node0001/nvswitch1"
    assert resolver.canonical("node0001/mlx5_2~leaf-s0-r2") == "leaf-s0-r2~node0001/nic2"
    assert resolver.canonical("node0001/mlx5_2~leaf-s0-r3") is None  # no such link
    assert resolver.canonical("NODE0001.cluster.local") == "node0001"
    assert resolver.canonical("node0001/gpu9") is None and resolver.canonical("ghost/gpu0") is None
    assert resolver.resolve({"host": "node0001", "component": "node0001/mlx5_0", "attrs": {}}) == "node0001/nic0"
    assert set(resolver.aliases("node0001/nic2")) == {"node0001/mlx5_2", "node0001/ib2", "0000:3b:00", "10.102.0.2"}


def test_fallbacks_and_garbage(resolver):
    assert resolver.resolve({"host": "node0001", "kind": "host_mce", "attrs": {"pci": "0000:99:99"}}) == "node0001"
    assert resolver.resolve({"host": "unknown-host", "kind": "gpu_xid", "attrs": {"pci": "0000:18:00"}}) is None
    for junk in (None, [], "x", {"host": 7, "attrs": "no"}, {"attrs": {"pci": ["0000:18:00"], "device": {}}}):
        assert resolver.resolve(junk) is None
    assert resolver.canonical(None) is None and resolver.peer(None) is None and resolver.peer(3) is None


def test_without_topology_conventions_apply():
    bare = Resolver()
    job = Placement.from_job({"hosts": ["h1"], "gpus_per_host": 4})
    assert bare.resolve({"host": "h1", "kind": "nic_link", "attrs": {"device": "mlx5_3"}}) == "h1/nic3"
    assert bare.resolve({"host": "h1", "kind": "gpu_xid", "attrs": {"pci": "0000:18:00"}}) == "h1"
    assert bare.resolve({"host": "h1", "kind": "nccl_timeout", "rank": 2}, job) == "h1/gpu2"
    assert bare.canonical("h1/mlx5_2") == "h1/nic2" and bare.canonical("h1/nic2~leaf-0") == "h1/nic2~leaf-0"


def test_heterogeneous_ethernet_nic():
    mixed = Resolver(Topology.from_dict(heterogeneous_example()))
    assert mixed.resolve({"host": "pcie01", "kind": "nic_link", "attrs": {"device": "eth1"}}) == "pcie01/nic1"
    assert mixed.resolve({"host": "pcie01", "kind": "gpu_xid", "attrs": {"pci": "0000:b1:00"}}) == "pcie01/gpu2"


def _corpus_specs() -> list[dict]:
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
    return [r for r in rows if r["spec"] and not r["spec"].get("skip")]


def test_every_raw_identifier_of_the_corpus_resolves():
    """Describe the corpus machines as a topology (PCI addresses written in nvidia-smi's
    spelling, not the logs'), then resolve each line's identifiers as a parser posts them."""
    specs = _corpus_specs()
    components, expected = [{"id": "logs", "type": "host", "host": "logs", "attrs": {}}], []
    hosts = {"logs"}
    peers = [{"id": "peers", "type": "host", "host": "peers", "attrs": {}}]
    for n, row in enumerate(specs):
        spec, attrs = row["spec"], row["spec"].get("attrs", {})
        host = row["expect"].get("host") or "logs"
        if host not in hosts:
            hosts.add(host)
            components.append({"id": host, "type": "host", "host": host, "attrs": {}})
        event = {"host": host, "kind": spec["kinds"][0], "attrs": dict(attrs), "rank": spec.get("rank")}
        if "pci" in attrs:
            domain, _, bus_dev = parse_pci(attrs["pci"])[0].partition(":")
            gpu = f"{host}/gpu{1000 + n}"  # clear of the rank-numbered GPUs
            spelled = f"{int(domain, 16):08X}:{bus_dev.upper()}.0"
            if not any(c["attrs"].get("pci") == spelled and c["host"] == host for c in components):
                components.append({"id": gpu, "type": "gpu", "host": host, "attrs": {"pci": spelled}})
            expected.append((event, next(c["id"] for c in components if c["attrs"].get("pci") == spelled and c["host"] == host)))
        if "device" in spec:
            nic = f"{host}/nic{n}"
            components.append({"id": nic, "type": "nic", "host": host, "attrs": {"netdev": spec["device"]}})
            event["attrs"]["device"] = spec["device"]
            expected.append((event, nic))
        if "peer" in spec:
            nic = f"peers/nic{n}"
            ip = spec["peer"].split("%")[0]
            peers.append({"id": nic, "type": "nic", "host": "peers", "attrs": {"ip": ip}})
            expected.append(({"peer": spec["peer"]}, nic))
        if spec.get("rank") is not None:
            gpu = f"{host}/gpu{spec['rank']}"  # named as a generated topology names them
            if not any(c["id"] == gpu for c in components):
                components.append({"id": gpu, "type": "gpu", "host": host, "attrs": {}})
            expected.append((event, gpu))
    topo = Topology.from_dict({"components": components + peers, "links": []})
    job = Placement.from_job({"hosts": ["logs"], "gpus_per_host": 128})
    resolver = Resolver(topo)
    kinds = {"pci": 0, "device": 0, "peer": 0, "rank": 0}
    for event, component in expected:
        if "peer" in event:
            kinds["peer"] += 1
            assert resolver.peer(event["peer"]) == component
            assert resolver.host_of_ip(event["peer"]) == "peers"
            continue
        if event["rank"] is not None and "pci" not in event["attrs"]:
            kinds["rank"] += 1
            assert resolver.resolve(event, job) == component, event
            continue
        kinds["device" if "device" in event["attrs"] else "pci"] += 1
        assert resolver.resolve(event) == component, event
    assert all(kinds.values()), kinds  # the corpus exercises every identifier kind

