"""`GET /v1/hosts`: last seen, last beat and clock offset per host (heartbeats are state, not
events, so this is where an operator reads them)."""

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query

from faultgraph.service.auth.dependencies import require
from faultgraph.service.deps import EngineDep, LivenessDep
from faultgraph.service.hosts import service
from faultgraph.service.hosts.models import HostList

router = APIRouter(prefix="/v1/hosts", tags=["hosts"])


@router.get("", dependencies=[Depends(require("reader"))], response_model=HostList)
def get_hosts(
    engine: EngineDep,
    liveness: LivenessDep,
    lost: Annotated[bool | None, Query(description="Only hosts silent past the heartbeat timeout (true) or not (false).")] = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
    cursor: str | None = None,
) -> dict:
    """Every host that sent a heartbeat, in name order, one page at a time."""
    try:
        with engine.connect() as conn:
            found, following = service.page(conn, now=datetime.now(UTC), timeout=liveness.timeout,
                                            limit=limit, cursor=cursor, lost=lost)
    except ValueError as exc:
        raise HTTPException(400, f"cursor: {exc}") from None
    return {"hosts": found, "next": following}
