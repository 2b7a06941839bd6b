"""Fleet: component states from events and incidents, history per slot and serial, statistics.

A `component_state` event (operators, repair tickets, schedulers) names
the component on its envelope (else the host) and `attrs.state`; `attrs.serial`, when
given, says which board is fitted in the slot from then on. An incident contributes its
root component (on-call's confirmed one first), judged by its cause (attribution/fleet.py
CAUSE_STATE) at the interruption's start; a `degradation` incident makes it `suspect`.
Planned incidents judge nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from faultgraph.attribution import fleet
from faultgraph.attribution.topology import Topology
from faultgraph.service import store
from faultgraph.service.events.models import events
from faultgraph.service.events.service import format_time
from faultgraph.service.incidents.models import incidents
from faultgraph.service.stats.service import component_type, window


def _incident_type(row) -> str:
    """The incident's `type` (SPEC §5); stores written before the column existed, or
    branches without it, read as `interruption`."""
    return getattr(row, "type", None) or "interruption"


def transitions(conn: Connection, *, until: datetime | None = None) -> list[fleet.Transition]:
    """Every stated and judged transition up to `until`: stated ones in time and arrival
    order (so `faulty` then `healthy` posted for one instant replay in that order)."""
    query = sa.select(events.c.id, events.c.time, events.c.host, events.c.component, events.c.attrs).where(
        events.c.kind == "component_state")
    if until is not None:
        query = query.where(events.c.time < store.to_db_time(until))
    found = []
    for row in conn.execute(query.order_by(events.c.time, events.c.seq)):  # equal times: arrival order
        attrs = store.json_value(row.attrs) or {}
        if attrs.get("state") not in fleet.STATES:
            continue
        found.append(fleet.Transition(
            time=store.from_db_time(row.time), component=row.component or row.host, state=attrs["state"],
            cause=attrs.get("cause"), reason=attrs.get("reason"), incident=attrs.get("incident"),
            serial=attrs.get("serial"), event=row.id))
    columns = [incidents.c.id, incidents.c.failed_at, incidents.c.cause, incidents.c.root_cause, incidents.c.confirmed]
    if "type" in incidents.c:
        columns.append(incidents.c.type)
    query = sa.select(*columns).where(incidents.c.planned.is_(False))
    if until is not None:
        query = query.where(incidents.c.failed_at < store.to_db_time(until))
    for row in conn.execute(query):
        component = (store.json_value(row.confirmed) or {}).get("component") or (
            store.json_value(row.root_cause) or {}).get("component")
        state = "suspect" if _incident_type(row) == "degradation" else fleet.CAUSE_STATE.get(row.cause, "suspect")
        if component and state:
            found.append(fleet.Transition(time=store.from_db_time(row.failed_at), component=component, state=state,
                                          cause=row.cause, incident=row.id, judged=True))
    return found


def units(conn: Connection, *, until: datetime | None = None) -> dict[str, fleet.Unit]:
    """Every component with a recorded state, replayed up to `until`."""
    return fleet.replay(transitions(conn, until=until))


def host_of(component: str, topology: Topology | None) -> str:
    """The host a component sits in: the topology's word, else its id's first part. A link
    `a~b` belongs to the host at its end inside a host (`node1/nic0~leaf-3` → node1)."""
    if "~" in component:
        ends = component.split("~")
        component = next((end for end in ends if "/" in end), ends[0])
    known = topology.host_of(component) if topology is not None else None
    return known or component.split("/", 1)[0]


def get_all(conn: Connection, *, topology: Topology | None, states: list[str] | None,
            types: list[str] | None, hosts: list[str] | None) -> list[dict]:
    """Components and their current state, filtered (`hosts`: the parts inside those hosts,
    as a job's prolog asks about its own nodes); `healthy` also lists the topology's
    components that never had a state recorded."""
    replayed = units(conn)
    names = set(replayed)
    if topology is not None and (not states or "healthy" in states):
        names |= _topology_names(topology, None)
    found = []
    for name in sorted(names):
        unit = replayed.get(name) or fleet.Unit(name)
        kind = component_type(name, topology)
        if (states and unit.state not in states) or (types and kind not in types):
            continue
        if hosts and host_of(name, topology) not in hosts:
            continue
        found.append(_describe(unit, kind, topology))
    return found


def _topology_names(topology: Topology | None, kind: str | None) -> set[str]:
    if topology is None:
        return set()
    return set(topology.of_type(kind)) if kind else set(topology.graph.nodes)


def _describe(unit: fleet.Unit, kind: str | None, topology: Topology | None) -> dict:
    """A component's current state; its serial is the last one an event named, else the
    topology's (discovery reads it from nvidia-smi)."""
    listed = (topology.attrs(unit.component).get("serial") if topology is not None and unit.component in topology
              else None)
    return {"component": unit.component, "type": kind, "host": host_of(unit.component, topology),
            "state": unit.state, "since": format_time(unit.since), "cause": unit.cause, "reason": unit.reason,
            "incident": unit.incident, "serial": unit.serial or listed}


def _transition(step: fleet.Transition) -> dict:
    return {"time": format_time(step.time), "component": step.component, "state": step.state, "cause": step.cause,
            "reason": step.reason, "incident": step.incident, "serial": step.serial,
            "source": "judged" if step.judged else "stated", "event": step.event}


def _episode(episode: fleet.Episode) -> dict:
    return {"component": episode.component, "serial": episode.serial, "start": format_time(episode.start),
            "end": format_time(episode.end), "cause": episode.cause, "incident": episode.incident,
            "repair_hours": episode.repair_hours()}


def history(conn: Connection, *, topology: Topology | None, component: str | None = None,
            serial: str | None = None) -> dict | None:
    """One slot's or one serial's story: transitions, fault episodes, where the serial sat."""
    replayed = units(conn)
    if component is not None:
        unit = replayed.get(component)
        if unit is None:
            return None
        return {**_describe(unit, component_type(component, topology), topology),
                "history": [_transition(t) for t in unit.history], "faults": [_episode(e) for e in unit.episodes],
                "serials": sorted({t.serial for t in unit.history if t.serial})}
    stays = fleet.serial_occupancy(replayed)
    if serial not in stays:
        return None
    episodes = [e for u in replayed.values() for e in u.episodes if e.serial == serial]
    return {"serial": serial,
            "slots": [{"component": slot, "from": format_time(start),
                       "to": format_time(end)} for slot, start, end in stays[serial]],
            "faults": [_episode(e) for e in sorted(episodes, key=lambda e: e.start)]}


def fleet_stats(conn: Connection, *, topology: Topology | None, since: datetime | None, until: datetime | None,
                kind: str | None, unit: str = "slot", fdr: float = 0.05, offenders: int = 50) -> dict:
    """SPEC §7 `/v1/stats/fleet` over the window (bounds default to the event stream's span)."""
    span = window(conn, since=since, until=until)
    low, high = span["since"], span["until"]
    if until is None and high is not None:  # the window is [since, until): keep a fault at the last event
        high += timedelta(microseconds=1)
    base = {"since": format_time(low), "until": format_time(high), "type": kind, "unit": unit}
    if low is None or high is None or high <= low:
        return {**base, **fleet.summarize([]), "notes": ["no events stored: nothing to measure"]}
    replayed = units(conn, until=high)
    if unit == "serial":
        stays = fleet.serial_occupancy(replayed)  # a board is of the type of the slots it sat in
        found = [item for item in fleet.serial_exposures(replayed, since=low, until=high)
                 if kind is None or any(component_type(slot, topology) == kind for slot, _, _ in stays[item.unit])]
        names_note = "units: serials named by component_state events (attrs.serial), for their time installed"
    else:
        names = _topology_names(topology, kind)
        of_kind = {name: u for name, u in replayed.items() if kind is None or component_type(name, topology) == kind}
        found = fleet.exposures(of_kind, names=names, since=low, until=high)
        names_note = ("units: the topology's components" + (f" of type {kind}" if kind else "")
                      + " and any other with a recorded state; each watched for the whole window until retired")
    return {**base, **fleet.summarize(found, fdr=fdr, offenders=offenders), "fdr": fdr,
            "notes": [names_note,
                      "a fault: entering faulty/drained/in_repair from healthy or suspect; MTTR: until healthy again",
                      ("repeat offenders: one-sided Poisson test at the fleet's rate × the unit's exposure, "
                       "Benjamini-Hochberg adjusted (q_value) at the false-discovery rate fdr")]}
