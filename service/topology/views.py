"""Routes of the cluster graph: `PUT/GET /v1/topology`, `GET /v1/topology/components/{id}`.

Roles (SPEC §9): PUT needs `admin`; the GETs need `reader`.
"""

from typing import Annotated

import sqlalchemy as sa
from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from faultgraph.attribution import racks
from faultgraph.attribution.topology import Topology, TopologyError
from faultgraph.service.auth.dependencies import require
from faultgraph.service.cluster import Cluster
from faultgraph.service.deps import AuditDep, ClusterDep, EngineDep, SettingsDep
from faultgraph.service.events import service as events_service
from faultgraph.service.events.models import events
from faultgraph.service.http import read_body
from faultgraph.service.inventory import service as inventory_service
from faultgraph.service.topology import service

router = APIRouter(prefix="/v1/topology", tags=["topology"])

TOPOLOGY_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["components"],
                    "properties": {
                        "components": {"type": "array", "items": {"type": "object"}},
                        "links": {"type": "array", "items": {"type": "object"}},
                    },
                },
            }
        },
    }
}


def _replace(cluster: Cluster, engine: sa.Engine, body: bytes) -> dict:
    """Validate, store as the next version, and make it current (one upload at a time)."""
    with cluster.building():
        topology, graph_json = service.decode(body)
        with engine.begin() as conn:
            stored = service.create(conn, topology=topology, graph_json=graph_json)
        cluster.use_topology(topology, stored["version"])
    return stored


@router.put("", openapi_extra=TOPOLOGY_BODY, dependencies=[Depends(require("admin"))])
async def put_topology(request: Request, engine: EngineDep, cluster: ClusterDep, settings: SettingsDep,
                       trail: AuditDep) -> JSONResponse:
    """Replace the cluster graph; the answer names the new version and its counts. An
    invalid graph is refused (422) with every problem named (first few offenders each)."""
    body = await read_body(request, settings.max_topology_bytes)
    try:
        stored = await run_in_threadpool(_replace, cluster, engine, body)
    except TopologyError as exc:
        return JSONResponse({"detail": str(exc), "problems": exc.problems}, status_code=422)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    await run_in_threadpool(trail.record, action="topology.replace", target=f"version {stored['version']}",
                            detail={name: value for name, value in stored.items() if name != "version"})
    return JSONResponse(stored)


@router.get("", dependencies=[Depends(require("reader"))])
def get_topology(engine: EngineDep, version: Annotated[int | None, Query(ge=1)] = None) -> Response:
    """The current graph (or `?version=`), with `version` and `created` beside
    `components` and `links`; a body that can be PUT back as is."""
    with engine.connect() as conn:
        row = service.get(conn, version=version)
    if row is None:
        raise HTTPException(404, "no topology uploaded yet" if version is None else f"no topology version {version}")
    return Response(service.body_json(row), media_type="application/json")


@router.get("/versions", dependencies=[Depends(require("reader"))])
def get_versions(engine: EngineDep) -> dict:
    """Every stored version's counts, newest first (bodies stay in the store); a version an
    agent's inventory made says what it changed (`changes`)."""
    with engine.connect() as conn:
        versions = service.get_all(conn)
        changes = inventory_service.changes_by_version(conn)
    return {"versions": [{**v, **({"changes": changes[v["version"]]} if v["version"] in changes else {})} for v in versions]}


@router.get("/racks", dependencies=[Depends(require("reader"))])
def get_racks(cluster: ClusterDep) -> dict:
    """The current graph's racks (GB200 NVL72) with their compute trays, switch trays and
    chips, in tray order: what the UI's rack lanes need without the whole graph."""
    graph = cluster.graph
    if graph.topology is None:
        raise HTTPException(404, "no topology uploaded yet")
    return {"topology_version": graph.version, "racks": racks.layout(graph.topology)}


@router.get("/components/{component:path}", dependencies=[Depends(require("reader"))])
def get_component(
    engine: EngineDep,
    cluster: ClusterDep,
    component: str,
    events_limit: Annotated[int, Query(alias="events", ge=0, le=1000)] = 50,
) -> dict:
    """One component or link of the current graph (aliases such as `node0042/mlx5_2` or a
    PCI address accepted): its neighbours, links, other names, and its latest events."""
    graph = cluster.graph
    if graph.topology is None:
        raise HTTPException(404, f"unknown component {component!r}: no topology uploaded yet")
    canonical = graph.resolver.canonical(component)
    if canonical is None:
        raise HTTPException(404, f"unknown component {component!r} in topology version {graph.version}")
    link = graph.topology.link(canonical)
    if link is not None:
        found = {**link, "kind": "link", "neighbours": [link["a"], link["b"]], "links": [], "aliases": [], "parts": []}
    else:
        component_data = graph.topology.component(canonical)
        assert component_data is not None  # canonical names a component of this topology
        found = {
            **component_data,
            "kind": "component",
            "neighbours": graph.topology.neighbours(canonical),
            "links": graph.topology.links_of(canonical),
            "aliases": graph.resolver.aliases(canonical),
            "parts": _parts(graph.topology, canonical),
        }
    found["topology_version"] = graph.version
    found["events"] = _latest_events(engine, canonical, events_limit)
    return found


def _parts(topology: Topology, component: str) -> list[str]:
    """What the component holds (a host's GPUs, NICs, switches; a rack's trays, switch chips
    and PDUs): containment is no link, so its neighbours do not show it."""
    kind = topology.type_of(component)
    if kind == "host":
        return sorted(part for part in topology.host_components(component) if part != component)
    if kind == "rack":
        return sorted(part for part_type in ("host", "nvswitch", "power") for part in topology.of_type(part_type)
                      if racks.rack_of(topology, part) == component)
    return []


def _latest_events(engine: sa.Engine, component: str, limit: int) -> list[dict]:
    """The component's (and its parts') most recent events, newest first."""
    if limit == 0:
        return []
    flt = events_service.EventFilter(component=component)
    query = (
        sa.select(events)
        .where(*events_service.where_clauses(flt))
        .order_by(events.c.time.desc(), events.c.id.desc())
        .limit(limit)
    )
    with engine.connect() as conn:
        return [events_service.row_to_event(row) for row in conn.execute(query)]
