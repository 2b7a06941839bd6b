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
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any, Protocol

from faultgraph.attribution import clock, evidence, pricing, racks, rollback
from faultgraph.attribution.classify import SEVERITY_WEIGHT, classify
from faultgraph.attribution.evidence import Item, Vote
from faultgraph.attribution.ledger import gpu_hours_lost
from faultgraph.attribution.placement import Placement
from faultgraph.attribution.topology import Topology, id_host
from faultgraph.ingest.causes import category_of

# Items of one scope further apart than this (in effective time) are separate interruptions.
GAP = timedelta(minutes=15)
# ... unless the job reports its restarts: then only a restart, or this long, separates them.
LONG_GAP = timedelta(hours=1)
# A job never registered is known only from its symptoms: a fault on its host this long
# before or after them can still be its (`_seen_near`).
SEEN_NEAR = LONG_GAP
# Hardware events this long before the hang start can still be its cause.
LOOKBACK = timedelta(minutes=10)
LOOKAHEAD = timedelta(minutes=2)
# A job's incident that blames the host its previous incident blamed, and began before the job
# ran again or within this long after it restarted, is that fault still at work (the part
# was still in service: a GPU that did not come back after the reboot, a host nobody
# drained), not a new one.
FAILED_RESTART = timedelta(minutes=10)


class Cluster(Protocol):
    """What the engine needs to know about the cluster: graph, resolution, and jobs."""

    @property
    def topology(self) -> Topology | None: ...

    def placement(self, job: str) -> Placement | None: ...

    def jobs_on(self, host: str, at: datetime) -> list[str]: ...

    def resolve(self, event: dict[str, Any], placement: Placement | None = None) -> str | None: ...

    def peer(self, peer: str, placement: Placement | None = None) -> str | None: ...

    def reach(self, hosts: Iterable[str], *, job: str | None = None) -> frozenset[str]: ...


@dataclass
class Draft:
    """One incident as the engine sees it; the service adds id, status and overrides."""

    scope: str  # "job:<id>" or "host:<name>"
    job: str | None
    start: datetime
    last: datetime
    members: list[Item] = field(default_factory=list)
    evidence: list[Item] = field(default_factory=list)
    root_cause: dict[str, Any] = field(default_factory=dict)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    action: dict[str, Any] = field(default_factory=dict)
    interruption: dict[str, Any] = field(default_factory=dict)
    planned: bool = False
    type: str = "interruption"  # SPEC §5: interruption, degradation or fault
    clock_offsets: dict[str, float] = field(default_factory=dict)  # host → seconds its clock is ahead

    @property
    def symptoms(self) -> int:
        return sum(1 for item in self.members if item.signal.role == "symptom")

    @property
    def hosts(self) -> int:
        return len({item.event["host"] for item in self.members})

    @property
    def event_ids(self) -> list[str]:
        return sorted({item.id for item in (*self.members, *self.evidence)})


# The longest wait a watchdog's report is believed: a collective that ran longer than this
# is a wrong number (a 2,000-year wait put the start before year 1 and failed every pass).
# The events schema refuses longer waits; events stored before it did are read at their time.
LONGEST_WAIT = timedelta(days=30)
LONGEST_WAIT_MS = int(LONGEST_WAIT / timedelta(milliseconds=1))


def effective_time(item: Item) -> datetime:
    """When the interruption this item reports began: a timeout's start, else its time."""
    attrs = item.event.get("attrs") or {}
    if item.event["kind"] == "nccl_timeout":
        ran_ms = attrs.get("elapsed_ms") or attrs.get("timeout_ms")
        if isinstance(ran_ms, int | float) and 0 < ran_ms <= LONGEST_WAIT_MS:
            return item.time - timedelta(milliseconds=ran_ms)
    return item.time


def _items(events: Sequence[dict[str, Any]], cluster: Cluster) -> tuple[list[Item], dict[str, timedelta]]:
    """Each event read, resolved and placed on corrected time; and the hosts' clock offsets."""
    seen: dict[tuple[str, int], str | None] = {}

    def job_of(event: dict[str, Any]) -> str | None:  # per host and ten minutes: a storm asks 16,384 times
        key = (event["host"], int(event["time"].timestamp() // 600))
        if key not in seen:
            jobs = cluster.jobs_on(event["host"], event["time"])
            seen[key] = jobs[0] if len(jobs) == 1 else None
        return seen[key]

    offsets = clock.offsets(events, {e["id"]: job_of(e) for e in events if e["kind"] == "nccl_timeout" and not e.get("job")})
    items = []
    for event in events:
        signal = classify(event)
        component = event.get("component")
        # Symptoms are reasoned about by rank, not component; hardware events are resolved
        # again in case the topology arrived after they did.
        if signal.role not in ("symptom", "lifecycle") and (not component or component == event["host"]):
            job = event.get("job")
            component = cluster.resolve(event, cluster.placement(job) if job else None) or component
        if event["kind"] == "pcie_aer":
            component = _aer_source(event, cluster) or component
        time = event["time"]
        if event["host"] in offsets and clock.on_host_clock(event):
            time = time - offsets[event["host"]]
        items.append(Item(event, signal, component or event["host"], time))
    return items, offsets


def _aer_source(event: dict[str, Any], cluster: Cluster) -> str | None:
    """A root port's AER line names the device that sent the error (`error received:
    0000:19:00.0`): the NIC or GPU behind the port is the suspect, not the port."""
    source = (event.get("attrs") or {}).get("source_id")
    if not isinstance(source, str) or ":" not in source:
        return None
    return cluster.resolve({"host": event["host"], "kind": "pcie_aer", "attrs": {"pci": source}})


def _scopes(item: Item, cluster: Cluster, observed: dict[str, dict[str, list[datetime]]]) -> list[str]:
    """The incidents an item can belong to: its job's, the jobs on its host (registered, or
    `_seen_near` it), else its host's."""
    if item.event.get("job"):
        return [f"job:{item.event['job']}"]
    jobs = cluster.jobs_on(item.event["host"], item.time) or _seen_near(observed.get(item.event["host"], {}), item.time)
    if not jobs and item.component and cluster.topology is not None:
        if cluster.topology.type_of(item.component) == "switch":  # a fabric switch: the jobs below it
            hosts = {cluster.topology.host_of(n) for n in cluster.topology.neighbours(item.component)}
            jobs = sorted({job for host in hosts if host for job in cluster.jobs_on(host, item.time)})
    return [f"job:{job}" for job in jobs] or [f"host:{item.event['host']}"]


def _seen_near(seen: dict[str, list[datetime]], when: datetime) -> list[str]:
    """Of the jobs never registered seen on a host (job → [first, last] symptom there), those
    running there at `when`: whose symptoms span it, else the closest within `SEEN_NEAR`. Jobs
    run one after another on the same hosts, and a fault between two of them goes to the
    nearer (a job's own fault comes minutes before its symptoms)."""
    gaps = {job: max(first - when, when - last, timedelta(0)) for job, (first, last) in seen.items()}
    closest = min((gap for gap in gaps.values() if gap <= SEEN_NEAR), default=None)
    return sorted(job for job, gap in gaps.items() if gap == closest)


def _restarts(items: Sequence[Item]) -> dict[str, list[datetime]]:
    """Per job, the moments it (re)started: an interruption never spans one."""
    starts: dict[str, list[datetime]] = defaultdict(list)
    for item in items:
        if item.event["kind"] in ("job_start", "job_restart") and item.event.get("job"):
            starts[item.event["job"]].append(item.time)
    return {job: sorted(times) for job, times in starts.items()}


def _group(items: Sequence[Item], cluster: Cluster, restarts: dict[str, list[datetime]]) -> list[Draft]:
    """Cut every scope's symptoms and faults into interruptions (`restarts`: `_restarts`')."""
    observed: dict[str, dict[str, list[datetime]]] = defaultdict(dict)  # host → job → [first, last] seen
    for item in items:
        if item.event.get("job") and item.signal.role == "symptom":
            when = effective_time(item)
            span = observed[item.event["host"]].setdefault(item.event["job"], [when, when])
            span[0], span[1] = min(span[0], when), max(span[1], when)
    by_scope: dict[str, list[tuple[datetime, Item]]] = defaultdict(list)
    unplaced: list[tuple[str, datetime, Item]] = []
    for item in items:
        if item.signal.role in ("symptom", "fault", "maintenance"):
            for scope in _scopes(item, cluster, observed):
                if clock.received_time(item.event):
                    unplaced.append((scope, item.time, item))
                else:
                    by_scope[scope].append((effective_time(item), item))
    drafts = []
    for scope, timed in sorted(by_scope.items()):
        timed.sort(key=lambda pair: (pair[0], pair[1].id))
        job = scope.removeprefix("job:") if scope.startswith("job:") else None
        job_restarts = restarts.get(job, []) if job else []
        current: Draft | None = None
        for when, item in timed:
            # A job that reports its restarts is interrupted once per restart: its late
            # symptoms (a job_fail half an hour after a 30-minute watchdog) still belong;
            # a hardware event that long after is a fault of its own.
            gap = LONG_GAP if job_restarts and item.signal.role == "symptom" else GAP
            restarted = current is not None and any(current.last < r <= when for r in job_restarts)
            if current is None or when - current.last > gap or restarted:
                current = Draft(scope=scope, job=job, start=when, last=when)
                drafts.append(current)
            current.members.append(item)
            current.last = max(current.last, when)
    _attach(drafts, unplaced)
    return drafts


def _attach(drafts: list[Draft], unplaced: Sequence[tuple[str, datetime, Item]]) -> None:
    """Events timed on receipt join an incident their scope has near that moment, but never
    open one: in a backfill their receive time is not when anything happened. A watchdog
    timeout received with its incident also tells when the hang began (receipt − elapsed),
    so timeouts go first and widen the incident back to that moment for the rest."""
    ordered = sorted(unplaced, key=lambda entry: entry[2].event["kind"] != "nccl_timeout")
    for scope, when, item in ordered:
        near = [d for d in drafts if d.scope == scope and d.start - GAP <= when <= d.last + GAP]
        if near:
            draft = min(near, key=lambda d: abs((d.start - when).total_seconds()))
            draft.members.append(item)
            draft.start = min(draft.start, effective_time(item))


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
    if item.event["host"] in reach or id_host(component) in reach:
        return True
    if topology is not None and topology.type_of(component) == "nic":
        return any(neighbour in reach for neighbour in topology.neighbours(component))
    return False


# A part takes its host's blame only with one piece of evidence at least this strong.
PART_EVIDENCE = 0.3


def _board_link_gpu(component: str, topology: Topology | None) -> str | None:
    """The GPU end of an NVLink inside one host (a GPU to its baseboard's NVSwitch): no part
    one replaces, so a fault there is the GPU's tray to pull; None for any other component
    (a rack's NVLink cable cartridge, a NIC's cable, a part)."""
    if topology is None or "~" not in component:
        return None
    link = topology.link(component)
    if link is None or link["type"] != "nvlink":
        return None
    ends = (link["a"], link["b"])
    if topology.host_of(ends[0]) != topology.host_of(ends[1]):
        return None
    return next((end for end in ends if topology.type_of(end) == "gpu"), None)


def _combine(votes: Sequence[Vote], topology: Topology | None = None) -> dict[str, dict[str, Any]]:
    """Votes → per-component total score, evidence and the most specific cause named. A
    vote on an NVLink inside one host counts for its GPU (`_board_link_gpu`)."""
    totals: dict[str, dict[str, Any]] = {}
    for vote in votes:
        gpu = _board_link_gpu(vote.component, topology)
        if gpu is not None:
            vote = replace(vote, component=gpu)
        entry = totals.setdefault(vote.component, {"score": 0.0, "evidence": [], "causes": defaultdict(float), "rules": set(),
                                                   "strongest": 0.0})
        entry["score"] += vote.score
        if vote.rule != "silence":
            entry["strongest"] = max(entry["strongest"], vote.score)
        entry["evidence"].extend(vote.evidence)
        entry["rules"].add(vote.rule)
        if vote.cause:
            entry["causes"][vote.cause] += vote.score * vote.cause_share
    # A host blamed as a whole yields to a part of it that has its own evidence: the
    # part is the more precise root (a dead GPU silences its host's ranks too).
    # Weak noise on a part (a corrected error, a warning) does not make it the host's root.
    parts_of: dict[str, list[str]] = defaultdict(list)
    for component, entry in totals.items():
        if "/" in component and "~" not in component and entry["strongest"] >= PART_EVIDENCE:
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


# Causes that say how a part failed, not why: a GPU falls off the bus when it overheats,
# loses power or breaks; a host's machine check (the kernel's "[Hardware Error]" headline,
# read as `cpu`) is raised as well for a DIMM's uncorrectable error. One of them yields to a
# reason the same part reported beside it with at least this share of its weight (a single
# warning is not a reason).
OUTCOME_CAUSES = frozenset({"gpu_fell_off_bus", "cpu"})
OUTCOME_YIELD = 0.5


def _pick_cause(entry: dict[str, Any]) -> str:
    causes: dict[str, float] = entry["causes"]
    specific = {c: s for c, s in causes.items() if c not in ("unknown", "nccl_watchdog")}
    pool = specific or causes
    if not pool:
        return "unknown"
    top = max(sorted(pool), key=lambda c: pool[c])
    reasons = {c: s for c, s in pool.items() if c not in OUTCOME_CAUSES and s >= OUTCOME_YIELD * pool[top]}
    if top in OUTCOME_CAUSES and reasons:
        return max(sorted(reasons), key=lambda c: reasons[c])
    return top


def _action(component: str | None, cause: str, draft: Draft, cluster: Cluster, placement: Placement | None,
            cost: dict[str, Any] | None) -> dict[str, Any]:
    """What on-call should do: evict a replica, restart, replace a link, roll back, or nothing;
    between evicting and restarting, the cheaper in GPU-hours (`attribution/pricing.py`)."""
    category = category_of(cause)
    topology = cluster.topology
    kind = topology.type_of(component) if topology is not None and component else None
    host = component.split("/")[0] if component and "~" not in component else None
    if draft.planned:
        return {"kind": "none", "target": host or draft.job, "detail": "the job resumes when the maintenance ends"}
    if cause == "silent_data_corruption" and not host:
        return {"kind": "rollback", "target": draft.job, "detail": "roll back to the last checkpoint before the anomaly and replay"}
    if component and "~" in component:
        return {"kind": "replace", "target": component, "detail": f"replace the cable or transceiver of {component}"}
    priced = f" ({_priced(cost)})" if cost else ""
    if kind == "switch":
        return {"kind": "restart", "target": draft.job or component,
                "detail": f"repair or replace switch {component}; restart the job from its last checkpoint{priced}"}
    # A rack's NVSwitch chip (no host: GB200 NVL72) spans many hosts' GPUs, so the job restarts
    # without its NVLink domain; a baseboard's chip is its host's, evicted like a GPU.
    if (cause == "nvswitch" or kind == "nvswitch") and (topology is None or component is None
                                                        or topology.host_of(component) is None):
        return {"kind": "restart", "target": draft.job or host,
                "detail": f"{host}'s NVLink domain is broken: drain {host} and restart the job from its last checkpoint{priced}"}
    if category == "software" and component:
        return {"kind": "restart", "target": draft.job or host,
                "detail": f"fix or retry the failing code on {component} and restart the job from its last checkpoint; "
                          "the hardware is not suspect"}
    if category in ("software", "unknown") or host is None:
        return {"kind": "restart", "target": draft.job or host, "detail": "restart the job from its last checkpoint"}
    if cost is not None and cost["cheaper"] == "restart":
        return {"kind": "restart", "target": draft.job or host,
                "detail": f"drain {host} and restart the job from its last checkpoint on a spare{priced}"}
    replica = ""
    if placement is not None and host in placement.hosts():
        ranks = placement.host_ranks(host)
        dp = sorted({placement.coordinates(rank).get("dp", 0) for rank in ranks})
        replica = f" (data-parallel replica {', '.join(map(str, dp))}, ranks {ranks[0]}–{ranks[-1]})"
    repair = "drain it for repair"
    if cause == "network_switch_cable" and kind == "nic" and topology is not None and component:
        # The NIC reported it; the part to swap is on its link (the cable, the optic at either end).
        repair = f"replace the cable or transceiver of {topology.cable_of(component)}"
    return {"kind": "evict", "target": host, "detail": f"evict {host}{replica}, {repair}, and continue{priced}"}


def _priced(cost: dict[str, Any]) -> str:
    return (f"evicting costs {cost['evict_gpu_hours']:g} GPU-h at n−{cost['inputs']['evicted_gpus']}, "
            f"restarting {cost['restart_gpu_hours']:g} GPU-h")


def _cost(component: str | None, cause: str, draft: Draft, lifecycle: Sequence[Item],
          placement: Placement | None, failed_at: datetime) -> dict[str, Any] | None:
    """Evict versus restart in GPU-hours, for a job whose layout is known."""
    if placement is None or not component or "~" in component or draft.planned:
        return None
    host = component.split("/")[0]
    if host not in placement.hosts():
        return None
    per_replica = placement.world_size // max(1, placement.sizes.get("dp", 1))
    replicas = {placement.coordinates(rank).get("dp", 0) for rank in placement.host_ranks(host)}
    job_events = [i for i in lifecycle if i.event.get("job") == draft.job]
    saved = max((i.time for i in job_events if i.event["kind"] == "checkpoint_save" and i.time <= failed_at), default=None)
    restarted = next((i.time for i in job_events if i.time > draft.last and i.event["kind"] in ("job_start", "job_restart")), None)
    return pricing.price(world=placement.world_size, evicted=len(replicas) * per_replica, category=category_of(cause),
                         failed_at=failed_at, last_checkpoint=saved, restarted_at=restarted)


def _explain(draft: Draft, component: str | None, cause: str, evidence_items: list[Item], action: dict[str, Any]) -> str:
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
    raised = next((i for i in sorted(evidence_items, key=lambda i: i.time) if i.event["kind"] in ("job_fail", "nccl_error")
                   and _raised(i)), None)
    if raised is not None:  # the rank's own exception says what went wrong better than a code
        seen = f" (rank {raised.event.get('rank')} raised \"{_raised(raised)[:160]}\" at {raised.time:%H:%M:%S})"
    tail = f"; {draft.symptoms} symptoms on {draft.hosts} hosts followed" if draft.symptoms else ""
    silent = not evidence_items and draft.symptoms
    if silent:
        seen = " (it fell silent while the others waited for it)"
    return f"{component}: {what}{seen}{tail}; {action['detail']}."


def _raised(item: Item) -> str:
    """The exception a rank raised, as its line gave it ('' for other events)."""
    attrs = item.event.get("attrs") or {}
    if item.event["kind"] == "job_fail":
        return str(attrs.get("reason") or "")
    return str(attrs.get("text") or "") if attrs.get("event") == "watchdog_cuda_error" else ""


def _interruption(draft: Draft, lifecycle: Sequence[Item], cluster: Cluster, placement: Placement | None,
                  failed_at: datetime) -> dict[str, Any]:
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
    return {"start": failed_at, "end": ended, "resumed": resumed, "gpus": gpus,
            "gpu_hours_lost": round(lost["gpu_hours_lost"], 3)}


def _hang_start(draft: Draft) -> datetime:
    """When the job hung: the median of its watchdogs' hang starts (one skewed host does not
    move it), else the incident's start."""
    starts = sorted(effective_time(i) for i in draft.members if i.event["kind"] == "nccl_timeout")
    return starts[len(starts) // 2] if len(starts) >= 3 else draft.start


def _spoke(draft: Draft, hung: datetime) -> frozenset[str]:
    """Hosts whose own kernel or services (not a rank's process, a launcher's job event or the
    service's heartbeat check) logged while the job hung, over a minute after the hang began,
    and whose agent was not lost: they were up then. Lines at the hang may be a dying host's
    last words (its machine check, its panic); a lost agent's host may have come back."""
    alive_after = hung + evidence.PROXIMITY_GRACE
    until = max((item.time for item in draft.members), default=draft.last)  # the last symptom's report
    lost = {item.event["host"] for item in draft.evidence if item.event["kind"] == "host_heartbeat"}
    return frozenset(item.event["host"] for item in draft.evidence
                     if item.signal.role in ("fault", "evidence") and item.event["kind"] != "host_heartbeat"
                     and item.event.get("rank") is None and item.event["host"] not in lost
                     and alive_after < effective_time(item) <= until)


def attribute(draft: Draft, hardware: Sequence[Item], lifecycle: Sequence[Item], cluster: Cluster) -> None:
    """Fill a draft's root cause, candidates, action and interruption from the evidence."""
    placement = cluster.placement(draft.job) if draft.job else None
    topology = cluster.topology
    draft.evidence = _evidence(draft, hardware, cluster, placement)
    symptoms = [item for item in draft.members if item.signal.role == "symptom"]
    maintenance = [item for item in draft.members if item.signal.role == "maintenance"]
    lost = [item for item in draft.evidence if item.event["kind"] == "host_heartbeat"]
    hung = _hang_start(draft)
    votes: list[Vote] = [
        *evidence.hardware([i for i in draft.evidence if i.event["kind"] != "host_heartbeat"], hung, topology,
                           evidence.waiting(symptoms, placement)),
        *evidence.flapping(draft.evidence, topology),
        *evidence.common_component(draft.evidence, topology),
        *evidence.pcie_switch(draft.evidence, topology),
        *evidence.nvswitch(draft.evidence, topology),
        *evidence.silence(symptoms, placement, lost, _spoke(draft, hung)),
        *evidence.came_back_broken(draft.evidence, lost),
        *evidence.sequence_lag(symptoms, placement),
        *evidence.peers(symptoms, cluster, placement),
        *evidence.exceptions(symptoms, placement),
        *racks.nvlink_domain(draft.evidence, topology),  # GB200 NVL72: a failing NVSwitch chip, not its rack's hosts
    ]
    if maintenance:
        draft.planned = any((i.event.get("attrs") or {}).get("planned") for i in maintenance)
        for item in maintenance:
            scope = (item.event.get("attrs") or {}).get("scope") or item.event["host"]
            votes.append(Vote(scope, 10.0, "maintenance", item.signal.cause, [item.id]))
    anomalies = [i for i in draft.members if i.event["kind"] == "train_anomaly"]
    totals = _combine(votes, topology)
    total_score = sum(entry["score"] for entry in totals.values()) or 1.0
    ranked = sorted(totals, key=lambda c: (-totals[c]["score"], c))
    draft.candidates = [{"component": c, "score": round(totals[c]["score"] / total_score, 4)} for c in ranked[:5]]
    runner_up = totals[ranked[1]]["score"] if len(ranked) > 1 else 0.0
    confidence = _confidence(totals[ranked[0]]["score"], runner_up, totals[ranked[0]]["rules"]) if ranked else 0.0
    # A loss spike or NaN is itself the finding: a part is named beside it only on strong
    # evidence (a GPU's XID, say), not on whatever weak noise happened to be nearby.
    if ranked and not (anomalies and (totals[ranked[0]]["score"] < 0.5 or confidence < LOW_CONFIDENCE)):
        root = ranked[0]
        entry = totals[root]
        cause = _pick_cause(entry)
        evidence_ids = sorted(set(entry["evidence"]))
    else:
        root, confidence = None, 0.0
        cause = "silent_data_corruption" if anomalies else "nccl_watchdog"
        evidence_ids = [i.id for i in anomalies]
    cited = [i for i in (*draft.evidence, *draft.members) if i.id in set(evidence_ids)]
    first = min(cited, key=effective_time) if cited else None
    # The failure happened at the root's first evidence when there is one, else at the hang start.
    began = min(draft.start, hung)
    near = first is not None and began - LOOKBACK <= effective_time(first) <= draft.last
    failed_at = effective_time(first) if near and first is not None else began
    draft.interruption = _interruption(draft, lifecycle, cluster, placement, failed_at)
    cost = _cost(root, cause, draft, lifecycle, placement, failed_at)
    draft.action = _action(root, cause, draft, cluster, placement, cost)
    if cost is not None:
        draft.action["cost"] = cost
    if anomalies and cause == "silent_data_corruption":  # name the checkpoint and the data steps to skip
        draft.action = rollback.plan(draft.job, anomalies, lifecycle)
    explanation = _explain(draft, root, cause, cited, draft.action)
    if confidence < LOW_CONFIDENCE:
        explanation += " " + _would_settle(draft, ranked, placement, cause)
    draft.root_cause = {
        "component": root,
        "kind": first.event["kind"] if first else None,
        "category": category_of(cause),
        "cause": cause,
        "confidence": confidence,
        "evidence": evidence_ids[:50],
        "explanation": explanation,
    }


# Below this confidence the explanation says what evidence would settle the root.
LOW_CONFIDENCE = 0.6


def _confidence(score: float, runner_up: float, rules: set[str]) -> float:
    """How likely the top candidate is right: its lead over the next and the strength of its
    own evidence (calibrated on `faultgraph eval`; attribution/README.md has the table)."""
    lead = (score - runner_up) / score if score > 0 else 0.0
    strength = min(1.0, score / 1.5)
    independent = min(1.0, len(rules - {"silence"}) / 2 + 0.5) if rules - {"silence"} else 0.6
    return round(max(0.0, min(0.99, lead * strength * independent)), 4)


def _would_settle(draft: Draft, ranked: list[str], placement: Placement | None, cause: str) -> str:
    """What on-call could look at to settle a low-confidence root."""
    if cause == "silent_data_corruption":  # the numbers went wrong and no part says why
        return ("To find the part: replay the steps from that checkpoint on the same ranks and compare "
                "them, or run the long GPU diagnostic (`dcgmi diag -r 3`) on the job's hosts.")
    if not ranked:
        return ("To settle it: the flight-recorder dump (TORCH_NCCL_TRACE_BUFFER_SIZE) of the ranks that "
                "did not time out, or py-spy stacks of every rank.")
    hosts = sorted({id_host(c) for c in ranked[:3]})
    return (f"To settle it: the kernel log and BMC event log of {', '.join(hosts)}, and the flight-recorder "
            "dump of their ranks.")


def _type(draft: Draft, lifecycle: Sequence[Item], until: datetime | None = None) -> str | None:
    """SPEC §5: an interruption needs evidence the job stopped (its ranks' timeouts or errors,
    a job_fail, a restart); hardware that needs repair but stopped
    nothing is a fault; anything else (a link flap ridden out) is no incident."""
    if draft.planned or any(i.signal.role in ("symptom", "maintenance") or i.event["kind"] == "train_anomaly"
                            for i in draft.members):
        return "interruption"
    if draft.job and _restarted(draft, lifecycle, until):
        return "interruption"
    # Only a part that failed outright (critical: off the bus, uncorrectable, fatal) needs
    # repair on its own; an error-level event a running job survived (a soft lockup, an I/O
    # timeout, a degraded PSU redundancy) stays evidence on the timeline.
    repairs = [i for i in draft.members if i.signal.role == "fault" and i.signal.weight >= SEVERITY_WEIGHT["critical"]]
    return "fault" if repairs else None


def _restarted(draft: Draft, lifecycle: Sequence[Item], until: datetime | None) -> bool:
    """Whether the job was (re)started after the fault and before its next incident: it
    had stopped."""
    return any(i.event.get("job") == draft.job and i.event["kind"] in ("job_start", "job_restart")
               and timedelta(0) < i.time - draft.last <= LONG_GAP and (until is None or i.time < until)
               for i in lifecycle)


def _flaps_ridden_out(items: list[Item]) -> list[Item]:
    """A link that dropped and came back within `LOOKAHEAD` is evidence, not a fault: jobs
    ride such flaps out (NCCL retries). Several such flaps close together stay faults (a
    flapping cable), and so does a drop that lasted."""
    links: dict[str | None, list[Item]] = defaultdict(list)
    for item in items:
        if item.event["kind"] == "nic_link":
            links[item.component].append(item)
    ridden = set()
    for events in links.values():
        events.sort(key=lambda i: i.time)
        ups = [i.time for i in events if (i.event.get("attrs") or {}).get("state") == "up"]
        recovered = [i for i in events if (i.event.get("attrs") or {}).get("state") == "down"
                     and any(timedelta(0) <= up - i.time <= LOOKAHEAD for up in ups)]
        for down in recovered:
            if not any(other is not down and abs(other.time - down.time) <= GAP for other in recovered):
                ridden.add(down.id)
    return [replace(i, signal=replace(i.signal, role="evidence", interrupts=False, weight=RIDDEN_OUT_WEIGHT))
            if i.id in ridden else i for i in items]


# A flap the link recovered from weighs like a warning.
RIDDEN_OUT_WEIGHT = 0.15


def _next_starts(drafts: Sequence[Draft]) -> dict[int, datetime]:
    """For each draft, when the next one of its scope starts."""
    by_scope: dict[str, list[Draft]] = defaultdict(list)
    for draft in drafts:
        by_scope[draft.scope].append(draft)
    following = {}
    for group in by_scope.values():
        group.sort(key=lambda d: d.start)
        for before, after in pairwise(group):
            following[id(before)] = after.start
    return following


def _fold_failed_restarts(drafts: list[Draft], hardware: Sequence[Item], lifecycle: Sequence[Item],
                          cluster: Cluster, restarts: dict[str, list[datetime]]) -> list[Draft]:
    """A job's incident (or fault) that is its previous incident's fault still at work
    (FAILED_RESTART) joins it, which is then attributed again with both: one fault, one
    incident, its downtime running to the restart that held. What came after (the GPU that
    would not initialise at boot, the restart that failed on it) often names the part the
    first incident could only narrow to its host. Only for jobs that report their restarts:
    without them, a job running again cannot be told from one still down."""
    kept: list[Draft] = []
    last_of: dict[str, Draft] = {}
    for draft in sorted(drafts, key=lambda d: (d.start, d.scope)):
        before = last_of.get(draft.scope)
        starts = restarts.get(draft.job or "", [])
        if before is not None and starts and _same_host_blamed(before, draft) and draft.start - before.last <= LONG_GAP:
            restart = next((r for r in starts if before.last < r <= draft.start), None)
            if restart is None or draft.start - restart <= FAILED_RESTART:
                failed = next((r for r in starts if before.last < r <= draft.last), None)  # the restart it ended
                before.members.extend(draft.members)
                before.last = max(before.last, draft.last)
                attribute(before, hardware, lifecycle, cluster)
                if failed is not None:
                    host = id_host(str(draft.root_cause["component"]))
                    before.root_cause["explanation"] += f" The restart at {failed:%H:%M:%S} failed on {host} again."
                continue
        kept.append(draft)
        last_of[draft.scope] = draft
    return kept


def _same_host_blamed(interruption: Draft, later: Draft) -> bool:
    """Whether a later incident or fault blames a part of the host (or switch) an
    interruption blamed."""
    first, then = interruption.root_cause.get("component"), later.root_cause.get("component")
    return (interruption.type == "interruption" and later.type in ("interruption", "fault")
            and isinstance(first, str) and isinstance(then, str) and id_host(first) == id_host(then))


def analyse(events: Sequence[dict[str, Any]], cluster: Cluster) -> list[Draft]:
    """Incidents of a window of events (sorted by time, then id)."""
    items, offsets = _items(events, cluster)
    items = _flaps_ridden_out(items)
    hardware = [i for i in items if i.signal.role in ("fault", "evidence")]
    lifecycle = sorted((i for i in items if i.signal.role == "lifecycle"), key=lambda i: (i.time, i.id))
    restarts = _restarts(items)
    drafts = _group(items, cluster, restarts)
    following = _next_starts(drafts)
    for draft in drafts:
        attribute(draft, hardware, lifecycle, cluster)
        draft.type = _type(draft, lifecycle, following.get(id(draft))) or ""
    drafts = _fold_failed_restarts([d for d in drafts if d.type], hardware, lifecycle, cluster, restarts)
    for draft in drafts:
        hosts = {i.event["host"] for i in (*draft.members, *draft.evidence)}
        draft.clock_offsets = {h: round(offsets[h].total_seconds(), 3) for h in sorted(hosts & offsets.keys())}
    # A fault on an idle host that a job's incident already explains (a spare host's port
    # on the leaf that died) is part of that incident, not an interruption of its own.
    explained = {item.id for draft in drafts if draft.job for item in draft.evidence}
    return [d for d in drafts if d.job or any(item.id not in explained for item in d.members)]
