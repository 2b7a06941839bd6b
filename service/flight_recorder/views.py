"""Route: `POST /v1/flight-recorder`."""

from datetime import UTC, datetime

from fastapi import APIRouter, Depends, HTTPException
from starlette.concurrency import run_in_threadpool

from faultgraph.attribution.flight_recorder import DumpError
from faultgraph.service.auth.dependencies import require
from faultgraph.service.deps import ClusterDep, WriterDep
from faultgraph.service.events import views as events_views
from faultgraph.service.flight_recorder import flows
from faultgraph.service.flight_recorder.models import FlightRecorderPost

router = APIRouter(prefix="/v1", tags=["flight-recorder"])


@router.post("/flight-recorder", dependencies=[Depends(require("agent"))])
async def post_flight_recorder(body: FlightRecorderPost, cluster: ClusterDep, writer: WriterDep) -> dict:
    """Analyse one job's per-rank dumps; store the out-of-step ranks as evidence for the engine."""
    placement = cluster.placement(body.job)
    try:
        found, generated = flows.events(body.job, body.dumps, placement, host=body.host, received=datetime.now(UTC))
    except DumpError as exc:
        raise HTTPException(422, str(exc)) from None
    if found and not generated:
        raise HTTPException(422, f"job {body.job} is not registered and no host was given for its ranks")
    if generated:
        await run_in_threadpool(events_views.store_internal, writer, generated)
    return {"mismatches": [m.as_dict() for m in found], "events": len(generated)}
