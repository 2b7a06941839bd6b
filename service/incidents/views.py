"""Routes for incidents: list, one, timeline, on-call's PATCH, and `POST /v1/analyze`."""

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query
from starlette.concurrency import run_in_threadpool

from faultgraph.ingest.causes import CATEGORIES
from faultgraph.service.auth.dependencies import require
from faultgraph.service.cluster import Cluster
from faultgraph.service.deps import AuditDep, ClusterDep, EngineDep, RunnerDep
from faultgraph.service.http import parse_time
from faultgraph.service.incidents import service
from faultgraph.service.incidents.models import STATUSES, TYPES, IncidentPatch

router = APIRouter(prefix="/v1", tags=["incidents"])


@router.get("/incidents", dependencies=[Depends(require("reader"))])
def list_incidents(
    engine: EngineDep,
    since: str | None = None,
    until: str | None = None,
    status: str | None = None,
    category: str | None = None,
    job: str | None = None,
    type: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: str | None = None,
) -> dict:
    """Incidents, newest first; `since`/`until` bound the interruption's start; `type` is
    one or more of interruption, degradation, fault (comma-separated)."""
    if status and status not in STATUSES:
        raise HTTPException(400, f"status: expected one of {', '.join(STATUSES)}")
    if category and category not in CATEGORIES:
        raise HTTPException(400, f"category: expected one of {', '.join(CATEGORIES)}")
    if type and not set(type.split(",")) <= set(TYPES):
        raise HTTPException(400, f"type: expected one or more of {', '.join(TYPES)}, comma-separated")
    try:
        with engine.connect() as conn:
            page, following = service.get_all(
                conn, since=parse_time(since, "since"), until=parse_time(until, "until"),
                status=status, category=category, job=job, type=type, limit=limit, cursor=cursor,
            )
    except ValueError as exc:
        raise HTTPException(400, f"cursor: {exc}") from None
    return {"incidents": page, "next": following}


@router.get("/incidents/{incident_id}", dependencies=[Depends(require("reader"))])
def get_incident(engine: EngineDep, incident_id: str) -> dict:
    with engine.connect() as conn:
        incident = service.get(conn, incident_id=incident_id)
    if incident is None:
        raise HTTPException(404, f"no incident {incident_id!r}")
    return incident


@router.get("/incidents/{incident_id}/timeline", dependencies=[Depends(require("reader"))])
def get_timeline(engine: EngineDep, incident_id: str, limit: Annotated[int, Query(ge=1, le=100_000)] = 50_000) -> dict:
    """The incident's member and evidence events in time order."""
    with engine.connect() as conn:
        if service.get(conn, incident_id=incident_id) is None:
            raise HTTPException(404, f"no incident {incident_id!r}")
        return {"incident": incident_id, "events": service.timeline(conn, incident_id=incident_id, limit=limit)}


@router.patch("/incidents/{incident_id}", dependencies=[Depends(require("admin"))])
def patch_incident(engine: EngineDep, cluster: ClusterDep, trail: AuditDep, incident_id: str,
                   patch: IncidentPatch) -> dict:
    """On-call confirms or overrides the root cause, sets the status, or adds a note."""
    if patch.root_cause is not None and patch.root_cause.component:
        patch.root_cause.component = _known_component(cluster, patch.root_cause.component)
    try:
        with engine.begin() as conn:
            incident = service.update(conn, incident_id=incident_id, patch=patch, now=datetime.now(UTC))
    except ValueError as exc:  # a confirmation that contradicts itself
        raise HTTPException(422, str(exc)) from None
    if incident is None:
        raise HTTPException(404, f"no incident {incident_id!r}")
    trail.record(action="incident.patch", target=incident_id, detail=patch.model_dump(exclude_unset=True, mode="json"))
    return incident


def _known_component(cluster: Cluster, component: str) -> str:
    """The confirmed component's canonical id (an alias such as `node0042/mlx5_2` accepted).
    With a topology uploaded a name it does not hold is refused: a typo confirmed would
    mark a part that does not exist faulty and leave the real one healthy."""
    graph = cluster.graph
    if graph.topology is None:
        return component
    canonical = graph.resolver.canonical(component)
    if canonical is None:
        raise HTTPException(422, f"root_cause.component: {component!r} is not a component or link of topology "
                                 f"version {graph.version}")
    return canonical


@router.post("/analyze", dependencies=[Depends(require("admin"))])
async def analyze(runner: RunnerDep) -> dict:
    """Process everything received so far; answers when the pass is done. Any replica may
    run it: passes take turns on the database's engine lock, whichever replica leads."""
    return await run_in_threadpool(runner.run_once)
