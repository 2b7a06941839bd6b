"""From the raw identifiers a log line carries to the canonical component id (SPEC §2).

Logs name hardware the way the driver sees it — a PCI address (`0000:3b:00`,
`00000000:3B:00.0`), an RDMA device (`mlx5_2`) or netdev (`ib2`), an IP address, an
NVLink index, a GPU UUID or board serial, a rank — never the graph's names. The resolver
indexes every such identifier the topology records, once per topology, and answers
lookups in a few dict probes. Without a topology it still applies the naming
conventions (`mlx5_N`/`ibN` → `host/nicN`, rank → `host/gpuN`) so events land on a
sensible id before a topology is uploaded.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from faultgraph.attribution import racks
from faultgraph.attribution.placement import Placement
from faultgraph.attribution.topology import Topology, link_id, split_link_id

_PCI = re.compile(
    r"^(?:pci:)?(?:(?P<domain>[0-9a-f]{1,8}):)?(?P<bus>[0-9a-f]{1,2}):(?P<dev>[0-9a-f]{1,2})(?:\.(?P<fn>[0-7]))?$",
    re.IGNORECASE,
)
# Driver names whose trailing number is the NIC's index in the conventional layout.
_NIC_DEVICE = re.compile(r"^(?:mlx5_|ib)(?P<n>\d+)$")
_NVSWITCH_DEVICE = re.compile(r"^(?:nvidia-)?nvswitch(?P<n>\d+)$")
# Attrs that name a component of the whole cluster, not just of one host.
_GLOBAL_KEYS = ("uuid", "serial")
_GLOBAL_EVENT_KEYS = ("uuid", "gpu_uuid", "serial", "board_serial")
# Kinds only a GPU reports: their bus id names a GPU or nothing.
_GPU_REPORTED = frozenset({"gpu_xid", "gpu_ecc", "gpu_thermal", "gpu_perf"})
_DEVICE_KEYS = ("device", "netdev")


def parse_pci(address: Any) -> tuple[str, int | None] | None:
    """(`dddd:bb:dd`, function or None) from any common PCI address spelling, or None.

    Accepts `0000:3b:00`, `0000:3b:00.0`, `00000000:3B:00.0` (nvidia-smi), `3b:00.0`
    (domain 0) and a leading `PCI:`; the domain is normalised to four hex digits.
    """
    return _parse_pci_text(address) if isinstance(address, str) else None


# Every ingested Xid or AER line carries a bus id, and a cluster's hosts share a few dozen.
@functools.lru_cache(maxsize=4096)
def _parse_pci_text(address: str) -> tuple[str, int | None] | None:
    """`parse_pci` of a string, kept: the regex and its conversions were half a resolve."""
    match = _PCI.match(address.strip())
    if match is None:
        return None
    domain = int(match["domain"] or "0", 16)
    if domain > 0xFFFF:
        return None
    fn = match["fn"]
    return f"{domain:04x}:{int(match['bus'], 16):02x}:{int(match['dev'], 16):02x}", (None if fn is None else int(fn))


def normalise_ip(address: Any) -> str | None:
    """An IP address in canonical text form (IPv6 zone `%ib0` and brackets dropped)."""
    if not isinstance(address, str):
        return None
    text = address.strip().strip("[]").split("%", 1)[0]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


@functools.lru_cache(maxsize=4096)  # per event with a device name; a cluster has a few dozen
def _index_of(pattern: re.Pattern[str], name: str) -> int | None:
    match = pattern.match(name.strip())
    return None if match is None else int(match["n"])


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


# Distinct component names a resolver remembers the canonical id of (a 2,048-host
# cluster has ~30,000 parts; an entry is two short strings).
CANONICAL_CACHE = 1 << 16


class Resolver:
    """Canonical component ids for events, built once per topology (or none)."""

    def __init__(self, topology: Topology | None = None) -> None:
        self.topology = topology
        self._hosts: dict[str, str] = {}
        self._pci: dict[tuple[str, str], list[tuple[int | None, str]]] = {}
        self._device: dict[tuple[str, str], str] = {}
        self._ip: dict[str, str] = {}
        self._global: dict[str, str] = {}
        if topology is not None:
            self._index(topology)
        # Every event ingested with a component asks for its canonical id, and a cluster
        # names the same few thousand parts over and over: a resolver never changes (a new
        # topology gets a new one), so its answers are kept, bounded.
        self._canonical = functools.lru_cache(maxsize=CANONICAL_CACHE)(self._canonical_of)

    def _index(self, topology: Topology) -> None:
        for host in topology.hosts():
            self._hosts[host] = host
            self._hosts.setdefault(host.lower(), host)
            self._hosts.setdefault(host.split(".", 1)[0].lower(), host)
        for node, data in topology.graph.nodes(data=True):
            attrs, host = data["attrs"], data["host"]
            if not attrs:
                continue
            if host is not None:
                parsed = parse_pci(attrs.get("pci"))
                if parsed is not None:
                    self._pci.setdefault((host, parsed[0]), []).append((parsed[1], node))
                for key in _DEVICE_KEYS:
                    name = attrs.get(key)
                    if isinstance(name, str):
                        self._device[(host, name)] = node
            ip = normalise_ip(attrs.get("ip"))
            if ip is not None:
                self._ip[ip] = node
            for key in _GLOBAL_KEYS:
                value = attrs.get(key)
                if isinstance(value, str) and value:
                    self._global[value] = node

    # ---------------------------------------------------------------------- events

    def resolve(self, event: Mapping[str, Any], placement: Placement | None = None) -> str | None:
        """The most specific component an event names, else its host; None when the
        event names nothing the resolver knows.

        Order: an explicit `component` (aliases accepted), then `attrs.pci`/`attrs.bdf`
        (refined to the NVLink named by `attrs.link`, or by `attrs.peer`), GPU UUID or
        serial, device name (`attrs.device`, also on the envelope), NVSwitch index, the
        rank through `placement`, an IP in `attrs.ip`; finally the host.
        """
        # (A dict is tested first: the ABC's own check costs 0.2 µs, this runs per event.)
        if not isinstance(event, dict | Mapping):
            return None
        attrs = event.get("attrs")
        attrs = attrs if isinstance(attrs, dict | Mapping) else {}
        explicit = event.get("component")
        if isinstance(explicit, str) and explicit:
            found = self.canonical(explicit)
            if found is not None:
                return found
        host = self.host(event.get("host"))
        # Tried in order, each only when the event carries what it reads (this runs for
        # every event ingested).
        return (
            (racks.resolve(self.topology, event) if event.get("kind") == "nvswitch_error" else None)  # GB200 rack parts
            or self._by_pci_attrs(host, attrs, event.get("kind"))
            or self._by_global(attrs)
            or self.device(host, attrs.get("device", event.get("device")))
            or self._by_nvswitch_index(host, attrs)
            or self._by_rank(host, event, attrs, placement)
            or (self.component_of_ip(attrs["ip"]) if "ip" in attrs else None)
            or host
        )

    def host(self, name: Any) -> str | None:
        """The canonical host for a host name (FQDN and case differences forgiven);
        without a topology any non-empty name is taken as given."""
        if not isinstance(name, str) or not name.strip():
            return None
        name = name.strip()
        if self.topology is None:
            return str(name)
        return (
            self._hosts.get(name)
            or self._hosts.get(name.lower())
            or self._hosts.get(name.split(".", 1)[0].lower())
        )

    def pci(self, host: str | None, address: Any) -> str | None:
        """The component at a PCI address on a host (domain:bus:device compared; the
        function decides only between components that differ in it)."""
        parsed = parse_pci(address)
        if host is None or parsed is None:
            return None
        candidates = self._pci.get((host, parsed[0]))
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0][1]
        exact = [node for fn, node in candidates if fn == (parsed[1] or 0)]
        return exact[0] if exact else candidates[0][1]

    def device(self, host: str | None, name: Any) -> str | None:
        """The NIC (or other component) a device name (`mlx5_2`, `ib2`, `eth0`) or
        address names on a host."""
        if host is None or not isinstance(name, str) or not name.strip():
            return None
        name = name.strip()
        found = self._device.get((host, name))
        if found is not None:
            return found
        if name[0].isdigit() or ":" in name:  # an address rather than a device name
            by_ip = self.component_of_ip(name)
            if by_ip is not None:
                return by_ip
        index = _index_of(_NIC_DEVICE, name)
        return None if index is None else self._conventional(f"{host}/nic{index}")

    def component_of_ip(self, address: Any) -> str | None:
        """The component (usually a NIC) that holds an IP address."""
        ip = normalise_ip(address)
        return None if ip is None else self._ip.get(ip)

    def host_of_ip(self, address: Any) -> str | None:
        """The host owning an IP address — for NCCL's `peer 10.0.35.1` lines."""
        found = self.component_of_ip(address)
        return None if found is None or self.topology is None else self.topology.host_of(found)

    def peer(self, peer: Any, placement: Placement | None = None) -> str | None:
        """The component an NCCL `peer` names: a rank (through `placement`), an IP
        address (its NIC) or a host name."""
        rank = _int(peer)
        if rank is not None:
            return None if placement is None else self._conventional(placement.rank_to_gpu(rank))
        if not isinstance(peer, str):
            return None
        return self.component_of_ip(peer) or self.host(peer)

    # ---------------------------------------------------------------- component ids

    def canonical(self, component: Any) -> str | None:
        """The canonical id for a component id or alias (`node/mlx5_2` → `node/nic2`,
        `node/0000:3b:00` → the GPU, a link with unsorted or aliased ends → its id);
        None when it names nothing known."""
        return self._canonical(component) if isinstance(component, str) else None

    def _canonical_of(self, component: str) -> str | None:
        """`canonical`, uncached."""
        if not component.strip():
            return None
        component = component.strip()
        if self.topology is not None and component in self.topology:
            return str(component)
        ends = split_link_id(component)
        if ends is not None:
            a, b = self.canonical(ends[0]), self.canonical(ends[1])
            if a is None or b is None:
                return None
            if self.topology is not None and not self.topology.has_link(a, b):
                return None
            return link_id(a, b)
        host_part, sep, local = component.partition("/")
        host = self.host(host_part)
        if host is None:
            return None
        if not sep:
            return host
        nvswitch = _index_of(_NVSWITCH_DEVICE, local)
        if nvswitch is not None:
            return self._conventional(f"{host}/nvswitch{nvswitch}")
        return (
            self.device(host, local)
            or self.pci(host, local)
            or self._conventional(f"{host}/{local}")
        )

    def aliases(self, component: str) -> list[str]:
        """Other names the component answers to (device names, PCI address, IP, UUID,
        serial) — what an on-call engineer may search for."""
        if self.topology is None or component not in self.topology:
            return []
        attrs, host = self.topology.attrs(component), self.topology.host_of(component)
        names = [f"{host}/{attrs[k]}" for k in _DEVICE_KEYS if host and isinstance(attrs.get(k), str)]
        names += [str(attrs[k]) for k in ("pci", "ip", *_GLOBAL_KEYS) if attrs.get(k)]
        return names

    # ---------------------------------------------------------------------- helpers

    def _conventional(self, component: str | None) -> str | None:
        """A conventionally named id, kept when the topology has it (or there is none)."""
        if component is None:
            return None
        if self.topology is None or component in self.topology:
            return component
        return None

    def _by_pci_attrs(self, host: str | None, attrs: Mapping[str, Any], kind: Any) -> str | None:
        """The part at the event's bus id; for an event only a GPU reports (an Xid, an ECC
        count) only a GPU: a bus id naming another part there (a stale or wrong graph) is no
        answer, and the event falls back to its host rather than blame a NIC."""
        found = self.pci(host, attrs.get("pci")) or self.pci(host, attrs.get("bdf"))
        if found is None or self.topology is None:
            return found
        if self.topology.type_of(found) != "gpu":
            return None if kind in _GPU_REPORTED else found
        return self._nvlink(found, attrs) or found

    def _nvlink(self, gpu: str, attrs: Mapping[str, Any]) -> str | None:
        """The NVLink a GPU event names by port index (`link`) or far end (`peer`)."""
        assert self.topology is not None
        port = _int(attrs.get("link"))
        if port is not None:
            for link in self.topology.links_of(gpu):
                if link["type"] == "nvlink" and port in link["attrs"].get("gpu_links", ()):
                    return str(link["id"])
        peer = attrs.get("peer")
        if isinstance(peer, str):
            far = self.canonical(peer)
            if far is not None and self.topology.has_link(gpu, far):
                return link_id(gpu, far)
        return None

    def _by_global(self, attrs: Mapping[str, Any]) -> str | None:
        if not self._global:  # no topology, or one without UUIDs and serials
            return None
        for key in _GLOBAL_EVENT_KEYS:
            value = attrs.get(key)
            if isinstance(value, str) and value in self._global:
                return self._global[value]
        return None

    def _by_nvswitch_index(self, host: str | None, attrs: Mapping[str, Any]) -> str | None:
        index = _int(attrs.get("nvswitch"))
        if host is None or index is None:
            return None
        return self._conventional(f"{host}/nvswitch{index}")

    def _by_rank(
        self, host: str | None, event: Mapping[str, Any], attrs: Mapping[str, Any], placement: Placement | None
    ) -> str | None:
        if placement is None:
            return None
        rank = _int(event.get("rank"))
        if rank is None:
            rank = _int(attrs.get("rank"))
        gpu = None if rank is None else placement.rank_to_gpu(rank)
        if rank is None or gpu is None:
            return None
        # A rank that the placement puts on another host than the line came from is a
        # stale or wrong placement; trust where the line was logged.
        if host is not None and placement.host_of(rank) != host and self.host(placement.host_of(rank)) != host:
            return None
        return self._conventional(gpu)
