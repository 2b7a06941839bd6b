"""`ibnetdiscover` → the fabric's switches, which HCA port is cabled where, and the tiers.

A node block starts `Switch  65 "S-<guid>"  # "<description>" …` or `Ca  1 "H-<guid>"  #
"<description>"`; its lines `[port] "S-|H-<guid>"[peer port](port guid)  # "<peer
description>" …` are its cables. An HCA's description is set by the host (`node0042
mlx5_3`, `a06-p1-dgx-02-c01 HCA-6`), or left at the firmware's (`MT4129 ConnectX7
Mellanox Technologies`) when the host never set it; then only its port GUID (matched
against a host's `ibstat`) says whose it is. Tiers are not in the dump: a switch cabled
to an HCA is a leaf, one cabled to leaves a spine, one above spines only a core switch.
"""

import re
from collections import defaultdict, deque
from dataclasses import dataclass, field

from faultgraph.ingest.discover.tools import guid

_NODE = re.compile(r'^(Switch|Ca)\s+(\d+)\s+"([SH]-[0-9a-fA-F]+)"\s*#\s*"([^"]*)"')
_PORT = re.compile(r'^\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s+"([SH]-[0-9a-fA-F]+)"\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s*#\s*(?:lid \d+ lmc \d+ )?"([^"]*)"')
# Nodes that are not cabled hardware of their own: SHARP aggregation nodes live inside a switch.
_INTERNAL = ("Aggregation Node",)


@dataclass
class Fabric:
    switches: dict[str, str] = field(default_factory=dict)  # node guid -> description
    hcas: dict[str, str] = field(default_factory=dict)  # port guid -> description
    cables: list[tuple[str, int, str, int]] = field(default_factory=list)  # (switch guid, port, peer guid, peer port)


def parse_ibnetdiscover(text: str) -> Fabric:
    fabric = Fabric()
    current: tuple[str, str, str] | None = None  # (kind, guid, description) of the block being read
    seen: set = set()
    for line in text.splitlines():
        if match := _NODE.match(line):
            current = (match.group(1), guid(match.group(3)), match.group(4))
            if current[0] == "Switch":
                fabric.switches[current[1]] = current[2]
            continue
        match = _PORT.match(line)
        if not match or current is None:
            continue
        kind, node_guid, description = current
        port, peer_guid, peer_port = int(match.group(1)), guid(match.group(3)), int(match.group(4))
        if kind == "Ca":  # [1](port guid) "S-switch"[port]
            port_guid = guid(match.group(2)) if match.group(2) else node_guid
            if not any(word in description for word in _INTERNAL):
                fabric.hcas.setdefault(port_guid, description)
                _add(fabric, seen, peer_guid, peer_port, port_guid, port)
        elif match.group(3).startswith("H-"):  # [port] "H-node"[1](port guid)
            port_guid = guid(match.group(5)) if match.group(5) else peer_guid
            if not any(word in match.group(6) for word in _INTERNAL):
                fabric.hcas.setdefault(port_guid, match.group(6))
                _add(fabric, seen, node_guid, port, port_guid, peer_port)
        else:
            _add(fabric, seen, node_guid, port, peer_guid, peer_port)
    if not fabric.switches:
        raise ValueError("no 'Switch' node: not ibnetdiscover output")
    return fabric


def _add(fabric: Fabric, seen: set, switch: str, port: int, peer: str, peer_port: int) -> None:
    """Each cable appears from both ends; keep it once."""
    key = frozenset({(switch, port), (peer, peer_port)})
    if key not in seen:
        seen.add(key)
        fabric.cables.append((switch, port, peer, peer_port))


def switch_name(description: str, node_guid: str) -> str:
    """A component id for a switch: the name in its description (`MF0;A09-P1-IBLEAF-04-04:MQM9701/U1`
    → `a09-p1-ibleaf-04-04`), else `ibsw-<guid>`."""
    name = description.split(";", 1)[-1].split(":", 1)[0].strip()
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-").lower()
    generic = not name or "mellanox" in name or "technologies" in name
    return f"ibsw-{node_guid}" if generic else name


def tiers(fabric: Fabric) -> dict[str, str]:
    """Switch guid → `leaf` / `spine` / `core` by distance from the HCAs."""
    neighbours: dict[str, set[str]] = defaultdict(set)
    leaves = set()
    for switch, _, peer, _ in fabric.cables:
        if peer in fabric.switches:
            neighbours[switch].add(peer)
            neighbours[peer].add(switch)
        else:
            leaves.add(switch)
    distance = {leaf: 0 for leaf in leaves}
    queue = deque(leaves)
    while queue:
        node = queue.popleft()
        for peer in neighbours[node]:
            if peer not in distance:
                distance[peer] = distance[node] + 1
                queue.append(peer)
    names = ("leaf", "spine", "core")
    return {switch: names[min(distance.get(switch, 2), 2)] for switch in fabric.switches}
