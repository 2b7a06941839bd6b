"""The attribution engine: from the events of a time window to incidents with a root cause.

Pure: `analyse(events, cluster)` depends only on the events given (ordered by time, then
id) and the cluster's graph and jobs, so replaying a recorded stream gives the incidents
a live run gave. The service decides which window to re-analyse when events arrive
(`service/incidents/flows.py`); nothing here does I/O.

Steps: classify each event; give each symptom or fault a scope (the job it hit, or its
host when no job ran there); cut each scope's items into interruptions on their
effective time (a watchdog timeout that ran for `elapsed_ms` began `elapsed_ms` earlier);
collect the hardware events on the scope's footprint around each; let the evidence rules
vote; pick the root, its cause, the action and a sentence for the on-call engineer.
"""

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from faultgraph.attribution import evidence, rollback
from faultgraph.attribution.causes import category_of
from faultgraph.attribution.classify import classify
from faultgraph.attribution.evidence import Item, Vote
from faultgraph.attribution.ledger import gpu_hours_lost
from faultgraph.attribution.placement import Placement
from faultgraph.attribution.topology import Topology

# Items of one scope further apart than this (in effective time) are separate interruptions.
GAP = timedelta(minutes=15)
# ... unless the job reports its restarts: then only a restart, or this long, separates them.
LONG_GAP = timedelta(hours=1)
# Hardware events this long before the hang start can still be its cause.
LOOKBACK = timedelta(minutes=10)
LOOKAHEAD = timedelta(minutes=2)


class Cluster(Protocol):
    """What the engine needs to know about the cluster: graph, resolution, and jobs."""

    @property
    def topology(self) -> Topology | None: ...

    def placement(self, job: str) -> Placement | None: ...

    def jobs_on(self, host: str, at: datetime) -> list[str]: ...

    def resolve(self, event: dict, placement: Placement | None = None) -> str | None: ...

    def peer(self, peer: str, placement: Placement | None = None) -> str | None: ...

    def reach(self, hosts: Iterable[str], *, job: str | None = None) -> frozenset[str]: ...

    def has_jobs(self) -> bool: ...


@dataclass
class Draft:
    """One incident as the engine sees it; the service adds id, status and overrides."""

    scope: str  # "job:<id>" or "host:<name>"
    job: str | None
    start: datetime
    last: datetime
    members: list[Item] = field(default_factory=list)
    evidence: list[Item] = field(default_factory=list)
    root_cause: dict = field(default_factory=dict)
    candidates: list[dict] = field(default_factory=list)
    action: dict = field(default_factory=dict)
    interruption: dict = field(default_factory=dict)
    planned: bool = False

    @property
    def symptoms(self) -> int:
        return sum(1 for item in self.members if item.signal.role == "symptom")

    @property
    def hosts(self) -> int:
        return len({item.event["host"] for item in self.members})

    @property
    def event_ids(self) -> list[str]:
        return sorted({item.id for item in (*self.members, *self.evidence)})


def effective_time(item: Item) -> datetime:
    """When the interruption this item reports began: a timeout's start, else its time."""
    attrs = item.event.get("attrs") or {}
    if item.event["kind"] == "nccl_timeout":
        ran_ms = attrs.get("elapsed_ms") or attrs.get("timeout_ms")
        if isinstance(ran_ms, int | float) and ran_ms > 0:
            return item.time - timedelta(milliseconds=ran_ms)
    return item.time


def _items(events: Sequence[dict], cluster: Cluster) -> list[Item]:
    items = []
    for event in events:
        signal = classify(event)
        component = event.get("component")
        # Symptoms are reasoned about by rank, not component; hardware events are resolved
        # again in case the topology arrived after they did.
        if signal.role not in ("symptom", "lifecycle") and (not component or component == event["host"]):
            job = event.get("job")
            component = cluster.resolve(event, cluster.placement(job) if job else None) or component
        items.append(Item(event, signal, component or event["host"], event["time"]))
    return items


def _scopes(item: Item, cluster: Cluster, observed: dict[str, set[str]]) -> list[str]:
    """The incidents an item can belong to: its job's, the jobs on its host (registered, or
    seen in this window's events when the job was never registered), else its host's."""
    if item.event.get("job"):
        return [f"job:{item.event['job']}"]
    jobs = cluster.jobs_on(item.event["host"], item.time) or sorted(observed.get(item.event["host"], ()))
    if not jobs and item.component and cluster.topology is not None:
        if cluster.topology.type_of(item.component) == "switch":  # a fabric switch: the jobs below it
            hosts = {cluster.topology.host_of(n) for n in cluster.topology.neighbours(item.component)}
            jobs = sorted({job for host in hosts if host for job in cluster.jobs_on(host, item.time)})
    return [f"job:{job}" for job in jobs] or [f"host:{item.event['host']}"]


def _restarts(items: Sequence[Item]) -> dict[str, list[datetime]]:
    """Per job, the moments it (re)started: an interruption never spans one."""
    starts: dict[str, list[datetime]] = defaultdict(list)
    for item in items:
        if item.event["kind"] in ("job_start", "job_restart") and item.event.get("job"):
            starts[item.event["job"]].append(item.time)
    return {job: sorted(times) for job, times in starts.items()}


def _group(items: Sequence[Item], cluster: Cluster) -> list[Draft]:
    """Cut every scope's symptoms and faults into interruptions."""
    restarts = _restarts(items)
    observed: dict[str, set[str]] = defaultdict(set)
    for item in items:
        if item.event.get("job") and item.signal.role == "symptom":
            observed[item.event["host"]].add(item.event["job"])
    by_scope: dict[str, list[tuple[datetime, Item]]] = defaultdict(list)
    for item in items:
        if item.signal.role in ("symptom", "fault", "maintenance"):
            for scope in _scopes(item, cluster, observed):
                by_scope[scope].append((effective_time(item), item))
    drafts = []
    for scope, timed in sorted(by_scope.items()):
        timed.sort(key=lambda pair: (pair[0], pair[1].id))
        job = scope.removeprefix("job:") if scope.startswith("job:") else None
        job_restarts = restarts.get(job, []) if job else []
        # A job that reports its restarts is interrupted once per restart: its late
        # symptoms (a job_fail half an hour after a 30-minute watchdog) still belong.
        gap = LONG_GAP if job_restarts else GAP
        current: Draft | None = None
        for when, item in timed:
            restarted = current is not None and any(current.last < r <= when for r in job_restarts)
            if current is None or when - current.last > gap or restarted:
                current = Draft(scope=scope, job=job, start=when, last=when)
                drafts.append(current)
            current.members.append(item)
            current.last = max(current.last, when)
    # A job's incident that holds only symptoms and no fault can still be explained by
    # hardware on its footprint; incidents made of evidence-free noise do not exist.
    return drafts


def _evidence(draft: Draft, hardware: Sequence[Item], cluster: Cluster, placement: Placement | None) -> list[Item]:
    """Hardware events near the interruption on what it could have touched."""
    if placement is not None:
        reach = cluster.reach(placement.hosts(), job=draft.job)
    else:
        reach = cluster.reach({item.event["host"] for item in draft.members})
    low, high = draft.start - LOOKBACK, draft.last + LOOKAHEAD
    return [item for item in hardware if low <= item.time <= high and _touches(item, reach, cluster.topology)]


def _touches(item: Item, reach: frozenset[str], topology: Topology | None) -> bool:
    """Whether a hardware event is on the reach: on one of its hosts or switches, or on a
    NIC cabled to one of its switches (a spare host's port on the job's leaf)."""
    component = item.component or ""
    if item.event["host"] in reach or component.split("~")[0].split("/")[0] in reach:
        return True
    if topology is not None and topology.type_of(component) == "nic":
        return any(neighbour in reach for neighbour in topology.neighbours(component))
    return False


def _combine(votes: Sequence[Vote]) -> dict[str, dict]:
    """Votes → per-component total score, evidence and the most specific cause named."""
    totals: dict[str, dict] = {}
    for vote in votes:
        entry = totals.setdefault(vote.component, {"score": 0.0, "evidence": [], "causes": defaultdict(float), "rules": set()})
        entry["score"] += vote.score
        entry["evidence"].extend(vote.evidence)
        entry["rules"].add(vote.rule)
        if vote.cause:
            entry["causes"][vote.cause] += vote.score
    # A host blamed as a whole yields to a part of it that has its own evidence: the
    # part is the more precise root (a dead GPU silences its host's ranks too).
    parts_of: dict[str, list[str]] = defaultdict(list)
    for component, entry in totals.items():
        if "/" in component and "~" not in component and "hardware" in entry["rules"]:
            parts_of[component.split("/", 1)[0]].append(component)
    for component in sorted(totals, key=lambda c: -totals[c]["score"]):
        if "/" in component or "~" in component:
            continue
        parts = parts_of.get(component)
        if parts:
            best = max(parts, key=lambda c: totals[c]["score"])
            if totals[best]["score"] >= 0.25 * totals[component]["score"]:
                host = totals.pop(component)
                totals[best]["score"] += host["score"]
                totals[best]["evidence"].extend(host["evidence"])
                for cause, score in host["causes"].items():
                    totals[best]["causes"][cause] += score * 0.5
    return totals


def _pick_cause(entry: dict) -> str:
    causes = entry["causes"]
    specific = {c: s for c, s in causes.items() if c not in ("unknown", "nccl_watchdog")}
    pool = specific or causes
    return max(sorted(pool), key=lambda c: pool[c]) if pool else "unknown"


def _action(component: str | None, cause: str, draft: Draft, cluster: Cluster, placement: Placement | None) -> dict:
    """What on-call should do: evict a replica, restart, replace a link, roll back, or nothing."""
    category = category_of(cause)
    topology = cluster.topology
    kind = topology.type_of(component) if topology is not None and component else None
    host = component.split("/")[0] if component and "~" not in component else None
    if draft.planned:
        return {"kind": "none", "target": host or draft.job, "detail": "planned maintenance; the job resumes when it ends"}
    if cause == "silent_data_corruption" and not host:
        return {"kind": "rollback", "target": draft.job, "detail": "roll back to the last checkpoint before the anomaly and replay"}
    if component and "~" in component:
        return {"kind": "replace", "target": component, "detail": f"replace the cable or transceiver of {component}"}
    if kind == "switch":
        return {"kind": "restart", "target": draft.job or component,
                "detail": f"repair or replace switch {component}; restart the job from its last checkpoint"}
    if cause in ("nvswitch",) or kind == "nvswitch":
        return {"kind": "restart", "target": draft.job or host,
                "detail": f"{host}'s NVLink domain is broken: drain {host} and restart the job from its last checkpoint"}
    if category in ("software", "unknown") or host is None:
        return {"kind": "restart", "target": draft.job or host, "detail": "restart the job from its last checkpoint"}
    replica = ""
    if placement is not None and host in placement.hosts():
        ranks = placement.host_ranks(host)
        dp = sorted({placement.coordinates(rank).get("dp", 0) for rank in ranks})
        replica = f" (data-parallel replica {', '.join(map(str, dp))}, ranks {ranks[0]}–{ranks[-1]})"
    return {"kind": "evict", "target": host, "detail": f"evict {host}{replica}, drain it for repair, and continue"}


def _explain(draft: Draft, component: str | None, cause: str, evidence_items: list[Item], action: dict) -> str:
    if component is None:
        return (f"{draft.symptoms} symptoms on {draft.hosts} hosts from {draft.start:%H:%M:%S} with no hardware "
                f"trace; no component could be isolated, {action['detail']}.")
    first = min(evidence_items, key=lambda item: item.time) if evidence_items else None
    what = cause.replace("_", " ")
    seen = ""
    if first is not None:
        attrs = first.event.get("attrs") or {}
        code = f" XID {attrs['xid']}" if "xid" in attrs else f" SXid {attrs['sxid']}" if "sxid" in attrs else ""
        seen = f" ({first.event['kind']}{code} at {first.time:%H:%M:%S})"
    tail = f"; {draft.symptoms} symptoms on {draft.hosts} hosts followed" if draft.symptoms else ""
    return f"{component}: {what}{seen}{tail}; {action['detail']}."


def _interruption(draft: Draft, lifecycle: Sequence[Item], cluster: Cluster, placement: Placement | None,
                  failed_at: datetime) -> dict:
    """When the job stopped, when it ran again, and what that cost (attribution/ledger.py)."""
    job_events = [item for item in lifecycle if draft.job and item.event.get("job") == draft.job]
    # The interruption ends when the job runs again; a job that was ended instead ends it
    # too, but costs no downtime: its GPUs went back to the scheduler.
    after = [i for i in job_events if i.time > draft.last and i.event["kind"] in ("job_start", "job_restart", "job_end")]
    resumed = next((i.time for i in after if i.event["kind"] != "job_end"), None)
    ended = after[0].time if after else None
    saved = max((i.time for i in job_events if i.event["kind"] == "checkpoint_save" and i.time <= failed_at), default=None)
    since = max((i.time for i in job_events if i.event["kind"] in ("job_start", "job_restart") and i.time <= failed_at), default=None)
    if placement is not None:
        gpus = placement.world_size
    elif cluster.topology is not None and draft.scope.startswith("host:"):
        gpus = max(1, sum(1 for c in cluster.topology.host_components(draft.scope[5:]) if cluster.topology.type_of(c) == "gpu"))
    else:
        gpus = max(1, len({(i.event["host"], i.event.get("rank")) for i in draft.members}))
    lost = gpu_hours_lost(gpus=gpus, failed_at=failed_at, resumed_at=resumed, last_checkpoint_at=saved, running_since=since)
    return {"start": failed_at, "end": ended, "gpus": gpus, "gpu_hours_lost": round(lost["gpu_hours_lost"], 3)}


def attribute(draft: Draft, hardware: Sequence[Item], lifecycle: Sequence[Item], cluster: Cluster) -> None:
    """Fill a draft's root cause, candidates, action and interruption from the evidence."""
    placement = cluster.placement(draft.job) if draft.job else None
    topology = cluster.topology
    draft.evidence = _evidence(draft, hardware, cluster, placement)
    symptoms = [item for item in draft.members if item.signal.role == "symptom"]
    maintenance = [item for item in draft.members if item.signal.role == "maintenance"]
    lost = [item for item in draft.evidence if item.event["kind"] == "host_heartbeat"]
    votes: list[Vote] = [
        *evidence.hardware([i for i in draft.evidence if i.event["kind"] != "host_heartbeat"], draft.start, topology),
        *evidence.flapping(draft.evidence, topology),
        *evidence.common_component(draft.evidence, topology),
        *evidence.silence(symptoms, placement, lost),
        *evidence.sequence_lag(symptoms, placement),
        *evidence.peers(symptoms, cluster, placement),
    ]
    if maintenance:
        draft.planned = any((i.event.get("attrs") or {}).get("planned") for i in maintenance)
        for item in maintenance:
            scope = (item.event.get("attrs") or {}).get("scope") or item.event["host"]
            votes.append(Vote(scope, 10.0, "maintenance", item.signal.cause, [item.id]))
    anomalies = [i for i in draft.members if i.event["kind"] == "train_anomaly"]
    totals = _combine(votes)
    total_score = sum(entry["score"] for entry in totals.values()) or 1.0
    ranked = sorted(totals, key=lambda c: (-totals[c]["score"], c))
    draft.candidates = [{"component": c, "score": round(totals[c]["score"] / total_score, 4)} for c in ranked[:5]]
    if ranked and not (anomalies and totals[ranked[0]]["score"] < 0.5):
        root = ranked[0]
        entry = totals[root]
        cause = _pick_cause(entry)
        evidence_ids = sorted(set(entry["evidence"]))
        confidence = round(entry["score"] / total_score * min(1.0, entry["score"]), 4)
    else:
        root, evidence_ids = None, []
        cause = "silent_data_corruption" if anomalies else "nccl_watchdog"
        confidence = 0.0
        evidence_ids = [i.id for i in anomalies]
    draft.action = _action(root, cause, draft, cluster, placement)
    if anomalies and cause == "silent_data_corruption":  # issue 15: name the checkpoint and the data to skip
        draft.action = rollback.plan(draft.job, anomalies, lifecycle)
    cited = [i for i in (*draft.evidence, *draft.members) if i.id in set(evidence_ids)]
    first = min(cited, key=effective_time) if cited else None
    draft.root_cause = {
        "component": root,
        "kind": first.event["kind"] if first else None,
        "category": category_of(cause),
        "cause": cause,
        "confidence": confidence,
        "evidence": evidence_ids[:50],
        "explanation": _explain(draft, root, cause, cited, draft.action),
    }
    # The failure happened at the root's first evidence when there is one, else at the hang start.
    near = first is not None and draft.start - LOOKBACK <= effective_time(first) <= draft.last
    failed_at = effective_time(first) if near else draft.start
    draft.interruption = _interruption(draft, lifecycle, cluster, placement, failed_at)


def analyse(events: Sequence[dict], cluster: Cluster) -> list[Draft]:
    """Incidents of a window of events (sorted by time, then id)."""
    items = _items(events, cluster)
    hardware = [i for i in items if i.signal.role in ("fault", "evidence")]
    lifecycle = sorted((i for i in items if i.signal.role == "lifecycle"), key=lambda i: (i.time, i.id))
    drafts = _group(items, cluster)
    for draft in drafts:
        attribute(draft, hardware, lifecycle, cluster)
    # A fault on an idle host that a job's incident already explains (a spare host's port
    # on the leaf that died) is part of that incident, not an interruption of its own.
    explained = {item.id for draft in drafts if draft.job for item in draft.evidence}
    return [d for d in drafts if d.job or any(item.id not in explained for item in d.members)]
