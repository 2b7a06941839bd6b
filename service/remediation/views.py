"""`GET /v1/remediation`: what remediation decided and did, for an incident or a host."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from faultgraph.service.auth.dependencies import require
from faultgraph.service.deps import EngineDep
from faultgraph.service.http import parse_time
from faultgraph.service.remediation import service

router = APIRouter(prefix="/v1", tags=["remediation"])


@router.get("/remediation", dependencies=[Depends(require("reader"))])
def list_actions(
    engine: EngineDep,
    incident: Annotated[str | None, Query(max_length=256)] = None,
    host: Annotated[str | None, Query(max_length=256)] = None,
    since: str | None = None,
) -> dict:
    """Drains, resumes, dry runs and capped decisions with their outcomes, oldest first."""
    with engine.connect() as conn:
        found = service.actions(conn, incident=incident, host=host, since=parse_time(since, "since"))
    return {"actions": [service.public(record) for record in found], "next": None}
