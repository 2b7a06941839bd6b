"""The topology model and the generators: counts, wiring, round trip, validation."""

import copy
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faultgraph.attribution.generators import (
    DGX_H100_GPU_BUSES,
    heterogeneous_example,
    rail_optimized,
)
from faultgraph.attribution.topology import Topology, TopologyError, link_id, split_link_id


@pytest.fixture(scope="module")
def cluster() -> Topology:
    return Topology.from_dict(rail_optimized(hosts=40, hosts_per_su=16, spines=4))


@pytest.mark.parametrize(
    ("hosts", "hosts_per_su", "spines", "expected"),
    [
        # hosts, GPUs, NICs, NVSwitches, PCIe switches, CPUs, leaves, spines, leaf–spine links
        (1, 32, None, (1, 8, 8, 4, 4, 2, 8, 1, 8)),
        (32, 32, None, (32, 256, 256, 128, 128, 64, 8, 32, 256)),
        (33, 32, None, (33, 264, 264, 132, 132, 66, 16, 32, 512)),
        (100, 16, 8, (100, 800, 800, 400, 400, 200, 56, 8, 448)),
    ],
)
def test_rail_optimized_counts(hosts, hosts_per_su, spines, expected):
    topo = Topology.from_dict(rail_optimized(hosts=hosts, hosts_per_su=hosts_per_su, spines=spines))
    counts = topo.counts()
    n_hosts, gpus, nics, nvswitches, pcie, cpus, leaves, n_spines, uplinks = expected
    assert counts["host"] == n_hosts and counts["gpu"] == gpus and counts["nic"] == nics
    assert counts["nvswitch"] == nvswitches and counts["pciesw"] == pcie and counts["cpu"] == cpus
    assert len(topo.switches("leaf")) == leaves and len(topo.switches("spine")) == n_spines
    assert counts["link:nvlink"] == gpus * 4  # every GPU to every NVSwitch
    assert counts["link:pcie"] == gpus + nics + pcie  # GPU and NIC to their switch, switch to CPU
    assert counts["link:ib"] == nics + uplinks


def test_rail_wiring(cluster):
    for host in ("node0000", "node0017", "node0039"):
        su = int(host[4:]) // 16
        for i in range(8):
            nic = f"{host}/nic{i}"
            assert cluster.neighbours(nic, of_type="switch") == [f"leaf-s{su}-r{i}"]  # its rail's leaf, only
            assert cluster.attrs(nic)["device"] == f"mlx5_{i}"
            gpu = f"{host}/gpu{i}"
            assert sorted(cluster.neighbours(gpu, of_type="nvswitch")) == [
                f"{host}/nvswitch{k}" for k in range(4)
            ]
            # one NIC per GPU, sharing its PCIe switch
            assert cluster.neighbours(gpu, of_type="pciesw") == [f"{host}/pciesw{i // 2}"]
            assert cluster.neighbours(nic, of_type="pciesw") == [f"{host}/pciesw{i // 2}"]
        assert [cluster.attrs(f"{host}/gpu{i}")["pci"] for i in range(8)] == [
            f"0000:{bus:02x}:00" for bus in DGX_H100_GPU_BUSES
        ]
    for leaf in cluster.switches("leaf"):
        assert set(cluster.switches("spine")) <= set(cluster.neighbours(leaf))
        assert cluster.attrs(leaf)["tier"] == "leaf"


def test_identifiers_unique_across_cluster(cluster):
    gpus, nics = cluster.of_type("gpu"), cluster.of_type("nic")
    for key in ("uuid", "serial"):
        assert len({cluster.attrs(g)[key] for g in gpus}) == len(gpus)
    assert len({cluster.attrs(n)["ip"] for n in nics}) == len(nics)


def test_nvlink_ports_cover_every_gpu_link_once(cluster):
    ports = []
    for link in cluster.links_of("node0003/gpu5"):
        if link["type"] == "nvlink":
            ports.extend(link["attrs"]["gpu_links"])
    assert sorted(ports) == list(range(18))
    per_switch = [len(cluster.link(link_id("node0003/gpu5", f"node0003/nvswitch{k}"))["attrs"]["gpu_links"]) for k in range(4)]
    assert per_switch == [5, 4, 4, 5]


def test_generator_rejects_bad_sizes():
    with pytest.raises(ValueError, match="hosts"):
        rail_optimized(hosts=0)
    with pytest.raises(ValueError, match="multiple of pcie_switches"):
        rail_optimized(hosts=2, gpus_per_host=6)
    with pytest.raises(ValueError, match="fabric"):
        rail_optimized(hosts=2, fabric="token-ring")


def _normal(body):
    links = sorted((tuple(sorted((lk["a"], lk["b"]))), lk["type"], repr(lk.get("attrs"))) for lk in body["links"])
    return body["components"], links


@pytest.mark.parametrize("body", [rail_optimized(hosts=3, hosts_per_su=2), heterogeneous_example()])
def test_round_trip(body):
    original = copy.deepcopy(body)
    dumped = Topology.from_dict(body).to_dict()
    assert _normal(dumped) == _normal(original)
    assert _normal(Topology.from_dict(dumped).to_dict()) == _normal(original)


def test_heterogeneous_example_is_mixed():
    topo = Topology.from_dict(heterogeneous_example())
    gpus_per_host = Counter(topo.host_of(g) for g in topo.of_type("gpu"))
    nics_per_host = Counter(topo.host_of(n) for n in topo.of_type("nic"))
    assert set(gpus_per_host.values()) == {4, 8}
    assert set(nics_per_host.values()) == {2, 8}
    assert topo.counts()["link:eth"] > 0 and topo.counts()["link:ib"] > 0
    assert not [n for n in topo.host_components("pcie00") if topo.type_of(n) == "nvswitch"]


def test_lookups(cluster):
    gpu = cluster.component("node0001/gpu2")
    assert gpu == {"id": "node0001/gpu2", "type": "gpu", "host": "node0001", "attrs": cluster.attrs("node0001/gpu2")}
    assert cluster.component("node9999/gpu0") is None and cluster.neighbours("nope") == []
    inside = cluster.host_components("node0001")
    assert len(inside) == 1 + 8 + 8 + 4 + 4 + 2 and "node0001" in inside
    assert cluster.host_of("node0001/nic3") == "node0001" and cluster.host_of("spine-00") is None
    link = cluster.link("node0001/nic2~leaf-s0-r2")  # either order of ends
    assert link["id"] == "leaf-s0-r2~node0001/nic2" and link["type"] == "ib"
    assert cluster.link("node0001/nic2~leaf-s0-r3") is None and cluster.link("no-tilde") is None
    assert link_id("b", "a") == "a~b" and split_link_id("a~b") == ("a", "b") and split_link_id("a~b~c") is None


def test_a_hosts_switches_are_the_ones_its_nics_plug_into(cluster):
    """Rail-optimised: NIC k of every host in a scalable unit goes to that unit's leaf k."""
    assert cluster.switches_of("node0001") == frozenset(f"leaf-s0-r{k}" for k in range(8))
    assert cluster.switches_of("node0017") == frozenset(f"leaf-s1-r{k}" for k in range(8))
    assert cluster.switches_of("node9999") == frozenset()  # unknown
    tiny = Topology.from_dict(_tiny())
    assert tiny.switches_of("h0") == frozenset()  # no NIC


def _tiny():
    return {
        "components": [
            {"id": "h0", "type": "host"},
            {"id": "h0/gpu0", "type": "gpu", "host": "h0", "attrs": {"pci": "0000:3b:00"}},
            {"id": "h0/nvswitch0", "type": "nvswitch", "host": "h0"},
        ],
        "links": [{"a": "h0/gpu0", "b": "h0/nvswitch0", "type": "nvlink"}],
    }


def test_minimal_body_loads():
    topo = Topology.from_dict(_tiny())
    assert topo.counts() == {"host": 1, "gpu": 1, "nvswitch": 1, "link:nvlink": 1}
    assert topo.component("h0/nvswitch0")["attrs"] == {}


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (lambda b: b["components"].append({"id": "h0/tpu0", "type": "tpu", "host": "h0"}), ["unknown component type", "h0/tpu0"]),
        (lambda b: b["links"].append({"a": "h0/gpu0", "b": "h0", "type": "infiniband"}), ["unknown link type", "h0~h0/gpu0"]),
        (lambda b: b["links"].append({"a": "h0/gpu0", "b": "h0/nic9", "type": "pcie"}), ["dangling", "h0/nic9"]),
        (lambda b: b["components"].append({"id": "h0/gpu0", "type": "gpu", "host": "h0"}), ["duplicate component id", "h0/gpu0"]),
        (lambda b: b["links"].append({"a": "h0/nvswitch0", "b": "h0/gpu0", "type": "nvlink"}), ["duplicate link"]),
        (lambda b: b["components"].append({"id": "leaf-1", "type": "switch", "attrs": {}}), ["tier", "leaf-1"]),
        (lambda b: b["components"].append("h0/gpu1"), ["not an object", "#3"]),
        (lambda b: b.update(links="nope"), ["links", "list"]),
        (lambda b: b["components"].append({"id": "h0/x", "type": ["gpu"]}), ["unknown component type", "h0/x"]),
        (lambda b: b["links"].append({"a": "h0", "b": "h0/gpu0", "type": {}}), ["unknown link type"]),
        (lambda b: b["components"].append({"id": "sw", "type": "switch", "attrs": {"tier": []}}), ["tier", "sw"]),
        # attrs the service reads, in a type it cannot read (each was accepted, then failed ingest)
        (lambda b: b["components"].append({"id": "r0/nvswitch0", "type": "nvswitch", "attrs": {"tray": "zz"}}),
         ["attrs.tray is not an integer", "r0/nvswitch0"]),
        (lambda b: b["components"].append({"id": "r0/nvswitch1", "type": "nvswitch", "attrs": {"chip": "abc", "tray_host": ["t"]}}),
         ["attrs.chip is not an integer", "attrs.tray_host is not a string", "r0/nvswitch1"]),
        (lambda b: b["components"].append({"id": "h1", "type": "host", "attrs": {"rack": ["rack0"]}}), ["attrs.rack", "h1"]),
        (lambda b: b["components"].append({"id": "h0/gpu9", "type": "gpu", "host": "h0", "attrs": {"chip": True}}),
         ["attrs.chip is not an integer"]),
        (lambda b: b["links"][0].update(attrs={"gpu_links": 5}), ["gpu_links is not a list of integers", "h0/gpu0"]),
        (lambda b: b["links"][0].update(attrs={"gpu_links": "012"}), ["gpu_links is not a list of integers"]),
        # ids no event could name, and a part of a host the graph does not hold
        (lambda b: b["components"].append({"id": "h" * 300, "type": "host"}), ["longer than 256", "#3"]),
        (lambda b: b["components"].append({"id": "h0/gpu\n1", "type": "gpu", "host": "h0"}), ["control character"]),
        (lambda b: b["components"].append({"id": "h9/gpu0", "type": "gpu", "host": "h9"}),
         ["component's host is not a host component", "h9/gpu0 (h9)"]),
    ],
)
def test_validation_names_the_offender(mutate, words):
    body = _tiny()
    mutate(body)
    with pytest.raises(TopologyError) as caught:
        Topology.from_dict(body)
    message = str(caught.value)
    for word in words:
        assert word in message
    assert caught.value.problems


def test_validation_reports_every_problem_and_caps_offenders():
    body = _tiny()
    body["components"] += [{"id": f"h0/x{i}", "type": "disk", "host": "h0"} for i in range(9)]
    body["links"].append({"a": "h0", "b": "ghost", "type": "power"})
    with pytest.raises(TopologyError) as caught:
        Topology.from_dict(body)
    problems = caught.value.problems
    assert len(problems) == 2
    assert "and 4 more" in problems[0] and "h0/x0" in problems[0] and "h0/x8" not in problems[0]
    assert "ghost" in problems[1]


@pytest.mark.parametrize("body", [None, [], "x", {"links": []}, {"components": {}}])
def test_wrong_shape_is_a_topology_error(body):
    with pytest.raises(TopologyError):
        Topology.from_dict(body)


_KEYS = st.sampled_from(["id", "type", "host", "attrs", "a", "b", "tier", "components", "links"])
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8)
    | st.sampled_from(["h0", "h0/gpu0", "gpu", "host", "switch", "leaf", "nvlink", "pcie"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=5),
    max_leaves=20,
)
_component = st.fixed_dictionaries({"id": _json}, optional={"type": _json, "host": _json, "attrs": _json})
_link_item = st.fixed_dictionaries({"a": _json, "b": _json}, optional={"type": _json, "attrs": _json})


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({"components": st.lists(_component | _json, max_size=5), "links": st.lists(_link_item | _json, max_size=5)}) | _json)
def test_any_json_loads_or_raises_topology_error(body):
    try:
        topo = Topology.from_dict(body)
    except TopologyError as error:
        assert error.problems
    else:
        assert Topology.from_dict(topo.to_dict()).counts() == topo.counts()
