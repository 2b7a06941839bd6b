"""Route of `POST /v1/diagnose` (SPEC §5): diagnose pasted lines, store nothing."""

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from faultgraph.attribution.resolve import Resolver
from faultgraph.service.auth.dependencies import bearer
from faultgraph.service.deps import ClusterDep, SettingsDep
from faultgraph.service.diagnose import service
from faultgraph.service.diagnose.models import DiagnoseBodyAdapter
from faultgraph.service.events.service import BodyError
from faultgraph.service.http import read_body, request_body

router = APIRouter(prefix="/v1", tags=["diagnose"])

DIAGNOSE_BODY = request_body(DiagnoseBodyAdapter.json_schema(ref_template="#/components/schemas/{model}"),
                             other="text/plain")


async def reader_or_agent(request: Request, _: Annotated[object, Depends(bearer)]) -> None:
    """Readers diagnose what they paste; agents may send what they collected. Admins may too."""
    principal = getattr(request.state, "principal", None)
    if principal is None:
        raise HTTPException(401, "a valid bearer token is required", headers={"WWW-Authenticate": "Bearer"})
    if not (principal.may("reader") or principal.may("agent")):
        raise HTTPException(403, "this token's role does not allow this request")


def _diagnose(body: bytes, content_type: str, host: str | None, max_lines: int, resolver: Resolver) -> dict:
    parsed = service.decode(body, content_type=content_type, host=host, max_lines=max_lines)
    return service.diagnose(parsed, received=datetime.now(UTC), resolver=resolver)


@router.post("/diagnose", openapi_extra=DIAGNOSE_BODY, dependencies=[Depends(reader_or_agent)])
async def post_diagnose(request: Request, settings: SettingsDep, cluster: ClusterDep) -> JSONResponse:
    """Diagnose pasted lines: `{"lines": [...], "host"?, "job"?}` or plain text with
    `?host=`. Answers ranked incidents quoting the lines that decided them; stores nothing."""
    body = await read_body(request, settings.max_body_bytes)
    try:
        answer = await run_in_threadpool(_diagnose, body, request.headers.get("content-type", ""),
                                         request.query_params.get("host"), settings.max_batch_events, cluster.resolver)
    except BodyError as exc:
        raise HTTPException(exc.status, str(exc)) from None
    return JSONResponse(answer)
