"""Routes of fleet health: `GET /v1/components`, one component's or serial's history,
`GET /v1/stats/fleet`, `GET /v1/stats/goodput`."""

from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Query

from faultgraph.service.auth.dependencies import require
from faultgraph.service.deps import ArchiveDep, ClusterDep, EngineDep
from faultgraph.service.events import archive as archives
from faultgraph.service.fleet import goodput, service
from faultgraph.service.fleet.models import STATES, UNITS
from faultgraph.service.http import parse_time, split_list
from faultgraph.service.stats.service import UNIT_TYPES
from faultgraph.service.stats.views import refusing_inverted_windows

router = APIRouter(prefix="/v1", tags=["fleet"])


def _choices(values: list[str] | None, allowed: tuple[str, ...], name: str) -> list[str] | None:
    chosen = list(split_list(values))
    wrong = [value for value in chosen if value not in allowed]
    if wrong:
        raise HTTPException(400, f"{name}: {', '.join(wrong)} not one of {', '.join(allowed)}")
    return chosen or None


def _window(since: str | None, until: str | None):
    low, high = parse_time(since, "since"), parse_time(until, "until")
    if low and high and high <= low:
        raise HTTPException(400, "until must be after since")
    return low, high


@router.get("/components", dependencies=[Depends(require("reader"))])
def list_components(
    engine: EngineDep,
    cluster: ClusterDep,
    state: Annotated[list[str] | None, Query()] = None,
    type: Annotated[list[str] | None, Query()] = None,
    host: Annotated[list[str] | None, Query()] = None,
) -> dict:
    """Components with their current state, since when, the cause and the incident that put
    them there — what a launcher reads to keep bad hardware out of the next job.
    `state=faulty,drained,suspect`, `type=host`, `host=node0001,node0002` (the parts inside
    those hosts); each comma-separated or repeated."""
    states = _choices(state, STATES, "state")
    types = _choices(type, UNIT_TYPES, "type")
    hosts = list(split_list(host)) or None
    with engine.connect() as conn:
        found = service.get_all(conn, topology=cluster.topology, states=states, types=types, hosts=hosts)
    return {"components": found, "next": None}


@router.get("/components/history", dependencies=[Depends(require("reader"))])
def component_history(
    engine: EngineDep,
    cluster: ClusterDep,
    component: Annotated[str | None, Query(min_length=1, max_length=512)] = None,
    serial: Annotated[str | None, Query(min_length=1, max_length=256)] = None,
) -> dict:
    """Every state a slot went through with its faults and serials, or where one serial
    (a GPU board) has been and the faults it carried along."""
    if (component is None) == (serial is None):
        raise HTTPException(400, "give exactly one of component= or serial=")
    with engine.connect() as conn:
        found = service.history(conn, topology=cluster.topology, component=component, serial=serial)
    if found is None:
        raise HTTPException(404, f"no recorded state for {'component ' + repr(component) if component else 'serial ' + repr(serial)}")
    return found


@router.get("/stats/fleet", tags=["stats"], dependencies=[Depends(require("reader"))])
def fleet_stats(
    engine: EngineDep,
    cluster: ClusterDep,
    since: str | None = None,
    until: str | None = None,
    type: Annotated[Literal[UNIT_TYPES] | None, Query()] = None,  # type: ignore[valid-type]
    unit: Literal[UNITS] = "slot",  # type: ignore[valid-type]
    fdr: Annotated[float, Query(gt=0, lt=1)] = 0.05,
    offenders: Annotated[int, Query(ge=0, le=10_000)] = 50,
) -> dict:
    """Faults per 1,000 unit-days, MTTR (median, p90) overall and by cause, availability,
    and the repeat offenders (Poisson test against the fleet's rate), worst first."""
    low, high = _window(since, until)
    with engine.connect() as conn, refusing_inverted_windows():
        return service.fleet_stats(conn, topology=cluster.topology, since=low, until=high,
                                   kind=type, unit=unit, fdr=fdr, offenders=offenders)


@router.get("/stats/goodput", tags=["stats"], dependencies=[Depends(require("reader"))])
def get_goodput(
    engine: EngineDep,
    archive: ArchiveDep,
    job: Annotated[str | None, Query(max_length=512)] = None,
    since: str | None = None,
    until: str | None = None,
) -> dict:
    """Effective training time measured from the events: wall, productive, η, hours lost by
    bucket and by cause, and the first-order model's η at the measured settings beside it."""
    low, high = _window(since, until)
    with engine.connect() as conn, refusing_inverted_windows():
        found = goodput.goodput(conn, job=job, since=low, until=high, now=datetime.now(UTC), archive=archive)
        note = archives.unread(conn, archive, since=low, until=high)
    if found is None:
        raise HTTPException(404, f"job {job!r} has no running time in the window")
    if note is not None:
        found.setdefault("notes", []).append(note)
    return found
