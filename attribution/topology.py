"""The cluster graph of SPEC §2–§3: typed components and typed links on networkx.

Attribution walks this graph, so it is built once per uploaded topology and then only
read. Loading is bulk (`add_nodes_from` / `add_edges_from` over generators) because a
32,768-GPU cluster has ~110k components and ~280k links and must load in seconds.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import networkx as nx

COMPONENT_TYPES: frozenset[str] = frozenset(
    {"host", "gpu", "nvswitch", "nic", "pciesw", "cpu", "switch", "rack", "power"}  # SPEC §3 (rack, power: GB200 NVL72)
)
LINK_TYPES: frozenset[str] = frozenset({"nvlink", "pcie", "ib", "eth", "power"})
SWITCH_TIERS: frozenset[str] = frozenset({"leaf", "spine", "core"})

# How many offenders of each problem an error message names; the full list stays on the
# exception so an API can return it, but a human reads the first few.
_SHOWN_PER_PROBLEM = 5


class TopologyError(ValueError):
    """A topology body that cannot become a graph; `problems` names each offence."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = "; ".join(problems[:_SHOWN_PER_PROBLEM])
        more = len(problems) - _SHOWN_PER_PROBLEM
        suffix = f" (and {more} more)" if more > 0 else ""
        super().__init__(f"invalid topology: {shown}{suffix}")


def link_id(a: str, b: str) -> str:
    """The canonical id of the link between `a` and `b` (SPEC §2: ends sorted, joined by ~)."""
    return f"{a}~{b}" if a <= b else f"{b}~{a}"


def split_link_id(link: str) -> tuple[str, str] | None:
    """The two ends of a link id, or None when `link` is not one."""
    if not isinstance(link, str):
        return None
    a, sep, b = link.partition("~")
    if not sep or not a or not b or "~" in b:
        return None
    return a, b


def id_host(component: str) -> str:
    """The host (or switch) a component id names first (SPEC §2): `node0042` of
    `node0042/gpu3`, the lower end's of a link; read from the id, no graph needed."""
    return component.split("~")[0].split("/")[0]


class Topology:
    """A validated, read-only cluster graph with the lookups attribution needs."""

    def __init__(self, graph: nx.Graph, by_host: dict[str, list[str]]) -> None:
        self.graph = graph
        self._by_host = by_host
        self._nodes: dict[str, dict[str, Any]] = dict(graph.nodes(data=True))  # the engine's hot lookup
        self._by_type: dict[str, list[str]] = {}
        for node, kind in graph.nodes(data="type"):
            self._by_type.setdefault(kind, []).append(node)
        # Built here, not per incident: an incident's reach asks for every host of its job,
        # and walking a 2,048-host job's components took a third of the pass that found it.
        self._nic_switches = self._index_nic_switches()

    # ----------------------------------------------------------------- build / dump

    @classmethod
    def from_dict(cls, body: Any) -> Topology:
        """Build from the SPEC §3 JSON body; raise TopologyError naming what is wrong."""
        components, links = _validate(body)
        graph = nx.Graph()
        graph.add_nodes_from(
            (c["id"], {"type": c["type"], "host": c.get("host"), "attrs": c.get("attrs") or {}})
            for c in components
        )
        graph.add_edges_from(
            (lk["a"], lk["b"], {"type": lk["type"], "attrs": lk.get("attrs") or {}})
            for lk in links
        )
        by_host: dict[str, list[str]] = {}
        for c in components:
            host = c["id"] if c["type"] == "host" else c.get("host")
            if host is not None:
                by_host.setdefault(host, []).append(c["id"])
        return cls(graph, by_host)

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        """The SPEC §3 body in normal form: every component with `host` and `attrs`,
        every link with its ends sorted, `attrs` only where a link has some."""
        components = [
            {"id": node, "type": d["type"], "host": d["host"], "attrs": d["attrs"]}
            for node, d in self.graph.nodes(data=True)
        ]
        links = []
        for u, v, d in self.graph.edges(data=True):
            a, b = (u, v) if u <= v else (v, u)
            link: dict[str, Any] = {"a": a, "b": b, "type": d["type"]}
            if d["attrs"]:
                link["attrs"] = d["attrs"]
            links.append(link)
        return {"components": components, "links": links}

    # ----------------------------------------------------------------------- lookups

    def __contains__(self, component: object) -> bool:
        return isinstance(component, str) and component in self.graph

    def __len__(self) -> int:
        return int(self.graph.number_of_nodes())

    def component(self, component: str) -> dict[str, Any] | None:
        """One component as `{"id", "type", "host", "attrs"}`, or None if unknown."""
        data = self._data(component)
        if data is None:
            return None
        return {"id": component, "type": data["type"], "host": data["host"], "attrs": data["attrs"]}

    def type_of(self, component: str) -> str | None:
        """The component's type, or None if unknown."""
        data = self._data(component)
        return None if data is None else data["type"]

    def attrs(self, component: str) -> dict[str, Any]:
        """The component's attrs ({} when unknown) — read-only by convention."""
        data = self._data(component)
        return {} if data is None else data["attrs"]

    def host_of(self, component: str) -> str | None:
        """The host a component lives in (a host is its own host); None for fabric."""
        data = self._data(component)
        if data is None:
            return None
        return component if data["type"] == "host" else data["host"]

    def neighbours(self, component: str, of_type: str | None = None) -> list[str]:
        """Components one link away, in insertion order ([] when unknown); with `of_type`,
        only those of that type (a NIC's switch, a GPU's PCIe switch)."""
        if component not in self.graph:
            return []
        if of_type is None:
            return list(self.graph.adj[component])
        return [n for n in self.graph.adj[component] if self.type_of(n) == of_type]

    def cable_of(self, nic: str) -> str:
        """The link from a NIC to its switch, where its cable and optics are (the part to
        swap for a cable fault); the NIC itself when the graph has no switch for it."""
        switches = self.neighbours(nic, of_type="switch")
        return link_id(nic, switches[0]) if switches else nic

    def links_of(self, component: str) -> list[dict[str, Any]]:
        """The links touching a component, as `{"id", "a", "b", "type", "attrs"}`."""
        if component not in self.graph:
            return []
        return [self._link(component, other, d) for other, d in self.graph.adj[component].items()]

    def link(self, link: str) -> dict[str, Any] | None:
        """One link by its id (either end order accepted), or None if there is none."""
        ends = split_link_id(link)
        if ends is None:
            return None
        a, b = ends
        data = self.graph.adj[a].get(b) if a in self.graph else None
        return None if data is None else self._link(a, b, data)

    def has_link(self, a: str, b: str) -> bool:
        return a in self.graph and b in self.graph.adj[a]

    def hosts(self) -> list[str]:
        """Every host named by the graph, as a host component or as a `host` field."""
        return list(self._by_host)

    def host_components(self, host: str) -> list[str]:
        """The host itself (when it is a component) and everything inside it."""
        return list(self._by_host.get(host, ()))

    def switches_of(self, host: str) -> frozenset[str]:
        """The fabric switches the host's NICs plug into."""
        return self._nic_switches.get(host, frozenset())

    def _index_nic_switches(self) -> dict[str, frozenset[str]]:
        found: dict[str, set[str]] = {}
        for nic in self._by_type.get("nic", ()):
            host = self._nodes[nic]["host"]
            switches = set(self.neighbours(nic, of_type="switch"))
            if host is not None and switches:
                found.setdefault(host, set()).update(switches)
        return {host: frozenset(switches) for host, switches in found.items()}

    def of_type(self, kind: str) -> list[str]:
        """Every component of one type, in insertion order."""
        return list(self._by_type.get(kind, ()))

    def switches(self, tier: str | None = None) -> list[str]:
        """Fabric switches, optionally of one tier (`leaf`, `spine`, `core`)."""
        found = self._by_type.get("switch", ())
        if tier is None:
            return list(found)
        return [s for s in found if self.graph.nodes[s]["attrs"].get("tier") == tier]

    def counts(self) -> dict[str, int]:
        """Units per component type (the `units` of a per-type MTBF), plus `link` totals
        per link type under `link:<type>`."""
        out = {kind: len(ids) for kind, ids in self._by_type.items()}
        link_counts = Counter(t for _, _, t in self.graph.edges(data="type"))
        out.update({f"link:{t}": n for t, n in link_counts.items()})
        return out

    def _data(self, component: object) -> dict[str, Any] | None:
        # Ids come from request paths and event bodies: anything unhashable is unknown.
        return self._nodes.get(component) if isinstance(component, str) else None

    @staticmethod
    def _link(a: str, b: str, data: dict[str, Any]) -> dict[str, Any]:
        lo, hi = (a, b) if a <= b else (b, a)
        return {"id": f"{lo}~{hi}", "a": lo, "b": hi, "type": data["type"], "attrs": data["attrs"]}


# --------------------------------------------------------------------------- validation


def _is_tier(value: Any) -> bool:
    return isinstance(value, str) and value in SWITCH_TIERS


# Attrs the service reads, by the type it reads them as; any other attr is the operator's
# own and kept as sent. A rack's `tray` of "zz" or a link's `gpu_links` of 5 was accepted,
# and then every event naming that part failed its whole commit group (503s for others).
COMPONENT_ATTR_TYPES: dict[str, type] = {"pci": str, "serial": str, "uuid": str, "ip": str, "device": str,
                                         "netdev": str, "rack": str, "tray_host": str, "tray": int, "chip": int}
_TYPE_WORDS = {str: "a string", int: "an integer"}


def _component_attr_problems(attrs: dict[str, Any]) -> list[str]:
    """What is wrong with the attrs of a component the service reads (`COMPONENT_ATTR_TYPES`)."""
    return [f"component attrs.{name} is not {_TYPE_WORDS[kind]}" for name, kind in COMPONENT_ATTR_TYPES.items()
            if name in attrs and attrs[name] is not None and type(attrs[name]) is not kind]


def _gpu_links_readable(attrs: dict[str, Any]) -> bool:
    """A link's `gpu_links` (the GPU's NVLink ports on it), if any, is a list of integers."""
    ports = attrs.get("gpu_links")
    return ports is None or (isinstance(ports, list) and all(type(p) is int for p in ports))


# What an event's `component` may hold (service/events/models.py `Name`): a longer id, or one
# with a control character, could never be named.
_NAMEABLE = re.compile(r"[^\x00-\x1f]{1,256}")


def _validate(body: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Check the whole body, collecting every problem before failing, so one upload
    tells the operator everything that is wrong (first few of each kind named)."""
    if not isinstance(body, dict):
        raise TopologyError([f"body must be an object with components and links, got {type(body).__name__}"])
    components = body.get("components")
    links = body.get("links", [])
    if not isinstance(components, list):
        raise TopologyError(["`components` must be a list"])
    if not isinstance(links, list):
        raise TopologyError(["`links` must be a list"])

    offenders: dict[str, list[str]] = {}

    def note(problem: str, item: str) -> None:
        offenders.setdefault(problem, []).append(item)

    seen: set[str] = set()
    hosts: set[str] = set()
    hosted: list[tuple[str, str]] = []  # (component, the host it names), checked once every host is known
    for index, c in enumerate(components):
        if not isinstance(c, dict):
            note("component is not an object", f"#{index}")
            continue
        cid, kind, host, attrs = c.get("id"), c.get("type"), c.get("host"), c.get("attrs", {})
        if not isinstance(cid, str) or not cid or "~" in cid:
            note("component id missing, not a string or containing '~'", f"#{index}")
            continue
        if not _NAMEABLE.fullmatch(cid):
            note("component id longer than 256 characters or holding a control character (no event could name it)",
                 f"#{index}")
            continue
        if cid in seen:
            note("duplicate component id", cid)
        seen.add(cid)
        if not isinstance(kind, str) or kind not in COMPONENT_TYPES:
            note(f"unknown component type (known: {', '.join(sorted(COMPONENT_TYPES))})", f"{cid} ({kind!r})")
        if host is not None and not isinstance(host, str):
            note("component host is not a string", cid)
        if attrs is not None and not isinstance(attrs, dict):
            note("component attrs is not an object", cid)
            attrs = None
        elif kind == "switch" and not _is_tier((attrs or {}).get("tier")):
            note("switch without attrs.tier leaf/spine/core", cid)
        for problem in _component_attr_problems(attrs or {}):
            note(problem, cid)
        if kind == "host":
            hosts.add(cid)
            if host not in (None, cid):
                note("host component names another host", cid)
        elif isinstance(host, str):
            hosted.append((cid, host))
    for cid, host in hosted:
        if host not in hosts:
            note("component's host is not a host component", f"{cid} ({host})")

    pairs: set[tuple[str, str]] = set()
    for index, lk in enumerate(links):
        if not isinstance(lk, dict):
            note("link is not an object", f"#{index}")
            continue
        a, b, kind, attrs = lk.get("a"), lk.get("b"), lk.get("type"), lk.get("attrs", {})
        if not isinstance(a, str) or not isinstance(b, str):
            note("link ends `a` and `b` must be strings", f"#{index}")
            continue
        name = link_id(a, b)
        if a == b:
            note("link joins a component to itself", name)
        for end in (a, b):
            if end not in seen:
                note("dangling link (end is not a component)", f"{name} ({end})")
        pair = (a, b) if a <= b else (b, a)
        if pair in pairs:
            note("duplicate link", name)
        pairs.add(pair)
        if not isinstance(kind, str) or kind not in LINK_TYPES:
            note(f"unknown link type (known: {', '.join(sorted(LINK_TYPES))})", f"{name} ({kind!r})")
        if attrs is not None and not isinstance(attrs, dict):
            note("link attrs is not an object", name)
        elif not _gpu_links_readable(attrs or {}):
            note("link attrs.gpu_links is not a list of integers", name)

    if offenders:
        problems = [
            f"{problem}: {', '.join(items[:_SHOWN_PER_PROBLEM])}"
            + (f" and {len(items) - _SHOWN_PER_PROBLEM} more" if len(items) > _SHOWN_PER_PROBLEM else "")
            for problem, items in offenders.items()
        ]
        raise TopologyError(problems)
    return components, links

