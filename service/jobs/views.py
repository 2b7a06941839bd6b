"""Routes of jobs: `POST /v1/jobs`, `GET /v1/jobs`, `GET /v1/jobs/{id}`.

Roles (SPEC §9): POST needs `agent` (or `admin`); the GETs need `reader`.
"""

from collections import Counter
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query
from fastapi.responses import JSONResponse
from sqlalchemy.engine import Engine
from starlette.concurrency import run_in_threadpool

from faultgraph.service.auth.dependencies import require
from faultgraph.service.cluster import Cluster
from faultgraph.service.deps import ClusterDep, EngineDep
from faultgraph.service.jobs import service
from faultgraph.service.jobs.models import JobIn, JobState

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

# Unknown hosts named in a registration's warning (the rest are counted).
_SHOWN = 5


def _register(engine: Engine, cluster: Cluster, job: JobIn) -> tuple[dict, bool]:
    row = service.to_row(job, registered=datetime.now(UTC), topology_version=cluster.version)
    try:
        placement = service.placement_of(row)  # from the row as stored: it must reload
    except ValueError as exc:
        raise HTTPException(422, f"placement: {exc}") from None
    with engine.begin() as conn:
        created = service.create(conn, row=row)
        stored = service.get(conn, job_id=job.id)
    assert stored is not None  # created just above, in the same transaction
    cluster.add_job(cluster.job_from_row(row))
    answer = service.detail(stored, placement)
    topology = cluster.topology
    if topology is not None:
        unknown = [h for h in placement.hosts() if topology.type_of(h) != "host"]
        if unknown:
            more = f" and {len(unknown) - _SHOWN} more" if len(unknown) > _SHOWN else ""
            answer["warnings"] = [
                f"hosts not in topology version {cluster.version}: {', '.join(unknown[:_SHOWN])}{more}"
            ]
    return answer, created


@router.post("", status_code=201, dependencies=[Depends(require("agent"))])
async def post_job(engine: EngineDep, cluster: ClusterDep, job: JobIn) -> JSONResponse:
    """Register a job and where its ranks run (201; 200 when it replaces a registration
    of the same id). A placement that does not add up is refused with 422 naming why."""
    answer, created = await run_in_threadpool(_register, engine, cluster, job)
    return JSONResponse(answer, status_code=201 if created else 200)


@router.get("", dependencies=[Depends(require("reader"))])
def get_jobs(
    engine: EngineDep,
    state: JobState | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: str | None = None,
) -> dict:
    """Jobs, newest start first, one page at a time (`next` is the following cursor)."""
    try:
        with engine.connect() as conn:
            page, following = service.get_all(conn, limit=limit, cursor=cursor, state=state)
    except ValueError as exc:
        raise HTTPException(400, f"cursor: {exc}") from None
    return {"jobs": [service.summary(row) for row in page], "next": following}


@router.get("/{job_id:path}", dependencies=[Depends(require("reader"))])
def get_job(engine: EngineDep, cluster: ClusterDep, job_id: str, footprint: bool = False) -> dict:
    """One job: state, hosts, world size, parallel layout and communicator groups; with
    `?footprint=true` also how many components and links its traffic can cross."""
    with engine.connect() as conn:
        row = service.get(conn, job_id=job_id)
    placement = cluster.placement(job_id)
    if row is None or placement is None:
        raise HTTPException(404, f"unknown job {job_id!r}")
    answer = service.detail(row, placement)
    if footprint:
        ids = cluster.footprint(job_id)
        if ids is None:
            raise HTTPException(409, "a footprint needs a topology: none is uploaded yet")
        topology = cluster.topology
        assert topology is not None  # a footprint was found, so a topology is loaded
        by_type = Counter("link" if "~" in i else topology.type_of(i) for i in ids)
        answer["footprint"] = {"size": len(ids), "topology_version": cluster.version, "by_type": dict(by_type)}
    return answer
