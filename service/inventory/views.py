"""Route of inventories: `POST /v1/inventory` (agent role; a host-bound token posts only for its hosts)."""

from fnmatch import fnmatchcase
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from faultgraph.attribution.topology import TopologyError
from faultgraph.service.auth.dependencies import require
from faultgraph.service.auth.models import Principal
from faultgraph.service.deps import ClusterDep, EngineDep, SettingsDep
from faultgraph.service.http import read_body
from faultgraph.service.inventory import flows
from faultgraph.service.inventory.models import InventoryIn

router = APIRouter(prefix="/v1/inventory", tags=["inventory"])

INVENTORY_BODY = {"requestBody": {"required": True, "content": {"application/json": {"schema": InventoryIn.model_json_schema()}}}}


@router.post("", openapi_extra=INVENTORY_BODY)
async def post_inventory(request: Request, principal: Annotated[Principal, Depends(require("agent"))],
                         engine: EngineDep, cluster: ClusterDep, settings: SettingsDep) -> dict:
    """Store a host's tool outputs; a new topology version is stored only when they change
    the graph (`changed`, `changes` say what), else the current version is answered.

    The body may hold a whole fabric's `ibnetdiscover` dump, so its limit is the topology's
    (`FAULTGRAPH_MAX_TOPOLOGY_BYTES`), checked before it is read.
    """
    body = await read_body(request, settings.max_topology_bytes)
    try:
        inventory = InventoryIn.model_validate_json(body)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()[:10])
        raise HTTPException(422, f"not an inventory: {problems}") from None
    if principal.host_pattern and not fnmatchcase(inventory.host, principal.host_pattern):
        raise HTTPException(403, f"this token may post only for hosts matching {principal.host_pattern!r}")
    try:
        return await run_in_threadpool(flows.ingest, engine, cluster, inventory)
    except TopologyError as exc:
        raise HTTPException(422, f"the inventory would make an invalid graph: {exc}") from None
