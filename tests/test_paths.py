"""Path queries: inside a host, across a leaf, across a spine, rails, mixed servers."""

import pytest

from faultgraph.attribution.generators import heterogeneous_example, rail_optimized
from faultgraph.attribution.paths import Paths
from faultgraph.attribution.placement import Placement
from faultgraph.attribution.topology import Topology


@pytest.fixture(scope="module")
def cluster() -> Topology:
    return Topology.from_dict(rail_optimized(hosts=8, hosts_per_su=4, spines=3))


@pytest.fixture(scope="module")
def paths(cluster) -> Paths:
    return Paths(cluster)


def test_inside_a_host_goes_over_every_nvswitch(paths):
    path = paths.between("node0000/gpu1", "node0000/gpu6")
    assert path.components == {"node0000/gpu1", "node0000/gpu6"} | {f"node0000/nvswitch{k}" for k in range(4)}
    assert "node0000/gpu1~node0000/nvswitch3" in path.links and len(path.links) == 8
    assert path.ids == path.components | path.links


def test_across_a_leaf(paths):
    path = paths.between("node0000/gpu2", "node0003/gpu2")
    assert path.components == {
        "node0000/gpu2", "node0000/pciesw1", "node0000/nic2", "leaf-s0-r2",
        "node0003/nic2", "node0003/pciesw1", "node0003/gpu2",
    }
    assert path.links == {
        "node0000/gpu2~node0000/pciesw1", "node0000/nic2~node0000/pciesw1", "leaf-s0-r2~node0000/nic2",
        "leaf-s0-r2~node0003/nic2", "node0003/nic2~node0003/pciesw1", "node0003/gpu2~node0003/pciesw1",
    }


def test_across_a_spine(paths):
    path = paths.between("node0001/gpu7", "node0006/gpu7")
    assert {"leaf-s0-r7", "leaf-s1-r7", "spine-00", "spine-01", "spine-02"} <= path.components
    assert {"leaf-s0-r7~spine-01", "leaf-s1-r7~spine-01"} <= path.links
    assert not [c for c in path.components if "nvswitch" in c]


def test_cross_rail_uses_pxn_not_a_spine(paths):
    path = paths.between("node0000/gpu0", "node0002/gpu5")
    # NVLink to the rail-5 GPU of the sender, then rail 5 all the way.
    assert {"node0000/nvswitch0", "node0000/gpu5", "node0000/nic5", "leaf-s0-r5", "node0002/nic5"} <= path.components
    assert "node0000/nic0" not in path.components
    assert not [c for c in path.components if "spine" in c]


def test_cross_rail_without_pxn_climbs_to_a_spine(cluster):
    path = Paths(cluster, pxn=False).between("node0000/gpu0", "node0002/gpu5")
    assert {"node0000/nic0", "leaf-s0-r0", "spine-00", "leaf-s0-r5", "node0002/nic5"} <= path.components
    assert "node0000/nvswitch0" not in path.components


def test_between_ranks_and_bad_input(paths):
    job = Placement.from_job({"hosts": ["node0000", "node0004"], "gpus_per_host": 8})
    assert paths.between_ranks(job, 3, 11) == paths.between("node0000/gpu3", "node0004/gpu3")
    with pytest.raises(ValueError, match="not in the job"):
        paths.between_ranks(job, 3, 99)
    with pytest.raises(ValueError, match="not a GPU"):
        paths.between("node0000/nic0", "node0000/gpu0")


def test_shared_and_crossings(paths):
    pairs = [("node0000/gpu4", "node0001/gpu4"), ("node0002/gpu4", "node0003/gpu4"), ("node0000/gpu4", "node0006/gpu4")]
    assert paths.shared(pairs) == {"leaf-s0-r4"}
    counts = paths.crossings(pairs)
    assert counts["leaf-s0-r4"] == 3 and counts["node0000/nic4"] == 2 and counts["spine-02"] == 1
    assert paths.shared([]) == set()


@pytest.fixture(scope="module")
def mixed() -> Paths:
    return Paths(Topology.from_dict(heterogeneous_example()))


def test_pcie_server_paths(mixed):
    bridge = mixed.between("pcie00/gpu2", "pcie00/gpu3")
    assert bridge.components == {"pcie00/gpu2", "pcie00/gpu3"} and bridge.links == {"pcie00/gpu2~pcie00/gpu3"}
    sockets = mixed.between("pcie00/gpu1", "pcie00/gpu2")
    assert sockets.components == {
        "pcie00/gpu1", "pcie00/pciesw0", "pcie00/cpu0", "pcie00/cpu1", "pcie00/pciesw1", "pcie00/gpu2",
    }
    over_tor = mixed.between("pcie00/gpu3", "pcie02/gpu0")
    assert {"pcie00/nic1", "tor-r1", "pcie02/nic0"} <= over_tor.components
    assert "pcie02/nic0~tor-r1" in over_tor.links
    # no rails marked on these NICs: no PXN detour over the bridge
    assert "pcie00/gpu2" not in over_tor.components
