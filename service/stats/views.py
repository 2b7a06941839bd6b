"""Routes for statistics (SPEC §7): MTBF, the interruption ledger, checkpoint economics."""

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Query

from faultgraph.service.auth.dependencies import require
from faultgraph.service.deps import ArchiveDep, ClusterDep, EngineDep
from faultgraph.service.events import archive as archives
from faultgraph.service.http import parse_time
from faultgraph.service.stats import service
from faultgraph.service.stats.service import UNIT_TYPES

router = APIRouter(prefix="/v1/stats", tags=["stats"])

Minutes = Annotated[float | None, Query(gt=0, le=1e7, allow_inf_nan=False)]


def _window(since: str | None, until: str | None) -> tuple[datetime | None, datetime | None]:
    low, high = parse_time(since, "since"), parse_time(until, "until")
    if low and high and high <= low:
        raise HTTPException(400, "until must be after since")
    return low, high


@contextmanager
def refusing_inverted_windows() -> Iterator[None]:
    """A 400 for an `until` before the `since` a route derived (the first event, a job's start)."""
    try:
        yield
    except service.WindowError as exc:
        raise HTTPException(400, str(exc)) from None


@router.get("/mtbf", dependencies=[Depends(require("reader"))])
def get_mtbf(
    engine: EngineDep,
    cluster: ClusterDep,
    archive: ArchiveDep,
    since: str | None = None,
    until: str | None = None,
    scope: Annotated[str, Query(max_length=512)] = "cluster",
    include_planned: bool = False,
    project_to: Annotated[int | None, Query(ge=1, le=10**9)] = None,
) -> dict:
    """Mean time between interruptions of the cluster, of one component type, or of one job."""
    low, high = _window(since, until)
    if project_to is not None and scope not in UNIT_TYPES:
        raise HTTPException(400, f"project_to: applies to a component type scope ({', '.join(UNIT_TYPES)})")
    with engine.connect() as conn, refusing_inverted_windows():
        if scope == "cluster":
            return service.cluster_mtbf(conn, since=low, until=high, include_planned=include_planned)
        if scope in UNIT_TYPES:
            return service.type_mtbf(conn, kind=scope, topology=cluster.topology, since=low,
                                     until=high, include_planned=include_planned, project_to=project_to)
        job = scope.removeprefix("job:")
        if not service.job_known(conn, job=job, archive=archive):
            raise HTTPException(404, f"scope: {scope!r} is not 'cluster', a component type "
                                     f"({', '.join(UNIT_TYPES)}) or a job with stored events")
        answer = service.job_mtbf(conn, job=job, since=low, until=high, include_planned=include_planned,
                                  now=datetime.now(UTC), archive=archive)
        if (note := archives.unread(conn, archive, since=low, until=high)) is not None:
            answer["notes"].append(note)
        return answer


@router.get("/causes", dependencies=[Depends(require("reader"))])
def get_causes(
    engine: EngineDep,
    archive: ArchiveDep,
    since: str | None = None,
    until: str | None = None,
    job: Annotated[str | None, Query(max_length=512)] = None,
) -> dict:
    """The interruption ledger: count, share and GPU-hours lost per category and cause."""
    low, high = _window(since, until)
    with engine.connect() as conn:
        if job is not None and not service.job_known(conn, job=job, archive=archive):  # a typo, not "no interruption"
            raise HTTPException(404, f"job: {job!r} has no stored events")
        return service.causes(conn, since=low, until=high, job=job)


@router.get("/checkpoint", dependencies=[Depends(require("reader"))])
def get_checkpoint(
    engine: EngineDep,
    save_minutes: Minutes = None,
    restart_minutes: Annotated[float | None, Query(ge=0, le=1e7, allow_inf_nan=False)] = None,
    mtbf_hours: Annotated[float | None, Query(gt=0, le=1e7, allow_inf_nan=False)] = None,
    interval_minutes: Minutes = None,
    simulate: Annotated[int | None, Query(ge=2, le=1_000_000)] = None,
    distribution: Literal["exponential", "weibull"] = "exponential",
    shape: Annotated[float | None, Query(ge=0.1, le=20, allow_inf_nan=False)] = None,
    seed: int | None = None,
) -> dict:
    """Young's and Daly's intervals and the goodput at the interval in use; inputs not given
    are measured from the stored events; `simulate=N` adds a Monte Carlo check."""
    try:
        with engine.connect() as conn:
            values, sources = service.checkpoint_inputs(
                conn, save_minutes=save_minutes, restart_minutes=restart_minutes, mtbf_hours=mtbf_hours,
                distribution=distribution, shape=shape)
        answer = service.checkpoint(
            save_minutes=values["save_minutes"], restart_minutes=values["restart_minutes"],
            mtbf_hours=values["mtbf_hours"], interval_minutes=interval_minutes, simulate=simulate,
            distribution=distribution, shape=values["shape"], seed=seed)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    sources["interval_minutes"] = "given" if interval_minutes is not None else "Young's interval"
    answer["sources"] = sources
    return answer
