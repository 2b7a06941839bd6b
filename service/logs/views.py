"""Route of raw log lines: `POST /v1/logs` (SPEC §8), parsed centrally by the agent's rules."""

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from faultgraph.service.auth.dependencies import require
from faultgraph.service.deps import IngestDep
from faultgraph.service.events.service import BodyError
from faultgraph.service.events.views import store_events
from faultgraph.service.http import read_body, request_body
from faultgraph.service.logs import service
from faultgraph.service.logs.models import LogsBodyAdapter

router = APIRouter(prefix="/v1", tags=["logs"])

LOGS_BODY = request_body(LogsBodyAdapter.json_schema(ref_template="#/components/schemas/{model}"), other="text/plain")


# An agent's handful of lines is parsed on the event loop (well under a millisecond): in a
# storm the hop to a worker thread and back costs more than the parse.
INLINE_BODY_BYTES = 4 * 1024


def _parse(body: bytes, content_type: str, query: dict[str, str | None], max_lines: int) -> service.ParsedLogs:
    logs = service.decode(body, content_type=content_type, query=query, max_lines=max_lines)
    return service.parse(logs, received=datetime.now(UTC))


@router.post("/logs", openapi_extra=LOGS_BODY, dependencies=[Depends(require("agent"))])
async def post_logs(request: Request, ingest: IngestDep) -> JSONResponse:
    """Parse raw lines of one host: `{"host", "source", "lines", "job"?}`, or text with
    `?host=&source=`. Lines matching no rule are counted, not stored."""
    settings = ingest.settings
    body = await read_body(request, settings.max_body_bytes)
    query = {name: request.query_params.get(name) for name in ("host", "source", "job", "batch")}
    content_type = request.headers.get("content-type", "")
    try:
        if len(body) <= INLINE_BODY_BYTES:
            parsed = _parse(body, content_type, query, settings.max_batch_events)
        else:
            parsed = await run_in_threadpool(_parse, body, content_type, query, settings.max_batch_events)
    except BodyError as exc:
        raise HTTPException(exc.status, str(exc)) from None
    body, line_of, rejected = service.encode(parsed)
    rejected += parsed.refused
    stored: dict[str, Any] = {"accepted": 0, "duplicates": 0, "rejected": []}
    if line_of:
        stored = await store_events(ingest, getattr(request.state, "principal", None), body, "application/json")
    rejected += [{**entry, "index": line_of[entry["index"]]} for entry in stored["rejected"]]
    rejected.sort(key=lambda entry: entry["index"])
    result = {
        "lines": parsed.lines,
        "parsed": len(parsed.events),
        "unmatched": parsed.unmatched,
        "accepted": stored["accepted"],
        "duplicates": stored["duplicates"],
        "rejected": rejected,
    }
    status = 422 if rejected and not stored["accepted"] and not stored["duplicates"] else 200
    return JSONResponse(result, status_code=status)
