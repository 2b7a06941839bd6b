"""Routes take what they need from the app through `service/deps.py`, so one piece can be
swapped for a test, and none of those dependencies shows up as an API parameter."""

from types import SimpleNamespace

from conftest import wait_until
from fastapi.testclient import TestClient

from faultgraph.service import deps
from faultgraph.service.app import create_app
from faultgraph.service.config import Settings


def test_healthz_reads_the_lease_and_writer_through_their_dependencies(db_url: str) -> None:
    app = create_app(Settings(db_url=db_url), open_without_tokens=True)
    with TestClient(app) as client:
        # PostgreSQL's lease is taken by its own thread just after start-up (DuckDB's at once):
        # on a loaded machine the first answer may come before it
        wait_until(lambda: client.get("/healthz").json()["leader"], within=30, what="the lease")
        assert client.get("/healthz").json() == {"status": "ok", "writer_queue": 0, "leader": True,
                                                 "engine_failures": 0}
        app.dependency_overrides[deps.lease] = lambda: SimpleNamespace(held=False)
        app.dependency_overrides[deps.writer] = lambda: SimpleNamespace(depth=7)
        app.dependency_overrides[deps.runner] = lambda: SimpleNamespace(failures=3)
        assert client.get("/healthz").json() == {"status": "degraded", "writer_queue": 7, "leader": False,
                                                 "engine_failures": 3}


def test_no_dependency_adds_a_parameter_to_the_api() -> None:
    schema = create_app().openapi()
    names = {parameter["name"] for path in schema["paths"].values() for operation in path.values()
             for parameter in operation.get("parameters", [])}
    providers = {"request", "ingest",  # (`state` is a real query parameter of jobs and components)
                 "engine", "cluster", "writer", "settings", "metrics", "limiter",
                 "liveness", "auth", "authenticator", "lease", "runner", "trail", "audit_trail"}
    assert names, "the schema lists the routes' own parameters"
    assert not names & providers
