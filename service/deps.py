"""What routes take from the running app, as typed FastAPI dependencies.

`create_app` puts the store engine, the cluster, the writer and the background loops on
`app.state`; a route names what it needs by type (`engine: EngineDep`) instead of reaching
into `request.app.state`, so its signature says what it touches and a test can override
one piece (`app.dependency_overrides[deps.engine] = ...`). Each provider takes only the
`Request`, so none adds a parameter to the OpenAPI schema; each is `async` so FastAPI calls
it on the event loop rather than hopping to a worker thread for an attribute read.
"""

from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.engine import Engine
from starlette.datastructures import State

from faultgraph.service.auth.limits import IngestLimiter
from faultgraph.service.auth.service import Authenticator
from faultgraph.service.cluster import Cluster
from faultgraph.service.config import Settings
from faultgraph.service.incidents.flows import IncidentRunner
from faultgraph.service.leader import Lease
from faultgraph.service.liveness import Liveness
from faultgraph.service.metrics import Metrics
from faultgraph.service.writer import GroupWriter


async def app_state(request: Request) -> State:
    """The whole state, for helpers that still take it (`events.views.store_internal`)."""
    return request.app.state


async def engine(request: Request) -> Engine:
    return request.app.state.engine


async def cluster(request: Request) -> Cluster:
    return request.app.state.cluster


async def writer(request: Request) -> GroupWriter:
    return request.app.state.writer


async def settings(request: Request) -> Settings:
    return request.app.state.settings


async def metrics(request: Request) -> Metrics:
    return request.app.state.metrics


async def limiter(request: Request) -> IngestLimiter:
    return request.app.state.limiter


async def liveness(request: Request) -> Liveness:
    return request.app.state.liveness


async def authenticator(request: Request) -> Authenticator:
    return request.app.state.auth


async def lease(request: Request) -> Lease:
    return request.app.state.lease


async def runner(request: Request) -> IncidentRunner:
    return request.app.state.runner


StateDep = Annotated[State, Depends(app_state)]
EngineDep = Annotated[Engine, Depends(engine)]
ClusterDep = Annotated[Cluster, Depends(cluster)]
WriterDep = Annotated[GroupWriter, Depends(writer)]
SettingsDep = Annotated[Settings, Depends(settings)]
MetricsDep = Annotated[Metrics, Depends(metrics)]
LimiterDep = Annotated[IngestLimiter, Depends(limiter)]
LivenessDep = Annotated[Liveness, Depends(liveness)]
AuthenticatorDep = Annotated[Authenticator, Depends(authenticator)]
LeaseDep = Annotated[Lease, Depends(lease)]
RunnerDep = Annotated[IncidentRunner, Depends(runner)]
