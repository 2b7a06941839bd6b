"""Per-host tool outputs + the fabric dump → a SPEC §3 graph.

`discover(root)` reads `root/<host>/<file>` and `root/fabric/ibnetdiscover.txt`, and
answers the graph and the list of problems (missing or unreadable inputs), so the CLI can
print the one and report the other; nothing missing stops the rest from being built.

What comes from where:
- GPUs: indexes and NVLink/PCIe paths from `nvidia-smi topo -m`; bus id, serial, UUID,
  and the NVLink fabric's cluster UUID and clique (GB200) from `nvidia-smi -q`.
- GPU↔NIC affinity: GPUs and NICs whose path is `PIX` or `PXB` share a PCIe switch
  (`<host>/pciesw<n>`, one per group); every GPU and switch hangs off the CPU of its
  NUMA node (`<host>/cpu<n>`).
- NICs: `<host>/nic<n>` in the order of `nvidia-smi topo -m`'s NIC columns (else of
  `ibstat`), `device` (`mlx5_3`), `netdev` and port state from `ibdev2netdev`, port GUID
  and link layer from `ibstat`, addresses from `ip -j addr`.
- Fabric: switches and tiers from `ibnetdiscover`; an HCA is matched to a host's NIC by
  port GUID (ibstat), else by its node description (`node0042 mlx5_3`).
- Racks: GPUs that report the same NVLink cluster UUID and clique share one NVLink
  domain (a GB200 NVL72 rack); each domain becomes `rack<nn>` with its 18 NVSwitch chips.
"""

import os
import re
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faultgraph.ingest.discover import fabric as ib
from faultgraph.ingest.discover import tools

# The files of one host, by what they hold; the first name found wins.
HOST_FILES: dict[str, tuple[str, ...]] = {
    "topo": ("nvidia-smi-topo-m.txt",),
    "smi": ("nvidia-smi-q.xml", "nvidia-smi-q.txt"),
    "ibdev2netdev": ("ibdev2netdev.txt",),
    "ibstat": ("ibstat.txt",),
    "lspci": ("lspci.txt",),
    "ip": ("ip-addr.json",),
}
KNOWN_FILES = tuple(name for names in HOST_FILES.values() for name in names)
FABRIC_FILE = Path("fabric") / "ibnetdiscover.txt"
PARSERS = {
    "topo": tools.parse_topo_matrix, "smi": tools.parse_smi_query, "ibdev2netdev": tools.parse_ibdev2netdev,
    "ibstat": tools.parse_ibstat, "lspci": tools.parse_lspci, "ip": tools.parse_ip_addr,
}
PARALLEL_FROM = 256  # hosts; below this a process pool costs more than it saves
NVSWITCHES_PER_RACK = 18  # GB200 NVL72: 9 switch trays of 2 NVSwitch chips
_SHARED_PCIE = ("PIX", "PXB")


@dataclass
class Graph:
    """A SPEC §3 body under construction; ids unique, links once per pair."""

    components: dict[str, dict[str, Any]] = field(default_factory=dict)
    links: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def add(self, cid: str, ctype: str, host: str | None, **attrs: Any) -> str:
        entry = self.components.setdefault(cid, {"id": cid, "type": ctype, "host": host, "attrs": {}})
        entry["attrs"].update({key: value for key, value in attrs.items() if value is not None})
        return cid

    def link(self, a: str, b: str, ltype: str, **attrs: Any) -> None:
        lo, hi = sorted((a, b))
        entry = self.links.setdefault((lo, hi), {"a": lo, "b": hi, "type": ltype})
        if attrs:
            entry.setdefault("attrs", {}).update(attrs)

    def body(self) -> dict[str, list[dict[str, Any]]]:
        return {"components": list(self.components.values()), "links": list(self.links.values())}


@dataclass
class HostInputs:
    name: str
    parsed: dict[str, Any] = field(default_factory=dict)


def read_host(directory: Path, problems: list[str], missing: dict[str, list[str]]) -> HostInputs:
    """Parse whatever of a host's files exist; note the missing (by file) and the unreadable."""
    host = HostInputs(directory.name)
    present = set(os.listdir(directory))  # one directory read, not a stat per candidate name
    if present.isdisjoint(KNOWN_FILES):  # a misnamed or stray folder: say so, not only file by file
        problems.append(f"{host.name}: none of the known tool outputs ({', '.join(KNOWN_FILES)})")
    for what, names in HOST_FILES.items():
        name = next((name for name in names if name in present), None)
        if name is None:
            missing[" or ".join(names)].append(host.name)
            continue
        path = directory / name
        try:
            host.parsed[what] = PARSERS[what](path.read_text(errors="replace"))
        except (OSError, ValueError) as exc:
            problems.append(f"{host.name}: unreadable {path.name}: {exc}")
    return host


def _read_one(directory: Path) -> tuple[HostInputs, list[str], list[str]]:
    problems: list[str] = []
    missing: dict[str, list[str]] = defaultdict(list)
    host = read_host(directory, problems, missing)
    return host, problems, list(missing)


def _read_hosts(directories: list[Path]) -> Iterable[tuple[HostInputs, list[str], list[str]]]:
    """Parse the hosts' files, in worker processes when there are many (parsing is CPU-bound
    and each host is independent); results come back in directory order."""
    workers = min(os.cpu_count() or 1, 8)
    if len(directories) < PARALLEL_FROM or workers < 2:
        return map(_read_one, directories)
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(_read_one, directories, chunksize=64))


def discover(root: Path) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """The graph of everything under `root`, and the problems met on the way."""
    problems: list[str] = []
    missing: dict[str, list[str]] = defaultdict(list)
    graph = Graph()
    nics_by_guid: dict[str, str] = {}
    nics_by_name: dict[tuple[str, str], str] = {}
    racks: dict[tuple[str, str], list[str]] = defaultdict(list)
    hosts = sorted(p for p in root.iterdir() if p.is_dir() and p.name != FABRIC_FILE.parent.name)
    for host, host_problems, host_missing in _read_hosts(hosts):
        problems.extend(host_problems)
        for name in host_missing:
            missing[name].append(host.name)
        add_host(graph, host, nics_by_guid, nics_by_name, racks)
    problems[:0] = [f"missing {name} on {len(names)} host(s): {_some(names)}" for name, names in missing.items()]
    if not hosts:  # DIR itself is wrong (a host's own folder, a typo): the fabric line alone would not say so
        problems.insert(0, f"no host folders in {root}: expected {root}/<host>/ holding {', '.join(KNOWN_FILES)}")
    add_racks(graph, racks)
    fabric_path = root / FABRIC_FILE
    try:
        fabric = ib.parse_ibnetdiscover(fabric_path.read_text(errors="replace"))
    except FileNotFoundError:
        problems.append(f"missing {FABRIC_FILE}: no switches or cables")
    except (OSError, ValueError) as exc:
        problems.append(f"unreadable {FABRIC_FILE}: {exc}")
    else:
        add_fabric(graph, fabric, nics_by_guid, nics_by_name, problems)
    return graph.body(), problems


def add_host(graph: Graph, host: HostInputs, nics_by_guid: dict[str, str],
             nics_by_name: dict[tuple[str, str], str], racks: dict[tuple[str, str], list[str]]) -> None:
    name, parsed = host.name, host.parsed
    graph.add(name, "host", name)
    topo: tools.TopoMatrix | None = parsed.get("topo")
    smi: list[dict[str, Any]] = parsed.get("smi") or []
    indexes = topo.gpus if topo else list(range(len(smi)))
    for index in indexes:
        info = smi[index] if index < len(smi) else {}
        gpu = graph.add(f"{name}/gpu{index}", "gpu", name, index=index, **info)
        if info.get("cluster_uuid") and info.get("clique"):
            racks[(info["cluster_uuid"], info["clique"])].append(gpu)
    pci = _pci_functions(parsed.get("lspci") or [])
    for index in indexes:  # bus ids from lspci where nvidia-smi -q is missing (same order: by bus)
        if index < len(pci["gpu"]) and "pci" not in graph.components[f"{name}/gpu{index}"]["attrs"]:
            graph.components[f"{name}/gpu{index}"]["attrs"]["pci"] = pci["gpu"][index]
    devices = _nic_devices(topo, parsed.get("ibstat") or {})
    ibdev, ibstat, addresses = parsed.get("ibdev2netdev") or {}, parsed.get("ibstat") or {}, parsed.get("ip") or {}
    for number, device in enumerate(devices):
        nic = f"{name}/nic{number}"
        port = (ibstat.get(device) or {}).get("ports", {}).get(1, {})
        netdev = (ibdev.get(device) or {}).get("netdev")
        graph.add(nic, "nic", name, device=device, netdev=netdev, pci=pci["nic"][number] if number < len(pci["nic"]) else None,
                  port_guid=tools.guid(port["port_guid"]) if "port_guid" in port else None,
                  link_layer=port.get("link_layer"), ip=(addresses.get(netdev) or [None])[0] if netdev else None)
        nics_by_name[(name, device)] = nic
        if "port_guid" in port:
            nics_by_guid[tools.guid(port["port_guid"])] = nic
    if topo:
        _add_paths(graph, name, topo)


def _pci_functions(devices: list["tools.PciDevice"]) -> dict[str, list[str]]:
    """GPU and RDMA NIC functions by bus order (the order nvidia-smi and mlx5 number them)."""
    gpus = [d.bdf[:-2] for d in devices if d.description.startswith("NVIDIA") and "Audio" not in d.description
            and "Bridge" not in d.description and "NVSwitch" not in d.description]
    nics = [d.bdf for d in devices if d.description.startswith("Mellanox")
            and "Virtual Function" not in d.description]
    return {"gpu": sorted(gpus), "nic": sorted(nics)}


def _nic_devices(topo: "tools.TopoMatrix | None", ibstat: dict[str, Any]) -> list[str]:
    devices = list(topo.nics) if topo else []
    devices += [device for device in sorted(ibstat, key=_natural) if device not in devices]
    return devices


def _natural(name: str) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _add_paths(graph: Graph, host: str, topo: "tools.TopoMatrix") -> None:
    """NVLinks between GPUs; PCIe switches from PIX/PXB groups; CPUs from NUMA nodes."""
    ids = {f"GPU{i}": f"{host}/gpu{i}" for i in topo.gpus}
    ids.update({device: f"{host}/nic{n}" for n, device in enumerate(topo.nics)})
    groups: list[set[str]] = []
    for (a, b), path in topo.paths.items():
        if a not in ids or b not in ids:
            continue
        if path.startswith("NV") and a.startswith("GPU") and b.startswith("GPU"):
            graph.link(ids[a], ids[b], "nvlink", nvlinks=int(path[2:]))
        elif path in _SHARED_PCIE and (a.startswith("GPU") or b.startswith("GPU")):  # two ports of one NIC are no switch
            joined = [g for g in groups if a in g or b in g]
            merged = set().union({a, b}, *joined)
            groups = [g for g in groups if g not in joined] + [merged]
    grouped = set().union(*groups) if groups else set()
    for n, group in enumerate(sorted(groups, key=lambda g: sorted(g, key=_natural))):
        switch = graph.add(f"{host}/pciesw{n}", "pciesw", host)
        for member in group:
            graph.link(ids[member], switch, "pcie")
        numa = next((topo.numa[int(m[3:])] for m in sorted(group) if m.startswith("GPU") and int(m[3:]) in topo.numa), None)
        if numa is not None:
            graph.link(switch, graph.add(f"{host}/cpu{numa}", "cpu", host), "pcie")
    for index in topo.gpus:
        if f"GPU{index}" not in grouped and index in topo.numa:
            graph.link(ids[f"GPU{index}"], graph.add(f"{host}/cpu{topo.numa[index]}", "cpu", host), "pcie")
    for device in topo.nics:  # a NIC on no GPU's switch hangs off the CPU its NUMA-local GPUs use
        near = next((i for i in topo.gpus if topo.paths.get((f"GPU{i}", device)) in ("NODE", "PHB") and i in topo.numa), None)
        if device not in grouped and near is not None:
            graph.link(ids[device], graph.add(f"{host}/cpu{topo.numa[near]}", "cpu", host), "pcie")


def add_racks(graph: Graph, racks: dict[tuple[str, str], list[str]]) -> None:
    """One rack per NVLink domain (cluster UUID + clique), in order of first host name."""
    domains = sorted(racks.items(), key=lambda item: min(item[1]))
    for number, ((cluster, clique), gpus) in enumerate(domains):
        rack = graph.add(f"rack{number:02d}", "rack", None, cluster_uuid=cluster, clique=clique)
        chips = [graph.add(f"{rack}/nvswitch{k}", "nvswitch", None, rack=rack, tray=k // 2)
                 for k in range(NVSWITCHES_PER_RACK)]
        for gpu in gpus:
            host = graph.components[gpu]["host"]
            graph.components[host]["attrs"]["rack"] = rack
            for chip in chips:
                graph.link(gpu, chip, "nvlink")


def add_fabric(graph: Graph, fabric: ib.Fabric, nics_by_guid: dict[str, str],
               nics_by_name: dict[tuple[str, str], str], problems: list[str]) -> None:
    tier = ib.tiers(fabric)
    names = {g: ib.switch_name(d, g) for g, d in fabric.switches.items()}
    for node_guid, name in names.items():
        graph.add(name, "switch", None, tier=tier[node_guid], guid=node_guid, description=fabric.switches[node_guid])
    unknown = []
    for switch, port, peer, _peer_port in fabric.cables:
        if peer in fabric.switches:
            graph.link(names[switch], names[peer], "ib")
            continue
        nic = nics_by_guid.get(peer) or _nic_from_description(graph, fabric.hcas.get(peer, ""), peer, nics_by_name)
        if nic is None:
            unknown.append(peer)
            continue
        graph.link(nic, names[switch], "ib", switch_port=port)
    if unknown:
        problems.append(f"{FABRIC_FILE}: {len(unknown)} HCA ports name no host and match no ibstat port GUID "
                        f"(firmware default node description): {_some(unknown)}")


def _some(names: list[str], shown: int = 5) -> str:
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _nic_from_description(graph: Graph, description: str, port_guid: str,
                          nics_by_name: dict[tuple[str, str], str]) -> str | None:
    """`node0042 mlx5_3` → that host's NIC (created when the host has no folder);
    `node0042 HCA-6` → a NIC known only by that label."""
    parts = description.split()
    if len(parts) != 2 or "mellanox" in description.lower():
        return None
    host, device = parts
    known = nics_by_name.get((host, device))
    if known:
        return known
    graph.add(host, "host", host)
    digits = re.fullmatch(r"mlx\d+_(\d+)", device)
    number = int(digits.group(1)) if digits else sum(1 for (h, _) in nics_by_name if h == host)
    nic = graph.add(f"{host}/nic{number}", "nic", host, port_guid=port_guid,
                    **({"device": device} if device.startswith("mlx") else {"label": device}))
    nics_by_name[(host, device)] = nic
    return nic
