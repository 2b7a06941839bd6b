"""Route of inventories: `POST /v1/inventory` (agent role; a host-bound token posts only for its hosts)."""

from fnmatch import fnmatchcase
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request
from starlette.concurrency import run_in_threadpool

from faultgraph.attribution.topology import TopologyError
from faultgraph.service.auth.dependencies import require
from faultgraph.service.auth.models import Principal
from faultgraph.service.inventory import flows
from faultgraph.service.inventory.models import InventoryIn

router = APIRouter(prefix="/v1/inventory", tags=["inventory"])


@router.post("", dependencies=[])
async def post_inventory(request: Request, inventory: InventoryIn,
                         principal: Annotated[Principal, Depends(require("agent"))]) -> dict:
    """Store a host's tool outputs; a new topology version is stored only when they change
    the graph (`changed`, `changes` say what), else the current version is answered."""
    if principal.host_pattern and not fnmatchcase(inventory.host, principal.host_pattern):
        raise HTTPException(403, f"this token may post only for hosts matching {principal.host_pattern!r}")
    state = request.app.state
    try:
        return await run_in_threadpool(flows.ingest, state.engine, state.cluster, inventory)
    except TopologyError as exc:
        raise HTTPException(422, f"the inventory would make an invalid graph: {exc}") from None
