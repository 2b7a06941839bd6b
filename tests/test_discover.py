"""`faultgraph topology discover` on real tool outputs (tests/data/discover/README.md names each source)."""

import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from faultgraph.attribution.topology import Topology
from faultgraph.ingest.discover import fabric as ib
from faultgraph.ingest.discover import tools
from faultgraph.ingest.discover.build import Graph, HostInputs, add_host, add_racks, discover
from faultgraph.service.cli import app

DATA = Path(__file__).parent / "data" / "discover"


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_topo_matrix_with_nic_legend_and_numa_columns() -> None:
    topo = tools.parse_topo_matrix(read("coyote2-nvidia-smi-topo-m.txt"))
    assert topo.gpus == [0, 1, 2, 3]
    assert topo.nics == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]  # NIC0… named through the legend
    assert topo.numa == {0: 0, 1: 0, 2: 1, 3: 1}
    assert topo.paths[("GPU0", "mlx5_0")] == "NODE" and topo.paths[("GPU0", "GPU2")] == "SYS"


def test_topo_matrix_of_an_nvlink_host_whose_paste_lost_the_nic_columns() -> None:
    topo = tools.parse_topo_matrix(read("h800-nvidia-smi-topo-m.txt"))
    assert topo.gpus == list(range(8))
    assert topo.nics == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]  # from the NIC rows
    assert topo.paths[("GPU0", "GPU7")] == "NV8"
    assert topo.paths[("mlx5_0", "GPU1")] == "PIX"
    assert topo.numa[7] == 1


def test_topo_matrix_of_two_gpus_under_one_host_bridge() -> None:
    topo = tools.parse_topo_matrix(read("dev-canyon1-nvidia-smi-topo-m.txt"))
    assert (topo.gpus, topo.paths[("GPU0", "GPU1")]) == ([0, 1], "PHB")


def test_smi_query_text_gives_bus_id_serial_and_uuid() -> None:
    [gpu] = tools.parse_smi_query(read("h800-nvidia-smi-q.txt"))
    assert gpu == {"pci": "0000:18:00", "name": "NVIDIA H800", "serial": "1651323018291",
                   "uuid": "GPU-34bf77d1-c686-6821-79a8-32d326c5039c"}


def test_smi_query_xml_gives_bus_ids_and_uuids() -> None:
    gpus = tools.parse_smi_query(read("hadoop-nvidia-smi-q.xml"))
    assert gpus == [
        {"pci": "0000:04:00", "uuid": "GPU-28604e81-21ec-cc48-6759-bf2648b22e16", "name": "Tesla P100-PCIE-12GB"},
        {"pci": "0000:82:00", "uuid": "GPU-46915a82-3fd2-8e11-ae26-a80b607c04f3", "name": "Tesla P100-PCIE-12GB_2"},
    ]


def test_rdma_inventory() -> None:
    ibdev = tools.parse_ibdev2netdev(read("imbue-ibdev2netdev.txt"))
    assert len(ibdev) == 12 and ibdev["mlx5_10"] == {"port": 1, "netdev": "ibp204s0", "up": False}
    ibstat = tools.parse_ibstat(read("mooncake-ibstat.txt"))
    assert ibstat["mlx5_1"]["ports"][1]["port_guid"] == "0x5aa2e1fffedae627"
    assert tools.guid("0x5aa2e1fffedae627") == tools.guid("H-5aa2e1fffedae627") == "5aa2e1fffedae627"
    assert tools.parse_ip_addr(read("devbox-ip-addr.json"))["eth0"][0] == "192.0.2.2"


def test_lspci_tree_gives_bus_ids_and_the_bridges_above() -> None:
    devices = {d.bdf: d for d in tools.parse_lspci(read("coyote2-lspci-tv.txt"))}
    assert devices["0000:c1:00.0"].description == "NVIDIA Corporation AD102GL [RTX 6000 Ada Generation]"
    assert devices["0000:81:00.1"].bridges == ("0000:80:01.1",)
    assert devices["0000:65:00.0"].bridges[:2] == ("0000:60:01.1", "0000:61:00.0")  # behind a switch


def test_lspci_both_forms_of_the_same_machine_agree() -> None:
    flat = tools.parse_lspci(read("devbox-lspci-D.txt"))
    tree = tools.parse_lspci(read("devbox-lspci-tv.txt"))
    assert [d.bdf for d in flat] == [d.bdf for d in tree] and len(flat) == 6
    assert flat[3] == tools.PciDevice("0000:00:03.0", "Red Hat, Inc. Virtio 1.0 network device (rev 01)")


@pytest.mark.parametrize(("parser", "name"), [
    (tools.parse_topo_matrix, "mooncake-ibstat.txt"), (tools.parse_ibstat, "imbue-ibdev2netdev.txt"),
    (tools.parse_smi_query, "coyote2-lspci-tv.txt"), (tools.parse_lspci, "h800-nvidia-smi-q.txt"),
    (tools.parse_ip_addr, "mooncake-ibstat.txt"), (ib.parse_ibnetdiscover, "coyote2-nvidia-smi-topo-m.txt"),
])
def test_each_parser_refuses_another_tools_output(parser, name) -> None:
    with pytest.raises(ValueError):
        parser(read(name))


def test_fabric_switches_cables_and_tiers() -> None:
    fabric = ib.parse_ibnetdiscover(read("ibnetdiscover-topograph.txt"))
    tiers = ib.tiers(fabric)
    names = {g: ib.switch_name(d, g) for g, d in fabric.switches.items()}
    assert len(fabric.switches) == 40
    # the tiers come from the cabling alone; the operator's names say the same
    for node, name in names.items():
        assert tiers[node] == ("leaf" if "ibleaf" in name else "spine"), name
    hca = tools.guid("e09d7303007a4bd8")
    [(leaf, port, _, _)] = [c for c in fabric.cables if c[2] == hca]
    assert (names[leaf], port, fabric.hcas[hca]) == ("a09-p1-ibleaf-04-04", 1, "a08-p1-dgx-04-c01 mlx5_5")


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    """A discovery folder of real outputs: two hosts of their own, one host named in the
    fabric dump (with another machine's nvidia-smi outputs), the fabric."""
    layout = {
        "coyote2": {"nvidia-smi-topo-m.txt": "coyote2-nvidia-smi-topo-m.txt", "lspci.txt": "coyote2-lspci-tv.txt"},
        "dev-canyon1": {"nvidia-smi-topo-m.txt": "dev-canyon1-nvidia-smi-topo-m.txt", "ibstat.txt": "imbue-ibdev2netdev.txt"},
        "a08-p1-dgx-04-c01": {"nvidia-smi-topo-m.txt": "h800-nvidia-smi-topo-m.txt", "nvidia-smi-q.txt": "h800-nvidia-smi-q.txt"},
        "fabric": {"ibnetdiscover.txt": "ibnetdiscover-topograph.txt"},
    }
    for host, files in layout.items():
        (tmp_path / host).mkdir()
        for target, source in files.items():
            shutil.copy(DATA / source, tmp_path / host / target)
    return tmp_path


def test_discover_builds_a_graph_the_service_accepts(dump: Path) -> None:
    body, problems = discover(dump)
    topology = Topology.from_dict(body)  # raises on dangling links, duplicates, unknown types
    assert topology.attrs("a08-p1-dgx-04-c01/gpu0")["serial"] == "1651323018291"
    assert topology.has_link("a08-p1-dgx-04-c01/gpu0", "a08-p1-dgx-04-c01/gpu5")  # NV8
    assert topology.type_of("a08-p1-dgx-04-c01/pciesw0") == "pciesw"
    assert topology.has_link("a08-p1-dgx-04-c01/gpu1", "a08-p1-dgx-04-c01/pciesw0")  # GPU1 PIX NIC0
    assert topology.has_link("a08-p1-dgx-04-c01/nic0", "a08-p1-dgx-04-c01/pciesw0")
    assert topology.attrs("coyote2/gpu2")["pci"] == "0000:c1:00"  # from lspci -tv
    assert topology.has_link("coyote2/gpu2", "coyote2/cpu1")  # NUMA Affinity 1
    # fabric: a host known only from its HCA's node description, and tiers
    assert topology.has_link("a08-p1-dgx-04-c17/nic5", "a09-p1-ibleaf-04-04")
    assert topology.attrs("a10-p1-ibspine-02")["tier"] == "spine"
    assert len(topology.switches("leaf")) == 31
    assert any("unreadable ibstat.txt" in p and "dev-canyon1" in p for p in problems)
    assert any(p.startswith("missing ip-addr.json on 3 host(s)") for p in problems)
    assert any("HCA ports name no host" in p for p in problems)


def test_cli_prints_the_graph_and_names_problems_on_stderr(dump: Path) -> None:
    (dump / "fabric" / "ibnetdiscover.txt").unlink()
    done = CliRunner().invoke(app, ["topology", "discover", str(dump)])
    assert done.exit_code == 0, done.stderr
    body = orjson.loads(done.stdout)
    assert {"coyote2", "dev-canyon1", "a08-p1-dgx-04-c01"} <= {c["id"] for c in body["components"]}
    assert "missing fabric/ibnetdiscover.txt" in done.stderr


def test_an_empty_folder_and_a_host_folder_without_tool_outputs_are_named(tmp_path: Path) -> None:
    """An empty DIR prints no graph and exits 1 (piped to `topology upload`, an empty graph
    replaced the real one), and stderr says that no host folder was found, not only that
    the fabric dump is missing."""
    done = CliRunner().invoke(app, ["topology", "discover", str(tmp_path)])
    assert done.exit_code == 1 and done.stdout == "", done.stdout
    assert f"no host folders in {tmp_path}" in done.stderr and "nvidia-smi-topo-m.txt" in done.stderr
    assert f"nothing found in {tmp_path}; no topology written" in done.stderr
    (tmp_path / "node0001").mkdir()
    (tmp_path / "node0001" / "topo.log").write_text("misnamed")
    done = CliRunner().invoke(app, ["topology", "discover", str(tmp_path)])
    assert done.exit_code == 0, done.stderr
    assert "node0001: none of the known tool outputs (nvidia-smi-topo-m.txt, nvidia-smi-q.xml" in done.stderr
    assert "no host folders" not in done.stderr



def test_topo_matrix_of_a_4_gpu_box_from_a_driver_without_nic_legend() -> None:
    """Traverse (4 V100 in NVLink pairs): NICs are named `mlx5_N` in the header itself."""
    topo = tools.parse_topo_matrix(read("traverse-nvidia-smi-topo-m.txt"))
    assert topo.gpus == [0, 1, 2, 3] and topo.nics == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert (topo.paths[("GPU0", "GPU1")], topo.paths[("GPU2", "GPU3")], topo.paths[("GPU1", "GPU2")]) == ("NV3", "NV3", "SYS")
    assert topo.paths[("GPU2", "mlx5_3")] == "NODE" and topo.paths[("mlx5_0", "mlx5_1")] == "PIX"
    assert topo.numa == {0: 0, 1: 0, 2: 8, 3: 8}  # POWER9 numbers its second socket's node 8
    two = tools.parse_topo_matrix(read("della-a100-nvidia-smi-topo-m.txt"))
    assert (two.gpus, two.nics, two.numa) == ([0, 1], ["mlx5_0", "mlx5_1"], {0: 0, 1: 1})


def test_smi_query_of_gh200_and_of_an_h100_outside_any_nvlink_fabric() -> None:
    """Both print a Fabric section; neither belongs to an NVLink domain, so neither GPU
    carries a cluster UUID or clique (the H100 reports Completed with an all-zero UUID)."""
    [gh200] = tools.parse_smi_query(read("gh200-nvidia-smi-q.txt"))
    assert gh200 == {"pci": "0000:dd:00", "name": "NVIDIA GH200 480GB", "serial": "1654523007052",
                     "uuid": "GPU-35d58415-1094-5ad1-64d1-b797587d33a7"}
    [h100] = tools.parse_smi_query(read("della-h100-nvidia-smi-q.txt"))
    assert h100 == {"pci": "0000:db:00", "name": "NVIDIA H100 80GB HBM3", "serial": "1650124008279",
                    "uuid": "GPU-f7b02328-d6fe-5b1f-9683-15041689bb03"}


def test_discover_reads_the_older_and_fabric_outputs(tmp_path: Path) -> None:
    """`faultgraph topology discover` over hosts holding those outputs: two H100-like hosts
    that both report the same all-zero cluster UUID do not become one NVLink rack."""
    files = {
        "traverse-k05g9": {"nvidia-smi-topo-m.txt": "traverse-nvidia-smi-topo-m.txt"},
        "della-i14g20": {"nvidia-smi-topo-m.txt": "della-a100-nvidia-smi-topo-m.txt"},
        "della-k18g3": {"nvidia-smi-q.txt": "della-h100-nvidia-smi-q.txt"},
        "della-k18g4": {"nvidia-smi-q.txt": "della-h100-nvidia-smi-q.txt"},
        "gh-node01": {"nvidia-smi-q.txt": "gh200-nvidia-smi-q.txt"},
    }
    for host, names in files.items():
        (tmp_path / host).mkdir()
        for name, fixture in names.items():
            shutil.copy(DATA / fixture, tmp_path / host / name)
    done = subprocess.run([sys.executable, "-m", "faultgraph.service.cli", "topology", "discover", str(tmp_path)],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    topology = Topology.from_dict(orjson.loads(done.stdout))
    assert topology.of_type("rack") == []
    nvlinks = {(link["a"], link["b"]): link for link in topology.to_dict()["links"] if link["type"] == "nvlink"}
    assert set(nvlinks) == {("traverse-k05g9/gpu0", "traverse-k05g9/gpu1"), ("traverse-k05g9/gpu2", "traverse-k05g9/gpu3")}
    assert nvlinks[("traverse-k05g9/gpu0", "traverse-k05g9/gpu1")]["attrs"] == {"nvlinks": 3}
    assert topology.host_of("traverse-k05g9/nic3") == "traverse-k05g9"
    assert topology.attrs("traverse-k05g9/nic3")["device"] == "mlx5_3"
    assert topology.has_link("traverse-k05g9/cpu8", "traverse-k05g9/nic3")  # its NUMA node's CPU
    assert topology.attrs("gh-node01/gpu0")["uuid"] == "GPU-35d58415-1094-5ad1-64d1-b797587d33a7"
    assert "missing nvidia-smi-topo-m.txt on 3 host(s)" in done.stderr


def test_gpus_of_one_nvlink_clique_become_one_rack() -> None:
    """Rack grouping from parsed `nvidia-smi -q` values (no complete GB200 output is public:
    tests/data/discover/README.md). The clique and cluster UUID are the ones a GB200 tray
    reported in leptonai/gpud#1106; the third host is the real H100 output above."""
    clique = {"cluster_uuid": "9c6f5af3-53bf-49b5-a436-b66766c413c3", "clique": "4026"}
    hosts = [HostInputs(f"gb-c{t:02d}", {"smi": [{"pci": f"000{d}:01:00", **clique} for d in (8, 9)]}) for t in (2, 1)]
    hosts.append(HostInputs("della-k18g3", {"smi": tools.parse_smi_query(read("della-h100-nvidia-smi-q.txt"))}))
    graph, racks = Graph(), defaultdict(list)
    for host in hosts:
        add_host(graph, host, {}, {}, racks)
    add_racks(graph, racks)
    topology = Topology.from_dict(graph.body())
    assert topology.of_type("rack") == ["rack00"]
    assert [topology.attrs(h).get("rack") for h in ("gb-c01", "gb-c02", "della-k18g3")] == ["rack00", "rack00", None]
    assert len(topology.of_type("nvswitch")) == 18
    assert {n for n in topology.neighbours("gb-c02/gpu1") if topology.type_of(n) == "nvswitch"} == set(topology.of_type("nvswitch"))
