"""An inventory post → the host's part of the graph rebuilt → a new topology version only
when something changed.

The host's components (and every link touching them) are replaced by what its files
describe now (`faultgraph.ingest.discover`); links from its NICs to fabric switches are
kept unless the post carries an `ibnetdiscover.txt`, whose cables for this host's NICs
then replace them. Everything else of the current graph stays as it was.
"""

from datetime import UTC, datetime
from typing import Any

import orjson
import sqlalchemy as sa

from faultgraph.ingest.discover import build
from faultgraph.ingest.discover import fabric as ib
from faultgraph.service.cluster import Cluster
from faultgraph.service.inventory import service
from faultgraph.service.inventory.models import InventoryIn
from faultgraph.service.topology import service as topology_service


def host_graph(inventory: InventoryIn) -> tuple[build.Graph, list[str]]:
    """The host's components and links from its files, and the problems reading them."""
    graph, problems = build.Graph(), []
    host = build.HostInputs(inventory.host)
    for what, names in build.HOST_FILES.items():
        name = next((n for n in names if n in inventory.files), None)
        if name is None:
            continue
        try:
            host.parsed[what] = build.PARSERS[what](inventory.files[name])
        except ValueError as exc:
            problems.append(f"unreadable {name}: {exc}")
    by_guid: dict[str, str] = {}
    by_name: dict[tuple[str, str], str] = {}
    racks: dict = {}
    build.add_host(graph, host, by_guid, by_name, racks)
    dump = inventory.files.get(build.FABRIC_FILE.name)
    if dump is not None:
        try:
            fabric = ib.parse_ibnetdiscover(dump)
        except ValueError as exc:
            problems.append(f"unreadable {build.FABRIC_FILE.name}: {exc}")
        else:
            cabled = build.Graph()
            build.add_fabric(cabled, fabric, by_guid, dict(by_name), [])
            for key, link in cabled.links.items():  # this host's cables only
                nic = next((end for end in key if cabled.components.get(end, {}).get("host") == inventory.host), None)
                if nic is None:
                    continue
                switch = key[1] if nic == key[0] else key[0]
                graph.components.setdefault(nic, cabled.components[nic])
                graph.components.setdefault(switch, cabled.components[switch])
                graph.links[key] = link
    return graph, problems


def merge(current: dict[str, list[dict]], host: str, part: build.Graph, *, fabric_given: bool) -> dict[str, list[dict]]:
    """The current graph with `host`'s components and links replaced by `part`."""
    mine = {c["id"] for c in current.get("components", []) if c.get("host") == host or c["id"] == host}
    components = [c for c in current.get("components", []) if c["id"] not in mine]
    known = {c["id"] for c in components}
    components += [c for cid, c in part.components.items() if cid not in known]
    new_ids = set(part.components)
    links = []
    for link in current.get("links", []):
        touches = link["a"] in mine or link["b"] in mine
        keep_cable = (not fabric_given and link.get("type") in ("ib", "eth")
                      and {link["a"], link["b"]} & new_ids and not {link["a"], link["b"]} <= mine)
        if not touches or keep_cable:
            links.append(link)
    present = {(min(link["a"], link["b"]), max(link["a"], link["b"])) for link in links}
    links += [link for key, link in part.links.items() if key not in present]
    return {"components": components, "links": links}


def ingest(engine: sa.Engine, cluster: Cluster, inventory: InventoryIn) -> dict[str, Any]:
    """Store the post; store a new topology version when the host's part changed."""
    now = datetime.now(UTC)
    part, problems = host_graph(inventory)
    with cluster.building():
        with engine.begin() as conn:
            service.save(conn, host=inventory.host, files=inventory.files, received=now, collected=inventory.collected)
            row = topology_service.get(conn)
            current = orjson.loads(topology_service.graph_json(row)) if row is not None else {"components": [], "links": []}
            proposed = merge(current, inventory.host, part, fabric_given=build.FABRIC_FILE.name in inventory.files)
            changes = service.diff(current, proposed)
            if service.is_empty(changes):
                return {"host": inventory.host, "version": row.version if row else None, "changed": False, "problems": problems}
            topology, graph_json = topology_service.decode(orjson.dumps(proposed))
            stored = topology_service.create(conn, topology=topology, graph_json=graph_json)
            service.record_changes(conn, version=stored["version"], source=f"inventory:{inventory.host}", changes=changes)
        cluster.use_topology(topology, stored["version"])
    return {"host": inventory.host, "version": stored["version"], "changed": True, "changes": changes, "problems": problems}
