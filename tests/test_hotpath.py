"""`HotPath` answers admitted ingest posts with the endpoint itself and leaves every other
request to FastAPI, whose answers (403 wording, OpenAPI) therefore stay what they were."""

from types import SimpleNamespace

import pytest
from fastapi import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.testclient import TestClient
from starlette.types import Receive, Scope, Send

from faultgraph.service.app import create_app
from faultgraph.service.auth.middleware import Authenticate
from faultgraph.service.auth.models import Principal
from faultgraph.service.config import Settings
from faultgraph.service.hotpath import HotPath

INGEST = object()


class Harness:
    """What the service puts around HotPath: the caller Authenticate admitted (a header names
    its role here) and `app.state.ingest`; below it, an app standing for FastAPI."""

    def __init__(self, endpoint) -> None:
        self.state = SimpleNamespace(ingest=INGEST)
        self.inner_calls = 0
        self.hot = HotPath(self.inner, {"/v1/events": endpoint}, role="agent")

    async def inner(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.inner_calls += 1
        await JSONResponse({"answered_by": "fastapi"}, status_code=299)(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            role = dict(scope["headers"]).get(b"x-role")
            scope["app"] = self
            scope["state"] = {"principal": Principal(token_id="t", name="t", role=role.decode())} if role else {}
        await self.hot(scope, receive, send)


async def echo(request: Request, ingest) -> Response:
    return JSONResponse({"answered_by": "endpoint", "ingest_given": ingest is INGEST, "body": (await request.body()).decode()})


async def too_big(request: Request, ingest) -> Response:
    raise HTTPException(413, "body of 9 bytes exceeds the limit of 8 bytes", headers={"X-Limit": "8"})


def test_an_admitted_post_is_answered_by_the_endpoint_with_the_apps_ingest() -> None:
    harness = Harness(echo)
    answer = TestClient(harness).post("/v1/events", content=b"[1]", headers={"x-role": "agent"})
    assert answer.json() == {"answered_by": "endpoint", "ingest_given": True, "body": "[1]"}
    assert harness.inner_calls == 0


@pytest.mark.parametrize(("method", "path", "role"), [
    ("GET", "/v1/events", "agent"),   # only posts
    ("POST", "/v1/jobs", "agent"),    # only the listed paths
    ("POST", "/v1/events", "reader"),  # a role that may not ingest: FastAPI's `require` words the 403
    ("POST", "/v1/events", None),     # no caller: FastAPI's `require` fails closed
])
def test_anything_else_goes_on_to_fastapi(method: str, path: str, role: str | None) -> None:
    harness = Harness(echo)
    answer = TestClient(harness).request(method, path, headers={"x-role": role} if role else {})
    assert (answer.status_code, answer.json()) == (299, {"answered_by": "fastapi"})
    assert harness.inner_calls == 1


def test_an_http_exception_is_answered_as_fastapi_answers_it() -> None:
    answer = TestClient(Harness(too_big)).post("/v1/events", content=b"123456789", headers={"x-role": "agent"})
    assert answer.status_code == 413
    assert answer.json() == {"detail": "body of 9 bytes exceeds the limit of 8 bytes"}
    assert answer.headers["x-limit"] == "8"


def test_the_service_routes_keep_their_fastapi_answers_around_the_hot_path(db_url: str) -> None:
    """Through the real app: posts are stored via HotPath, and the routes are still in the
    API description with their request bodies."""
    app = create_app(Settings(db_url=db_url), open_without_tokens=True)
    with TestClient(app) as client:
        event = {"time": "2026-01-01T00:00:00Z", "host": "node001", "kind": "gpu_xid", "attrs": {"xid": 79, "bdf": "0000:17:00.0"}}
        assert client.post("/v1/events", json=[event]).json() == {"accepted": 1, "duplicates": 0, "rejected": []}
        assert client.post("/v1/events", json=[{"host": "node001"}]).status_code == 422
        assert client.post("/v1/logs", json={"host": "node001", "source": "kern", "lines": []}).status_code == 200
        assert client.get("/v1/events").json()["events"][0]["host"] == "node001"
    # Outermost first: HotPath runs right inside Authenticate, so it sees the admitted caller.
    assert [layer.cls for layer in app.user_middleware][-2:] == [Authenticate, HotPath]
    paths = app.openapi()["paths"]
    assert "requestBody" in paths["/v1/events"]["post"] and "requestBody" in paths["/v1/logs"]["post"]
