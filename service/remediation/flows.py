"""One remediation pass: what should be drained or resumed, within the cap, and doing it.

Triggers, each held for the tolerance window before anything happens (a signal that
flaps back within it never acts — the state's `since` restarts at every change):
- a component in state `faulty` (stated, or the engine's judgement of an incident root):
  its host is drained;
- an incident whose action is `evict`, its root not healthy again: the action's target.
A host faultgraph drained is resumed once every component of it with a recorded state is
up again (an operator's `healthy` closes the fault).

The cap: drains (in a dry run the dry-run ones, so it shows what the cap would do; once
live only those done — a dry run's reports are then acted on, within the cap) in the
rolling hour may not exceed `max_hosts_per_hour`, nor `max_percent_per_hour` of the
topology's hosts (rounded down; without a topology only the host count applies). A
decision past the cap is recorded as `capped` and a human is paged; it is not retried
for that trigger — someone must look. Every decision and outcome is an audit event.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from faultgraph.attribution.fleet import DOWN_STATES, Unit
from faultgraph.attribution.topology import Topology
from faultgraph.service import store
from faultgraph.service.events.service import format_time
from faultgraph.service.fleet import service as fleet_service
from faultgraph.service.fleet.service import host_of
from faultgraph.service.incidents.models import incidents
from faultgraph.service.loops import Loop
from faultgraph.service.remediation import service
from faultgraph.service.remediation.actuators import ActionFailed, Actuator
from faultgraph.service.remediation.models import RemediationConfig

log = logging.getLogger("faultgraph.remediation")
HOUR = timedelta(hours=1)


def counted(*, live: bool) -> frozenset[str]:
    """Outcomes that took a host out: in a dry run, what would have; once live, only what
    did — so switching to live acts on what the dry run only reported."""
    return frozenset({"done"} if live else {"done", "dry_run"})


@dataclass(frozen=True)
class Decision:
    action: str  # drain | resume
    host: str
    component: str
    trigger: datetime  # when the triggering state began (identifies the episode)
    incident: str | None = None
    cause: str | None = None

    @property
    def reason(self) -> str:
        return f"faultgraph {self.incident or self.component}" + (f" {self.cause}" if self.cause else "")


def plan(units: Mapping[str, Unit], evictions: Iterable[dict], past: list[dict], *, now: datetime,
         tolerance: timedelta, topology: Topology | None, live: bool = False) -> list[Decision]:
    """Drains and resumes due now, oldest trigger first; pure."""
    out = counted(live=live)
    last: dict[str, dict] = {}
    for record in past:
        last[record["host"]] = record
    wanted: dict[str, Decision] = {}
    for unit in units.values():
        if unit.state == "faulty" and unit.since is not None and unit.since <= now - tolerance:
            host = host_of(unit.component, topology)
            wanted.setdefault(host, Decision("drain", host, unit.component, unit.since, unit.incident, unit.cause))
    for incident in evictions:
        root = units.get(incident["component"])
        if incident["failed_at"] > now - tolerance or (root is not None and root.state == "healthy"):
            continue
        host = incident["target"]
        wanted.setdefault(host, Decision("drain", host, incident["component"], incident["failed_at"],
                                         incident["id"], incident["cause"]))
    due = []
    for host, decision in wanted.items():
        previous = last.get(host)
        if previous and previous["action"] == "drain" and (
                previous["outcome"] in out or previous.get("trigger") == format_time(decision.trigger)):
            continue  # already out, or this very episode was capped/failed and paged
        due.append(decision)
    for host, previous in last.items():
        if previous["action"] != "drain" or previous["outcome"] not in out or host in wanted:
            continue
        down = [u for u in units.values() if host_of(u.component, topology) == host and u.state in DOWN_STATES]
        if not down:
            due.append(Decision("resume", host, previous.get("component") or host, now,
                                previous.get("incident"), previous.get("cause")))
    return sorted(due, key=lambda d: (d.action != "resume", d.trigger, d.host))


def allowance(config: RemediationConfig, *, hosts: int | None) -> int:
    """Drains allowed per rolling hour: the host cap, and the fleet-share cap when known."""
    limit = config.max_hosts_per_hour
    if hosts:
        limit = min(limit, math.floor(config.max_percent_per_hour / 100 * hosts))
    return limit


def evictions(conn, *, topology: Topology | None) -> list[dict]:
    """Unplanned incidents whose action is `evict`, with their target host."""
    found = []
    query = sa.select(incidents.c.id, incidents.c.failed_at, incidents.c.cause, incidents.c.action,
                      incidents.c.root_cause, incidents.c.confirmed).where(incidents.c.planned.is_(False))
    for row in conn.execute(query):
        action = store.json_value(row.action) or {}
        if action.get("kind") != "evict":
            continue
        component = (store.json_value(row.confirmed) or {}).get("component") or (
            store.json_value(row.root_cause) or {}).get("component")
        target = action.get("target") or (component and host_of(component, topology))
        if target and component:
            found.append({"id": row.id, "failed_at": store.from_db_time(row.failed_at), "cause": row.cause,
                          "component": component, "target": host_of(target, topology)})
    return found


class Remediator:
    """Runs passes on the leader after the engine's: decide, cap, act, record."""

    def __init__(self, engine: Engine, config: RemediationConfig, *, actuators: list[Actuator],
                 keep: service.Store, topology: Callable[[], Topology | None] = lambda: None,
                 page: Callable[[dict], None] | None = None,
                 count: Callable[[str, str], None] = lambda action, outcome: None) -> None:
        self.engine, self.config, self.actuators, self.keep = engine, config, actuators, keep
        self.topology, self.page, self.count = topology, page or self._page, count

    def run_pass(self, now: datetime) -> list[dict]:
        """One pass at `now`; answers the audit events written."""
        if not self.config.enabled:
            return []
        topology = self.topology()
        with self.engine.connect() as conn:
            units = fleet_service.units(conn)
            past = service.actions(conn)
            due = plan(units, evictions(conn, topology=topology), past, now=now, live=self.config.live,
                       tolerance=timedelta(seconds=self.config.tolerance_s), topology=topology)
        limit = allowance(self.config, hosts=len(topology.hosts()) if topology is not None else None)
        # Against the cap, a failed live drain counts too: some of its actuators may have acted.
        spent = counted(live=self.config.live) | {"failed"}
        used = sum(1 for r in past if r["action"] == "drain" and r["outcome"] in spent and r["time"] > now - HOUR)
        written = []
        for decision in due:
            if decision.action == "drain" and used >= limit:
                detail = self._detail(decision, "capped", [], note=f"{used} drains in the last hour, cap {limit}")
                self.page(detail | {"host": decision.host})
            else:
                detail = self._act(decision)
                used += decision.action == "drain" and detail["outcome"] in spent
            event = service.audit_event(time=now, action=decision.action, host=decision.host, detail=detail)
            self.keep([event])
            self.count(decision.action, detail["outcome"])
            written.append(event)
        return written

    def _act(self, decision: Decision) -> dict:
        if not self.config.live:
            return self._detail(decision, "dry_run", [{"actuator": a.name, "outcome": "dry_run"} for a in self.actuators])
        results, failed = [], False
        for actuator in self.actuators:
            try:
                done = getattr(actuator, decision.action)(decision.host, decision.reason)
                results.append({"actuator": actuator.name, "outcome": "done", "detail": done})
            except ActionFailed as exc:
                failed = True
                results.append({"actuator": actuator.name, "outcome": "failed", "detail": str(exc)})
        detail = self._detail(decision, "failed" if failed else "done", results)
        if failed:
            self.page(detail | {"host": decision.host})
        return detail

    def _detail(self, decision: Decision, outcome: str, results: list[dict], note: str | None = None) -> dict:
        return {"outcome": outcome, "component": decision.component, "incident": decision.incident,
                "cause": decision.cause, "trigger": format_time(decision.trigger), "reason": decision.reason,
                "results": results, **({"note": note} if note else {})}

    def _page(self, detail: dict) -> None:
        """Ask a human: POST to the page URL; without one, a log line at error level."""
        text = f"faultgraph remediation {detail['outcome']} for {detail['host']}: {detail.get('note') or detail['reason']}"
        log.error(text)
        if self.config.page_url:
            try:
                httpx.post(self.config.page_url, json={"text": text, **detail}, timeout=10)
            except httpx.HTTPError:
                log.exception("paging %s failed", self.config.page_url)


def actuators_for(config: RemediationConfig) -> list[Actuator]:
    """The actuators the operator opted into, in the order named."""
    from faultgraph.service.remediation.actuators import Kubernetes, Slurm, Webhook

    made: dict[str, Callable[[], Actuator]] = {
        "slurm": Slurm, "kubernetes": lambda: Kubernetes(taint_key=config.taint_key, evict_pods=config.evict_pods),
        "webhook": lambda: Webhook(config.webhook_url or ""),
    }
    return [made[name]() for name in config.actuators]


def for_app(state, config: RemediationConfig, *, leading: Callable[[], bool]) -> Loop | None:
    """The app's remediation loop, None when no actuator is opted into (the default)."""
    if not config.enabled:
        return None
    remediator = Remediator(state.engine, config, actuators=actuators_for(config),
                            keep=service.writer_store(state.writer), topology=lambda: state.cluster.topology,
                            count=lambda action, outcome: state.metrics.remediations.labels(action, outcome).inc())
    # A pass when woken after an engine pass, and at least every `every_s` otherwise (so a
    # tolerance window that expires without new events still acts), never two passes closer
    # than `every_s`: scontrol or an API call never hold up the engine.
    every = config.every_s
    return Loop("remediation", lambda: remediator.run_pass(datetime.now(UTC)), interval=every or 1.0,
                leading=leading, rest=lambda: every).start()
