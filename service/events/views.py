"""Routes of the event timeline: `POST /v1/events`, `GET /v1/events`."""

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from faultgraph.service.auth.dependencies import require
from faultgraph.service.auth.models import Principal
from faultgraph.service.auth.service import reject_foreign_hosts
from faultgraph.service.deps import ClusterDep, EngineDep, Ingest, IngestDep
from faultgraph.service.events import service
from faultgraph.service.events.models import EventList
from faultgraph.service.http import parse_time, read_body, request_body, split_list
from faultgraph.service.metrics import Metrics
from faultgraph.service.writer import GroupWriter, WriterBusy

router = APIRouter(prefix="/v1", tags=["events"])

INGEST_BODY = request_body(EventList.json_schema(ref_template="#/components/schemas/{model}"), other="application/x-ndjson")


# Bodies up to this size are validated on the event loop: a storm's small posts would pay
# more for the hop to a worker thread than for validation itself (Rust, from the raw bytes).
INLINE_BODY_BYTES = 64 * 1024


def _decode(body: bytes, content_type: str, max_events: int, principal: Principal | None) -> service.Decoded:
    decoded = service.decode(body, content_type=content_type, max_events=max_events)
    if principal is not None:
        reject_foreign_hosts(decoded, principal=principal)
    return decoded


def convert_group(enrich: service.Enricher, metrics: Metrics, group: list[service.Pending]):
    """The writer's conversion of a group of requests' events (its thread, once per commit)."""
    rows = service.rows_of_group(group, enrich=enrich)
    metrics.observe_rows(rows)
    return rows


async def store_events(ingest: Ingest, principal: Principal | None, body: bytes, content_type: str) -> dict:
    """Validate, store durably, and count: the shared tail of every ingest route.

    A host-bound agent token (`principal`, admitted by the auth middleware) has its events
    for other hosts rejected one by one."""
    max_events = ingest.settings.max_batch_events
    try:
        if len(body) <= INLINE_BODY_BYTES:
            decoded = _decode(body, content_type, max_events, principal)
        else:
            decoded = await run_in_threadpool(_decode, body, content_type, max_events, principal)
    except service.BodyError as exc:
        raise HTTPException(exc.status, str(exc)) from None
    accepted = 0
    if decoded.valid:
        beats = [event for event in decoded.valid if service.is_beat(event)]
        rows = [event for event in decoded.valid if not service.is_beat(event)] if beats else decoded.valid
        try:
            future = ingest.writer.submit_async(service.Pending(rows, datetime.now(UTC), beats))
        except WriterBusy:
            raise HTTPException(503, "ingest queue is full; retry later", headers={"Retry-After": "1"}) from None
        try:
            accepted = await future + len(beats)  # a beat is kept as state
        except Exception:
            raise HTTPException(503, "the store could not commit this batch; retry", headers={"Retry-After": "5"}) from None
        if beats:
            ingest.liveness.beat([beat["host"] for beat in beats], datetime.now(UTC))
    ingest.metrics.observe_batch(len(decoded.valid), decoded.rejected, body, len(decoded.valid) - accepted)
    return {
        "accepted": accepted,
        "duplicates": len(decoded.valid) - accepted,
        "rejected": decoded.rejected,
    }


def store_internal(writer: GroupWriter, generated: list[dict]) -> None:
    """Store events the service itself generates (lost hosts), blocking until durable."""
    writer.submit(service.Pending(service.validate_all(generated), datetime.now(UTC))).result(timeout=60)


@router.post("/events", openapi_extra=INGEST_BODY, dependencies=[Depends(require("agent"))])
async def post_events(request: Request, ingest: IngestDep) -> JSONResponse:
    """Store a batch: a JSON array, `{"events": [...]}`, or NDJSON. Valid events are kept even
    when others are rejected; a batch with nothing valid answers 422 with the reasons."""
    body = await read_body(request, ingest.settings.max_body_bytes)
    principal = getattr(request.state, "principal", None)
    result = await store_events(ingest, principal, body, request.headers.get("content-type", ""))
    status = 422 if result["rejected"] and not result["accepted"] and not result["duplicates"] else 200
    return JSONResponse(result, status_code=status)


@router.get("/events", dependencies=[Depends(require("reader"))])
def get_events(
    engine: EngineDep,
    cluster: ClusterDep,
    since: str | None = None,
    until: str | None = None,
    host: Annotated[list[str] | None, Query()] = None,
    kind: Annotated[list[str] | None, Query()] = None,
    component: str | None = None,
    job: str | None = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
    cursor: str | None = None,
) -> dict:
    """Events in time order, filtered, one page at a time (`next` is the following cursor).
    A component may be named as anything it answers to (`node/mlx5_2`, a link's ends in
    either order): stored events carry the canonical id the resolver gave them."""
    flt = service.EventFilter(
        since=parse_time(since, "since"),
        until=parse_time(until, "until"),
        hosts=split_list(host),
        kinds=split_list(kind),
        component=component and (cluster.resolver.canonical(component) or component),
        job=job,
    )
    try:
        with engine.connect() as conn:
            page, following = service.get_all(conn, flt=flt, limit=limit, cursor=cursor)
    except ValueError as exc:
        raise HTTPException(400, f"cursor: {exc}") from None
    return {"events": page, "next": following}
