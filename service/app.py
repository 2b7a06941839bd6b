"""The application factory: `faultgraph serve`, the tests and the benchmarks all use it."""

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy.engine import Connection

from faultgraph.service import alerts, metrics, notices, store
from faultgraph.service.auth import views as auth_views
from faultgraph.service.auth.limits import IngestLimiter
from faultgraph.service.auth.middleware import INGEST_PATHS, Authenticate
from faultgraph.service.auth.service import Authenticator
from faultgraph.service.cluster import Cluster
from faultgraph.service.config import Settings
from faultgraph.service.deps import EngineDep, Ingest, LeaseDep, RunnerDep, WriterDep
from faultgraph.service.diagnose import views as diagnose_views
from faultgraph.service.events import archive as archives
from faultgraph.service.events import service as events_service
from faultgraph.service.events import views as events_views
from faultgraph.service.events.flows import Retention, prune_loop
from faultgraph.service.events.models import events
from faultgraph.service.fleet import views as fleet_views
from faultgraph.service.flight_recorder import views as flight_recorder_views
from faultgraph.service.hosts import views as hosts_views
from faultgraph.service.hotpath import HotPath
from faultgraph.service.incidents import views as incidents_views
from faultgraph.service.incidents.flows import IncidentRunner
from faultgraph.service.inventory import views as inventory_views
from faultgraph.service.jobs import views as jobs_views
from faultgraph.service.leader import Lease
from faultgraph.service.liveness import Liveness, LivenessWatcher, stored_beats
from faultgraph.service.logs import views as logs_views
from faultgraph.service.remediation import flows as remediation
from faultgraph.service.remediation import views as remediation_views
from faultgraph.service.remediation.models import RemediationConfig
from faultgraph.service.stats import views as stats_views
from faultgraph.service.topology import views as topology_views
from faultgraph.service.writer import GroupWriter

log = logging.getLogger("faultgraph")
WEB_DIR = Path(__file__).resolve().parent / "web"


def create_app(settings: Settings | None = None, *, open_without_tokens: bool = False) -> FastAPI:
    """A ready app: opening the store and starting the writer happen in its lifespan.

    `open_without_tokens` grants every request every role while no token was ever created;
    only a server listening on loopback may set it (SPEC §9), and `serve` decides that.
    """
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = store.make_engine(settings.db_url, settings)
        store.init_schema(engine)
        app.state.engine = engine
        with engine.connect() as conn:
            if (note := archives.unread(conn, app.state.archive)) is not None:
                log.warning("%s; set it to the archive's folder or bucket", note)
        cluster = Cluster(engine)
        cluster.load()
        app.state.cluster = cluster
        app.state.auth = Authenticator(engine, open_without_tokens=open_without_tokens)

        def record_and_notify(conn: Connection, batches: list) -> None:
            events_service.record_beats(conn, batches)
            notices.send(conn)  # other replicas' engines hear of this commit (PostgreSQL)

        app.state.writer = GroupWriter(
            engine,
            partial(store.insert_ignoring_duplicates, table_name="events"),
            first_seq=store.max_value(engine, events.c.seq) + 1,
            max_queue=settings.writer_queue_batches,
            max_group_rows=settings.group_commit_rows,
            convert=partial(events_views.convert_group, cluster.enrich, app.state.metrics),
            also=record_and_notify,
            on_quiet=lambda: app.state.runner.wake(), max_wait_s=5.0,
        )
        app.state.ingest = Ingest(settings, app.state.writer, app.state.liveness, app.state.metrics)
        # The lease may be gained before the runner below exists; its first pass covers that.
        lease = Lease(engine, on_gain=lambda: app.state.runner.wake() if hasattr(app.state, "runner") else None)
        app.state.lease = lease
        replicated = engine.dialect.name == "postgresql"  # other replicas may store topology, jobs, heartbeats

        def engine_view() -> Cluster:
            if replicated:  # the leader attributes on what any replica stored
                cluster.refresh()
            return cluster

        # The writer wakes the engine once ingest pauses, or every `max_wait_s` of a stream that
        # does not (on_quiet); the runner's own interval is a backstop (other replicas' events)
        # that holds off while a local burst settles: passes during a storm would take the cores
        # its acknowledgements need, and one pass after it finds the incident within the target.
        app.state.runner = IncidentRunner(engine, engine_view, interval=2.0,
                                          leading=lambda: lease.held and not app.state.writer.settling,
                                          idle_for=app.state.writer.idle_for)
        app.state.alerts = alerts.Dispatcher(engine, alerts.AlertConfig.from_settings(settings), metrics=app.state.metrics,
                                             leading=lambda: lease.held)

        remediate = remediation.for_app(app.state, RemediationConfig.from_settings(settings), leading=lambda: lease.held)

        def after_pass(result: dict[str, int], seconds: float) -> None:
            app.state.metrics.observe_pass(result, seconds)
            app.state.alerts.wake()
            if remediate is not None:  # None unless opted in
                remediate.wake()

        app.state.runner.after_pass = after_pass
        listener = notices.Listener(engine, app.state.runner.wake) if replicated else None
        app.state.liveness.learn(stored_beats(engine, since=datetime.now(UTC) - 2 * app.state.liveness.timeout))
        watcher = LivenessWatcher(app.state.liveness, partial(events_views.store_internal, app.state.writer),
                                  leading=lambda: lease.held,
                                  shared=(lambda since: stored_beats(engine, since=since)) if replicated else None)
        pruner = prune_loop(engine, retention, leading=lambda: lease.held)
        try:
            yield
        finally:
            if listener is not None:
                listener.close()
            pruner.close()
            watcher.close()
            app.state.runner.close()
            app.state.alerts.close()
            if remediate is not None:
                remediate.close()
            lease.close()
            app.state.writer.close()
            engine.dispose()

    app = FastAPI(title="faultgraph", version="0.1.0", lifespan=lifespan,
                  description="Fault-diagnosis timeline for GPU training clusters")
    app.state.settings = settings
    retention = Retention.from_settings(settings)  # a malformed archive target stops the start, named
    app.state.archive = retention.archive  # long-range statistics read it with the live store
    # Middleware added first runs innermost: HotPath sees the caller Authenticate admitted.
    app.add_middleware(HotPath, endpoints={"/v1/events": events_views.post_events, "/v1/logs": logs_views.post_logs},
                       role="agent")
    app.add_middleware(Authenticate)
    app.state.limiter = IngestLimiter(rate=settings.ingest_rate_per_s, burst=settings.ingest_burst,
                                      unit_bytes=settings.ingest_request_bytes,
                                      max_in_flight=max(1, int(settings.writer_queue_batches * settings.ingest_queue_share)))
    app.state.liveness = Liveness(timedelta(seconds=settings.heartbeat_timeout_s))
    app.include_router(events_views.router)
    app.include_router(auth_views.router)
    app.include_router(incidents_views.router)
    app.include_router(topology_views.router)
    app.include_router(jobs_views.router)
    app.include_router(stats_views.router)
    app.include_router(hosts_views.router)
    app.include_router(logs_views.router)
    app.include_router(diagnose_views.router)
    app.include_router(inventory_views.router)
    app.include_router(fleet_views.router)
    app.include_router(remediation_views.router)
    app.include_router(flight_recorder_views.router)
    metrics.install(app, metrics.Metrics())
    app.mount("/ui", StaticFiles(directory=WEB_DIR, html=True), name="ui")

    @app.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        return RedirectResponse("/ui/")

    @app.get("/healthz", tags=["health"])
    def healthz(engine: EngineDep, writer: WriterDep, lease: LeaseDep, runner: RunnerDep) -> dict:
        """Liveness and readiness: the store answers and the writer is keeping up; `leader`
        says whether this replica runs the incident engine and the liveness watcher.
        `engine_failures` counts the engine's passes failed in a row: while it is not 0 no
        incident opens or moves and `status` is `degraded` (still a 200: ingest works, and a
        restart would not mend what the pass trips on; the ERROR log names it)."""
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
        failures = runner.failures
        return {"status": "degraded" if failures else "ok", "writer_queue": writer.depth, "leader": lease.held,
                "engine_failures": failures}

    def openapi() -> dict:
        """FastAPI's schema, with 422 documented as the `{"detail": "..."}` actually sent, and
        the ingest limits' 429 on the routes they guard."""
        schema = app.openapi_schema
        if schema is None:
            schema = FastAPI.openapi(app)
            components = schema.get("components", {}).get("schemas", {})
            if "HTTPValidationError" in components:
                components["HTTPValidationError"] = {
                    "title": "HTTPValidationError", "type": "object", "required": ["detail"],
                    "properties": {"detail": {"type": "string", "title": "Detail"}},
                }
                components.pop("ValidationError", None)
            for path in INGEST_PATHS:  # the ingest limits answer before any route does
                post = schema["paths"].get(path, {}).get("post")
                if post is not None:
                    post["responses"]["429"] = {"description": "this agent is over its ingest share; "
                                                               "retry after `Retry-After` seconds"}
        return schema

    app.openapi = openapi  # type: ignore[method-assign]

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        sent = request.headers.get("content-type", "")
        if any(tuple(e["loc"]) == ("body",) for e in exc.errors()) and "json" not in sent:
            # curl's bare -d sends a form: FastAPI then reads no JSON, and says only that a dict was expected
            detail = f"body: expected a JSON object sent as content-type: application/json, not {sent or 'no content-type'}"
        else:
            # A query parameter by its name alone, as the routes' own checks name it ("since: …"):
            # the name is what the caller typed, `query.` only where FastAPI found it.
            detail = "; ".join(f"{'.'.join(str(p) for p in e['loc'][1 if e['loc'][:1] == ('query',) else 0:])}: {e['msg']}"
                               for e in exc.errors())
        return JSONResponse({"detail": detail}, status_code=422)

    return app
