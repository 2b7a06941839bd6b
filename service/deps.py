"""What routes take from the running app, as typed FastAPI dependencies.

`create_app` puts the store engine, the cluster, the writer and the background loops on
`app.state`; a route names what it needs by type (`engine: EngineDep`) instead of reaching
into `request.app.state`, so its signature says what it touches and a test can override
one piece (`app.dependency_overrides[deps.engine] = ...`). Each provider takes only the
`Request`, so none adds a parameter to the OpenAPI schema; each is `async` so FastAPI calls
it on the event loop rather than hopping to a worker thread for an attribute read.
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy.engine import Engine

from faultgraph.service.audit import Trail
from faultgraph.service.auth.service import Authenticator
from faultgraph.service.cluster import Cluster
from faultgraph.service.config import Settings
from faultgraph.service.events.archive import Archive
from faultgraph.service.incidents.flows import IncidentRunner
from faultgraph.service.leader import Lease
from faultgraph.service.liveness import Liveness
from faultgraph.service.metrics import Metrics
from faultgraph.service.writer import GroupWriter


def _from_state(name: str) -> Callable[[Request], Awaitable[Any]]:
    """A provider of `app.state.<name>` (the alias below gives it its type)."""
    async def provide(request: Request) -> Any:
        return getattr(request.app.state, name)
    provide.__name__ = provide.__qualname__ = name
    return provide


@dataclass(frozen=True)
class Ingest:
    """What every ingest route's shared tail uses, built once at start-up: one dependency
    to solve per post instead of four (a storm's posts are thousands a second), and what
    `HotPath` hands the two storm routes without solving any."""

    settings: Settings
    writer: GroupWriter
    liveness: Liveness
    metrics: Metrics


async def audit_trail(request: Request) -> Trail:
    """The audit trail in the name of the caller the middleware admitted."""
    principal = getattr(request.state, "principal", None)
    return Trail(principal.actor if principal is not None else "anonymous", request.app.state.writer)


# The providers, by name: what `app.dependency_overrides` is keyed by.
engine = _from_state("engine")
cluster = _from_state("cluster")
writer = _from_state("writer")
settings = _from_state("settings")
liveness = _from_state("liveness")
authenticator = _from_state("auth")
lease = _from_state("lease")
runner = _from_state("runner")
archive = _from_state("archive")  # None when no archive is configured
ingest = _from_state("ingest")

EngineDep = Annotated[Engine, Depends(engine)]
ClusterDep = Annotated[Cluster, Depends(cluster)]
WriterDep = Annotated[GroupWriter, Depends(writer)]
SettingsDep = Annotated[Settings, Depends(settings)]
LivenessDep = Annotated[Liveness, Depends(liveness)]
AuthenticatorDep = Annotated[Authenticator, Depends(authenticator)]
LeaseDep = Annotated[Lease, Depends(lease)]
RunnerDep = Annotated[IncidentRunner, Depends(runner)]
IngestDep = Annotated[Ingest, Depends(ingest)]
AuditDep = Annotated[Trail, Depends(audit_trail)]
ArchiveDep = Annotated[Archive | None, Depends(archive)]
