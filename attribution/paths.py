"""Which components and links a collective between two GPUs can cross.

Routing rules (the ones NCCL follows on the layouts we generate):

* Same host: a direct NVLink if the two GPUs have one; else every NVSwitch both GPUs
  reach (NCCL stripes NVLink traffic over all of them); else PCIe — through the shared
  PCIe switch, or up to each GPU's CPU socket (the socket interconnect is not a link
  type, so both CPUs stand for it).
* Across hosts: GPU → PCIe switch → its NIC → leaf → (spines … when the leaves differ:
  every switch on any shortest path, i.e. every ECMP choice) → leaf → NIC → PCIe switch
  → GPU. A GPU's NIC is the nearest NIC over PCIe; when a PCIe switch holds several GPUs
  and NICs they pair off in order (GPU0↔NIC0, GPU1↔NIC1 as on DGX H100).
* Rails: with `pxn=True` (NCCL's default since 2.12, PXN = PCI × NVLink) a GPU sending to
  a GPU on another rail first moves the data over NVLink to the local GPU whose NIC is on
  the receiver's rail, so the message stays on one rail and never climbs to a spine just
  to change rails. With `pxn=False` the sender uses its own NIC and a cross-rail message
  goes leaf → spine → leaf.

A fabric path is computed on the switch-only subgraph and cached per leaf pair, so a
query costs a few set operations (well under a millisecond).
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from faultgraph.attribution.topology import Topology, link_id

if TYPE_CHECKING:
    from faultgraph.attribution.placement import Placement

_TRAILING_NUMBER = re.compile(r"(\d+)$")


@dataclass(frozen=True)
class Path:
    """The components and the links (by link id) a transfer can cross."""

    components: frozenset[str]
    links: frozenset[str]

    @property
    def ids(self) -> frozenset[str]:
        """Components and links together, as one set of ids (one namespace, SPEC §2)."""
        return self.components | self.links


def _natural(node: str) -> tuple[str, int]:
    match = _TRAILING_NUMBER.search(node)
    return (node[: match.start()], int(match.group(1))) if match else (node, -1)


class Paths:
    """Path queries over one topology; build once per topology and reuse (it caches)."""

    def __init__(self, topology: Topology, pxn: bool = True) -> None:
        self.topology = topology
        self.pxn = pxn
        # networkx's own adjacency and node dicts: the public views wrap every lookup in
        # a Python-level Mapping, which is most of a path query's cost at this scale.
        self._adj = topology.graph._adj
        self._node = topology.graph._node
        self._nic_chain: dict[str, tuple[str, ...]] = {}
        self._fabric: dict[tuple[str, str], tuple[frozenset[str], frozenset[str]]] = {}
        self._switch_distances: dict[str, dict[str, int]] = {}

    # ------------------------------------------------------------------ public queries

    def between(self, a: str, b: str) -> Path:
        """Everything a transfer from GPU `a` to GPU `b` can cross (ends included)."""
        for gpu in (a, b):
            if self.topology.type_of(gpu) != "gpu":
                raise ValueError(f"{gpu!r} is not a GPU of the topology")
        nodes: set[str] = set()
        links: set[str] = set()
        host_a, host_b = self.topology.host_of(a), self.topology.host_of(b)
        if host_a == host_b:
            self._inside_host(a, b, nodes, links)
        else:
            self._across_hosts(a, b, nodes, links)
        return Path(frozenset(nodes), frozenset(links))

    def between_ranks(self, placement: Placement, a: int, b: int) -> Path:
        """`between` for two ranks of a job."""
        gpus = [placement.rank_to_gpu(r) for r in (a, b)]
        if gpus[0] is None or gpus[1] is None:
            raise ValueError(f"rank {a if gpus[0] is None else b} is not in the job")
        return self.between(gpus[0], gpus[1])

    def crossings(self, pairs: Iterable[tuple[str, str]]) -> Counter[str]:
        """For each component and link id, how many of the GPU pairs can cross it."""
        counts: Counter[str] = Counter()
        for a, b in pairs:
            counts.update(self.between(a, b).ids)
        return counts

    def shared(self, pairs: Iterable[tuple[str, str]]) -> set[str]:
        """The ids every one of the GPU pairs can cross (empty when no pairs)."""
        common: set[str] | None = None
        for a, b in pairs:
            ids = self.between(a, b).ids
            common = set(ids) if common is None else common & ids
            if not common:
                break
        return common or set()

    def footprint(self, gpus: Iterable[str | None]) -> set[str]:
        """Every id traffic among `gpus` can cross, assuming any of them may talk to any
        other: their hosts, in-host paths, NICs, and the fabric between the leaves in use
        (per rail with PXN). Fabric paths are taken from one anchor leaf per group, which
        covers every leaf pair in a leaf–spine(–core) Clos fabric."""
        by_host: dict[str, list[str]] = {}
        for gpu in gpus:
            if gpu is None or self.topology.type_of(gpu) != "gpu":
                continue
            host = self.topology.host_of(gpu)
            assert host is not None, f"{gpu} has no host"  # the topology gives every GPU its host
            by_host.setdefault(host, []).append(gpu)
        nodes: set[str] = set()
        links: set[str] = set()
        leaf_groups: dict[object, set[str]] = {}
        for host, members in by_host.items():
            nodes.add(host)
            anchor = members[0]
            for gpu in members:
                if gpu != anchor:
                    self._inside_host(anchor, gpu, nodes, links)
                chain = self._chain_to_nic(gpu)
                if not chain:
                    nodes.add(gpu)
                    continue
                self._add_chain(chain, nodes, links)
                nic = chain[-1]
                for leaf in self._leaves(nic):
                    nodes.add(leaf)
                    links.add(link_id(nic, leaf))
                    key = self._rail(nic) if self.pxn else None
                    leaf_groups.setdefault(key, set()).add(leaf)
        for leaves in leaf_groups.values():
            ordered = sorted(leaves)
            for other in ordered[1:]:
                fabric_nodes, fabric_links = self._fabric_between(ordered[0], other)
                nodes |= fabric_nodes
                links |= fabric_links
        return nodes | links

    # ----------------------------------------------------------------- inside a host

    def _inside_host(self, a: str, b: str, nodes: set[str], links: set[str]) -> None:
        nodes.update((a, b))
        if a == b:
            return
        adj = self._adj
        if b in adj[a] and adj[a][b]["type"] == "nvlink":
            links.add(link_id(a, b))
            return
        switches = self._nvswitches(a) & self._nvswitches(b)
        if switches:
            nodes |= switches
            links.update(link_id(g, s) for s in switches for g in (a, b))
            return
        chain_a, chain_b = self._chain_to(a, "cpu"), self._chain_to(b, "cpu")
        # Peer-to-peer through the deepest PCIe switch the two chains share, if any.
        meet = next((n for n in chain_a if n in set(chain_b)), None)
        if meet is not None:
            chain_a, chain_b = chain_a[: chain_a.index(meet) + 1], chain_b[: chain_b.index(meet) + 1]
        self._add_chain(chain_a, nodes, links)
        self._add_chain(chain_b, nodes, links)

    def _nvswitches(self, gpu: str) -> set[str]:
        return {
            n for n, d in self._adj[gpu].items()
            if d["type"] == "nvlink" and self._node[n]["type"] == "nvswitch"
        }

    def _nvlink_peers(self, gpu: str) -> set[str]:
        """GPUs `gpu` reaches over NVLink alone (direct or through an NVSwitch)."""
        peers: set[str] = set()
        for n, d in self._adj[gpu].items():
            if d["type"] != "nvlink":
                continue
            if self._node[n]["type"] == "gpu":
                peers.add(n)
            elif self._node[n]["type"] == "nvswitch":
                peers.update(m for m, e in self._adj[n].items() if e["type"] == "nvlink")
        peers.discard(gpu)
        return peers

    # ------------------------------------------------------------------ across hosts

    def _across_hosts(self, a: str, b: str, nodes: set[str], links: set[str]) -> None:
        chain_b = self._chain_to_nic(b)
        chain_a = self._chain_to_nic(a)
        if self.pxn and chain_a and chain_b:
            relay = self._pxn_relay(a, chain_b[-1])
            if relay is not None and relay != a:
                self._inside_host(a, relay, nodes, links)
                chain_a = self._chain_to_nic(relay)
        nodes.update((a, b))
        if not chain_a or not chain_b:
            return  # a host without a NIC: nothing on the fabric to name
        self._add_chain(chain_a, nodes, links)
        self._add_chain(chain_b, nodes, links)
        nic_a, nic_b = chain_a[-1], chain_b[-1]
        leaves_a, leaves_b = self._leaves(nic_a), self._leaves(nic_b)
        nodes |= leaves_a | leaves_b
        links.update(link_id(nic_a, leaf) for leaf in leaves_a)
        links.update(link_id(nic_b, leaf) for leaf in leaves_b)
        if leaves_a & leaves_b:
            return
        for la in leaves_a:
            for lb in leaves_b:
                fabric_nodes, fabric_links = self._fabric_between(la, lb)
                nodes |= fabric_nodes
                links |= fabric_links

    def _pxn_relay(self, gpu: str, peer_nic: str) -> str | None:
        """The GPU on `gpu`'s host whose NIC is on `peer_nic`'s rail and that `gpu`
        reaches over NVLink; None when rails are not marked or no such GPU exists."""
        rail = self._rail(peer_nic)
        if rail is None:
            return None
        own = self._chain_to_nic(gpu)
        if own and self._rail(own[-1]) == rail:
            return gpu
        for peer in sorted(self._nvlink_peers(gpu), key=_natural):
            chain = self._chain_to_nic(peer)
            if chain and self._rail(chain[-1]) == rail:
                return peer
        return None

    def _rail(self, nic: str) -> object:
        return self._node[nic]["attrs"].get("rail")

    def _leaves(self, nic: str) -> set[str]:
        return {
            n for n, d in self._adj[nic].items()
            if d["type"] in ("ib", "eth") and self._node[n]["type"] == "switch"
        }

    def _fabric_between(self, la: str, lb: str) -> tuple[frozenset[str], frozenset[str]]:
        """Switches and links on every shortest switch-only path between two leaves."""
        key = (la, lb) if la <= lb else (lb, la)
        cached = self._fabric.get(key)
        if cached is not None:
            return cached
        adj = self._adj
        if lb in adj[la]:
            result = (frozenset((la, lb)), frozenset((link_id(la, lb),)))
        else:
            up_a, up_b = self._switch_neighbours(la), self._switch_neighbours(lb)
            middle = up_a & up_b
            if middle:
                result = (
                    frozenset(middle | {la, lb}),
                    frozenset(link_id(x, s) for s in middle for x in (la, lb)),
                )
            else:
                result = self._shortest_switch_paths(la, lb)
        self._fabric[key] = result
        return result

    def _switch_neighbours(self, switch: str) -> set[str]:
        nodes = self._node
        return {n for n in self._adj[switch] if nodes[n]["type"] == "switch"}

    def _shortest_switch_paths(self, la: str, lb: str) -> tuple[frozenset[str], frozenset[str]]:
        """Every node and edge on a shortest path over switches (deeper fabrics)."""
        from_a, from_b = self._distances(la), self._distances(lb)
        total = from_a.get(lb)
        if total is None:
            return frozenset((la, lb)), frozenset()
        on_path = {n for n, d in from_a.items() if d + from_b.get(n, total + 1) == total}
        edges = {
            link_id(u, v)
            for u in on_path for v in self._switch_neighbours(u)
            if v in on_path and from_a[u] + 1 + from_b[v] == total
        }
        return frozenset(on_path), frozenset(edges)

    def _distances(self, source: str) -> dict[str, int]:
        cached = self._switch_distances.get(source)
        if cached is None:
            cached = {source: 0}
            queue = deque([source])
            while queue:
                u = queue.popleft()
                for v in self._switch_neighbours(u):
                    if v not in cached:
                        cached[v] = cached[u] + 1
                        queue.append(v)
            self._switch_distances[source] = cached
        return cached

    # -------------------------------------------------------------------- PCIe chains

    def _chain_to_nic(self, gpu: str) -> tuple[str, ...]:
        """GPU … PCIe switch … NIC: the GPU's own NIC (empty when the host has none)."""
        chain = self._nic_chain.get(gpu)
        if chain is None:
            chain = self._chain_to(gpu, "nic")
            self._nic_chain[gpu] = chain
        return chain

    def _chain_to(self, gpu: str, target: str) -> tuple[str, ...]:
        """Shortest PCIe chain inside the host from `gpu` to a component of type
        `target`; when several tie, GPUs and targets under one parent pair off in order."""
        nodes, adj = self._node, self._adj
        host = nodes[gpu]["host"]
        parent: dict[str, str | None] = {gpu: None}
        frontier = [gpu]
        while frontier:
            found: list[str] = []
            following: list[str] = []
            for u in frontier:
                for v, d in adj[u].items():
                    if v in parent or d["type"] != "pcie" or nodes[v]["host"] != host:
                        continue
                    parent[v] = u
                    (found if nodes[v]["type"] == target else following).append(v)
            if found:
                end = self._pair_off(gpu, parent, found)
                chain = [end]
                while parent[chain[-1]] is not None:
                    chain.append(parent[chain[-1]])  # type: ignore[arg-type]
                return tuple(reversed(chain))
            # Only switches and CPUs carry PCIe traffic onward; other GPUs and NICs do not.
            frontier = [v for v in following if nodes[v]["type"] in ("pciesw", "cpu")]
        return ()

    def _pair_off(self, gpu: str, parent: dict[str, str | None], found: list[str]) -> str:
        """Among equally near targets under one hub, the GPU's branch takes the target
        at its own position (GPU1 of a PCIe switch gets the switch's NIC1)."""
        if len(found) == 1:
            return found[0]
        found.sort(key=_natural)
        hub = parent[found[0]]
        under_hub = [n for n in found if parent[n] == hub]
        branch = gpu
        while parent[branch] is not None and parent[branch] != hub:
            branch = parent[branch]  # type: ignore[assignment]
        branch_type = self._node[branch]["type"]
        siblings = sorted(
            (n for n, d in self._adj[hub].items()
             if d["type"] == "pcie" and self._node[n]["type"] == branch_type),
            key=_natural,
        )
        position = siblings.index(branch) if branch in siblings else 0
        return under_hub[position % len(under_hub)]

    @staticmethod
    def _add_chain(chain: tuple[str, ...], nodes: set[str], links: set[str]) -> None:
        nodes.update(chain)
        links.update(link_id(u, v) for u, v in zip(chain, chain[1:]))

