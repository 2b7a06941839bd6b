"""The storm's two routes, `POST /v1/events` and `POST /v1/logs`, answered before FastAPI's
router.

When a GPU dies under a large job, thousands of agents each post a handful of timeouts at
once, and every post is GIL-bound Python. Profiled (py-spy `--gil`, the 2,048-agent storm of
`tests/bench/storm.py`), FastAPI's own layers between our middleware and the endpoint (its
exception and exit-stack middleware, matching the path against every route, solving the
route's dependencies, wrapping the endpoint) held the interpreter about a third of the
storm, as long as the endpoint's own work. `HotPath` calls the same endpoint function
directly with what its dependencies would have supplied, so that cost is not paid.

Nothing else about the routes changes: FastAPI still declares them (OpenAPI, `/docs`), and a
request `HotPath` declines (another method, a caller missing or without the role) goes on
to FastAPI, whose `require` then words the 401 or 403 as before. An `HTTPException` becomes
the same JSON answer FastAPI's default handler gives. What is not kept: a test's
`app.dependency_overrides` of the ingest routes' dependencies do not reach these two posts.
"""

from collections.abc import Awaitable, Callable, Mapping

from fastapi import HTTPException
from fastapi.exception_handlers import http_exception_handler
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from faultgraph.service.deps import Ingest

Endpoint = Callable[[Request, Ingest], Awaitable[Response]]


class HotPath:
    """ASGI middleware, inside `Authenticate`: a POST to one of `endpoints` by a caller that
    may act as `role` is answered by the endpoint called with the app's `Ingest`."""

    def __init__(self, app: ASGIApp, endpoints: Mapping[str, Endpoint], role: str) -> None:
        self.app = app
        self.endpoints = dict(endpoints)
        self.role = role

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = self.endpoints.get(scope["path"]) if scope["type"] == "http" and scope["method"] == "POST" else None
        principal = scope.get("state", {}).get("principal") if endpoint is not None else None
        if endpoint is None or principal is None or not principal.may(self.role):
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive, send)
        try:
            response = await endpoint(request, scope["app"].state.ingest)
        except HTTPException as exc:
            response = await http_exception_handler(request, exc)
        await response(scope, receive, send)
