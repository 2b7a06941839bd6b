"""`faultgraph topology discover` on real tool outputs (tests/data/discover/README.md names each source)."""

import shutil
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from faultgraph.attribution.topology import Topology
from faultgraph.ingest.discover import fabric as ib
from faultgraph.ingest.discover import tools
from faultgraph.ingest.discover.build import discover
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
