"""Generators for common cluster layouts, emitting the SPEC §3 JSON body.

`rail_optimized` follows the DGX H100 SuperPOD shape (NVIDIA DGX SuperPOD reference
architecture): inside a host every GPU reaches every NVSwitch over NVLink, and each GPU
shares a PCIe switch with "its" NIC; NIC i of every host in a scalable unit (SU) plugs
into leaf i of that SU (rail i), and every leaf goes up to every spine. PCI bus ids of
the GPUs are those an H100 DGX reports; the other bus ids and the NVLink port split
(5/4/4/5 of a GPU's 18 links over the four NVSwitches) are illustrative but consistent.

`heterogeneous_example` is a small mixed cluster so nothing downstream assumes one vendor
layout.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

# The PCI buses of GPU 0..7 on a DGX H100 (nvidia-smi -q).
DGX_H100_GPU_BUSES: tuple[int, ...] = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)
_NVSWITCH_FIRST_BUS = 0x05
_SERIAL_BASE = 1_650_000_000_000  # 13-digit board serials, like H100 boards report
_UUID_NAMESPACE = uuid.UUID("6f1c1a52-2f1e-4d5c-9c83-6e3b1a0f6b42")


def _pci(bus: int) -> str:
    return f"0000:{bus:02x}:00"


def _link(a: str, b: str, kind: str, attrs: dict[str, Any] | None = None) -> dict[str, Any]:
    """A link in normal form (ends sorted, attrs only when non-empty)."""
    lo, hi = (a, b) if a <= b else (b, a)
    link: dict[str, Any] = {"a": lo, "b": hi, "type": kind}
    if attrs:
        link["attrs"] = attrs
    return link


def _gpu_buses(gpus: int) -> list[int]:
    if gpus == len(DGX_H100_GPU_BUSES):
        return list(DGX_H100_GPU_BUSES)
    step = 0xE0 // gpus  # spread over the bus space like real boards, leave room for NICs
    return [0x10 + i * step for i in range(gpus)]


def _nvlink_ports(nvlinks: int, nvswitches: int) -> list[list[int]]:
    """Split a GPU's NVLink ports over the NVSwitches; the remainder goes to the outer
    switches first (18 over 4 gives 5/4/4/5 as on DGX H100)."""
    base, extra = divmod(nvlinks, nvswitches)
    counts = [base] * nvswitches
    for k in range(extra):
        counts[k // 2 if k % 2 == 0 else nvswitches - 1 - k // 2] += 1
    ports, start = [], 0
    for n in counts:
        ports.append(list(range(start, start + n)))
        start += n
    return ports


def rail_optimized(
    hosts: int,
    gpus_per_host: int = 8,
    nvswitches: int = 4,
    hosts_per_su: int = 32,
    spines: int | None = None,
    pcie_switches: int = 4,
    cpus: int = 2,
    nvlinks_per_gpu: int = 18,
    host_prefix: str = "node",
    fabric: str = "ib",
) -> dict[str, list[dict[str, Any]]]:
    """A DGX H100-style rail-optimized two-tier fat tree as a SPEC §3 body.

    One NIC per GPU; `spines` defaults to one per populated leaf port (a non-blocking
    leaf: as many uplinks as hosts below it).
    """
    _check_sizes(hosts, gpus_per_host, nvswitches, hosts_per_su, pcie_switches, cpus, nvlinks_per_gpu)
    if fabric not in ("ib", "eth"):
        raise ValueError(f"fabric must be 'ib' or 'eth', got {fabric!r}")
    su_count = -(-hosts // hosts_per_su)
    spine_count = min(hosts_per_su, hosts) if spines is None else spines
    if spine_count < 0:
        raise ValueError(f"spines must be >= 0, got {spine_count}")
    rails = gpus_per_host
    width = max(4, len(str(hosts - 1)))
    gpu_buses = _gpu_buses(gpus_per_host)
    ports = _nvlink_ports(nvlinks_per_gpu, nvswitches) if nvswitches else []
    per_switch = gpus_per_host // pcie_switches

    components: list[dict[str, Any]] = []
    links: list[dict[str, Any]] = []
    spine_ids = [f"spine-{j:02d}" for j in range(spine_count)]

    for s in range(su_count):
        for r in range(rails):
            leaf = f"leaf-s{s}-r{r}"
            components.append(
                {"id": leaf, "type": "switch", "host": None, "attrs": {"tier": "leaf", "su": s, "rail": r}}
            )
            links.extend(_link(leaf, spine, fabric) for spine in spine_ids)
    components.extend(
        {"id": spine, "type": "switch", "host": None, "attrs": {"tier": "spine"}} for spine in spine_ids
    )

    for h in range(hosts):
        host = f"{host_prefix}{h:0{width}d}"
        su = h // hosts_per_su
        components.append({"id": host, "type": "host", "host": host, "attrs": {"su": su}})
        cpu_ids = [f"{host}/cpu{c}" for c in range(cpus)]
        components.extend({"id": c, "type": "cpu", "host": host, "attrs": {}} for c in cpu_ids)
        nvsw_ids = [f"{host}/nvswitch{k}" for k in range(nvswitches)]
        components.extend(
            {"id": sw, "type": "nvswitch", "host": host, "attrs": {"pci": f"{_pci(_NVSWITCH_FIRST_BUS + k)}.0"}}
            for k, sw in enumerate(nvsw_ids)
        )
        for p in range(pcie_switches):
            pciesw = f"{host}/pciesw{p}"
            first_gpu = p * per_switch
            components.append(
                {"id": pciesw, "type": "pciesw", "host": host, "attrs": {"pci": _pci(gpu_buses[first_gpu] - 2)}}
            )
            links.append(_link(pciesw, cpu_ids[p * cpus // pcie_switches], "pcie"))
        for i in range(gpus_per_host):
            gpu, nic = f"{host}/gpu{i}", f"{host}/nic{i}"
            pciesw = f"{host}/pciesw{i // per_switch}"
            index = h * gpus_per_host + i
            components.append({
                "id": gpu, "type": "gpu", "host": host,
                "attrs": {
                    "index": i,
                    "pci": _pci(gpu_buses[i]),
                    "serial": str(_SERIAL_BASE + index),
                    "uuid": f"GPU-{uuid.uuid5(_UUID_NAMESPACE, gpu)}",
                },
            })
            components.append({
                "id": nic, "type": "nic", "host": host,
                "attrs": {
                    "device": f"mlx5_{i}",
                    "netdev": f"ib{i}" if fabric == "ib" else f"eth{i}",
                    "pci": _pci(gpu_buses[i] + 1),
                    "ip": f"10.{100 + i}.{h // 250}.{h % 250 + 1}",
                    "rail": i,
                },
            })
            links.append(_link(gpu, pciesw, "pcie"))
            links.append(_link(nic, pciesw, "pcie"))
            links.append(_link(nic, f"leaf-s{su}-r{i}", fabric))
            links.extend(
                _link(gpu, sw, "nvlink", {"gpu_links": ports[k]}) for k, sw in enumerate(nvsw_ids)
            )
    return {"components": components, "links": links}


def _check_sizes(
    hosts: int, gpus: int, nvswitches: int, hosts_per_su: int, pcie_switches: int, cpus: int, nvlinks: int
) -> None:
    for name, value, low in (
        ("hosts", hosts, 1), ("gpus_per_host", gpus, 1), ("nvswitches", nvswitches, 0),
        ("hosts_per_su", hosts_per_su, 1), ("pcie_switches", pcie_switches, 1), ("cpus", cpus, 1),
        ("nvlinks_per_gpu", nvlinks, 0),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if gpus % pcie_switches:
        raise ValueError(f"gpus_per_host ({gpus}) must be a multiple of pcie_switches ({pcie_switches})")
    if gpus > 100:
        raise ValueError(f"gpus_per_host ({gpus}) above 100 does not fit one host's PCI bus space")
    if hosts > 250 * 256:
        raise ValueError(f"hosts ({hosts}) above {250 * 256} does not fit the per-rail /16 address plan")
    if nvswitches and nvlinks < nvswitches:
        raise ValueError(f"nvlinks_per_gpu ({nvlinks}) must reach every NVSwitch ({nvswitches})")


def heterogeneous_example() -> dict[str, list[dict[str, Any]]]:
    """A small mixed cluster: two DGX H100-style hosts on an InfiniBand rail fabric and
    three PCIe servers (4 GPUs, NVLink bridges in pairs, 2 RoCE NICs) on one Ethernet ToR.
    """
    body = rail_optimized(hosts=2, hosts_per_su=2)
    components, links = body["components"], body["links"]
    tor = "tor-r1"
    components.append({"id": tor, "type": "switch", "host": None, "attrs": {"tier": "leaf", "vendor": "ethernet"}})
    gpu_buses = (0x17, 0x31, 0xB1, 0xCA)  # two GPUs under each CPU socket
    for h in range(3):
        host = f"pcie{h:02d}"
        components.append({"id": host, "type": "host", "host": host, "attrs": {"model": "PCIe 4-GPU server"}})
        for c in range(2):
            cpu, pciesw = f"{host}/cpu{c}", f"{host}/pciesw{c}"
            components.append({"id": cpu, "type": "cpu", "host": host, "attrs": {}})
            components.append({"id": pciesw, "type": "pciesw", "host": host, "attrs": {"pci": _pci(gpu_buses[2 * c] - 1)}})
            links.append(_link(cpu, pciesw, "pcie"))
            nic = f"{host}/nic{c}"
            components.append({
                "id": nic, "type": "nic", "host": host,
                "attrs": {"device": f"mlx5_{c}", "netdev": f"eth{c}", "pci": _pci(gpu_buses[2 * c] + 2),
                          "ip": f"192.168.{c}.{10 + h}"},
            })
            links.append(_link(nic, pciesw, "pcie"))
            links.append(_link(nic, tor, "eth"))
        for i, bus in enumerate(gpu_buses):
            gpu = f"{host}/gpu{i}"
            components.append({
                "id": gpu, "type": "gpu", "host": host,
                "attrs": {"index": i, "pci": _pci(bus), "serial": f"132{h:04d}{i:06d}",
                          "uuid": f"GPU-{uuid.uuid5(_UUID_NAMESPACE, gpu)}"},
            })
            links.append(_link(gpu, f"{host}/pciesw{i // 2}", "pcie"))
            if i % 2:  # NVLink bridge between the GPUs of a pair
                links.append(_link(f"{host}/gpu{i - 1}", gpu, "nvlink", {"gpu_links": [0, 1, 2, 3]}))
    return body


# The layouts `faultgraph topology generate <layout>` offers, by CLI name.
LAYOUTS: dict[str, Callable[..., dict[str, Any]]] = {"rail-optimized": rail_optimized, "heterogeneous-example": heterogeneous_example}


# GB200 NVL72 (NVIDIA GB200 NVL72 reference: 18 compute trays of 2 Grace + 4 Blackwell GPUs,
# 9 NVLink switch trays of 2 NVSwitch chips; every GPU has 18 NVLink5 ports, one to each
# chip). The GPU bus ids are the four PCI domains a GB200 compute tray reports (0008, 0009,
# 0018, 0019, bus 01); the NIC, PDU and scale-out names are illustrative but consistent.
NVL72_TRAYS, NVL72_GPUS_PER_TRAY, NVL72_SWITCH_TRAYS, NVL72_CHIPS_PER_SWITCH_TRAY = 18, 4, 9, 2
NVL72_GPU_PCI = ("0008:01:00", "0009:01:00", "0018:01:00", "0019:01:00")
NVL72_PDUS = 2


def nvl72_switch_tray(rack: str, tray: int) -> str:
    """The host name a switch tray's NVOS reports its SXids under (`rack03-nvsw4`)."""
    return f"{rack}-nvsw{tray}"


def gb200_nvl72(racks: int = 1, racks_per_su: int = 4, spines: int | None = None,
                host_prefix: str = "node") -> dict[str, list[dict[str, Any]]]:
    """GB200 NVL72 racks (SPEC §3 rack ids) on a rail-optimized InfiniBand scale-out fabric.

    Rack `rack03` holds `rack03/nvswitch0..17` (no host; chip k sits in switch tray k // 2,
    whose NVOS host is `rack03-nvsw<k // 2>`), `rack03/pdu0..1`, and 18 compute trays
    (hosts numbered across racks) of 4 GPUs, 2 Grace CPUs and 4 NICs (rail i = NIC i).
    """
    for name, value, low in (("racks", racks, 1), ("racks_per_su", racks_per_su, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    hosts = racks * NVL72_TRAYS
    width = max(4, len(str(hosts - 1)))
    su_count = -(-racks // racks_per_su)
    spine_ids = [f"spine-{j:02d}" for j in range(spines if spines is not None else min(racks_per_su * NVL72_TRAYS, 16))]
    components: list[dict[str, Any]] = [
        {"id": s, "type": "switch", "host": None, "attrs": {"tier": "spine"}} for s in spine_ids]
    links: list[dict[str, Any]] = []
    for s in range(su_count):
        for rail in range(NVL72_GPUS_PER_TRAY):
            leaf = f"leaf-s{s}-r{rail}"
            components.append({"id": leaf, "type": "switch", "host": None, "attrs": {"tier": "leaf", "su": s, "rail": rail}})
            links.extend(_link(leaf, spine, "ib") for spine in spine_ids)
    for r in range(racks):
        rack = f"rack{r:02d}"
        components.append({"id": rack, "type": "rack", "host": None, "attrs": {"nvlink_domain": rack, "su": r // racks_per_su}})
        chips = []
        for k in range(NVL72_SWITCH_TRAYS * NVL72_CHIPS_PER_SWITCH_TRAY):
            chip = f"{rack}/nvswitch{k}"
            chips.append(chip)
            components.append({"id": chip, "type": "nvswitch", "host": None, "attrs": {
                "rack": rack, "tray": k // NVL72_CHIPS_PER_SWITCH_TRAY, "chip": k % NVL72_CHIPS_PER_SWITCH_TRAY,
                "tray_host": nvl72_switch_tray(rack, k // NVL72_CHIPS_PER_SWITCH_TRAY)}})
        pdus = [f"{rack}/pdu{p}" for p in range(NVL72_PDUS)]
        components.extend({"id": pdu, "type": "power", "host": None, "attrs": {"rack": rack}} for pdu in pdus)
        for t in range(NVL72_TRAYS):
            index = r * NVL72_TRAYS + t
            host = f"{host_prefix}{index:0{width}d}"
            components.append({"id": host, "type": "host", "host": host, "attrs": {"rack": rack, "tray": t}})
            links.extend(_link(pdu, host, "power") for pdu in pdus)
            cpus = [f"{host}/cpu{c}" for c in range(2)]
            components.extend({"id": c, "type": "cpu", "host": host, "attrs": {"model": "Grace"}} for c in cpus)
            for g in range(NVL72_GPUS_PER_TRAY):
                gpu, nic = f"{host}/gpu{g}", f"{host}/nic{g}"
                components.append({"id": gpu, "type": "gpu", "host": host, "attrs": {
                    "index": g, "pci": NVL72_GPU_PCI[g], "serial": str(_SERIAL_BASE + 500_000_000 + index * 4 + g),
                    "uuid": f"GPU-{uuid.uuid5(_UUID_NAMESPACE, gpu)}"}})
                components.append({"id": nic, "type": "nic", "host": host, "attrs": {
                    "device": f"mlx5_{g}", "netdev": f"ibp{g}s0", "rail": g,
                    "ip": f"10.{100 + g}.{index // 250}.{index % 250 + 1}"}})
                links.append(_link(gpu, cpus[g // 2], "pcie", {"c2c": True}))
                links.append(_link(nic, cpus[g // 2], "pcie"))
                links.append(_link(nic, f"leaf-s{r // racks_per_su}-r{g}", "ib"))
                links.extend(_link(gpu, chip, "nvlink", {"gpu_links": [k]}) for k, chip in enumerate(chips))
    return {"components": components, "links": links}


LAYOUTS["gb200-nvl72"] = gb200_nvl72
