"""Evidence rules: each a pure function from an incident's events (and the cluster graph
and job placement) to votes for root-cause components.

An expert reading the timeline asks: what broke near the moment the hang started, what do
the failing parts have in common, who fell silent, who fell behind, and whom do the errors
name. One rule per question, so each can be tested alone; `engine.py` adds the votes up.
"""

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from math import exp
from typing import Any, Protocol

from faultgraph.attribution.classify import Signal
from faultgraph.attribution.placement import Placement
from faultgraph.attribution.topology import Topology


@dataclass(frozen=True, slots=True)
class Item:
    """One event as the engine sees it: the stored envelope, its reading, and where it is.
    (Slots: a pass makes one for every event of its window.)"""

    event: dict[str, Any]
    signal: Signal
    component: str | None
    time: datetime

    @property
    def id(self) -> str:
        return str(self.event["id"])


@dataclass
class Vote:
    """A rule's claim that `component` is the root cause, with its weight and evidence."""

    component: str
    score: float
    rule: str
    cause: str | None = None
    evidence: list[str] = field(default_factory=list)
    # How much of `score` counts when the component's cause is chosen among its votes'.
    cause_share: float = 1.0


class Peers(Protocol):
    def peer(self, peer: str, placement: Placement | None = None) -> str | None: ...


# How fast a hardware event's weight fades with its distance from the hang start.
PROXIMITY_GRACE = timedelta(minutes=1)
PROXIMITY_SCALE_S = 300.0


def proximity(when: datetime, hang_start: datetime) -> float:
    """1 within a minute of the hang start, then decaying over ~5 minutes."""
    distance = abs((when - hang_start).total_seconds()) - PROXIMITY_GRACE.total_seconds()
    return 1.0 if distance <= 0 else exp(-distance / PROXIMITY_SCALE_S)


def component_cause(item: Item, topology: Topology | None) -> str:
    """The item's cause, refined by what its component is: a PCIe AER on a GPU is the GPU's,
    and a fatal one means its link is lost, the GPU off the bus (what Xid 79 then says)."""
    cause = item.signal.cause
    if item.event["kind"] == "pcie_aer" and topology is not None and item.component:
        part = topology.type_of(item.component)
        if part == "gpu":
            fatal = (item.event.get("attrs") or {}).get("severity") == "fatal"
            cause = "gpu_fell_off_bus" if fatal else "faulty_gpu"
        elif part == "nic":
            cause = "nic"
    return cause


# A cause known second-hand blames its part fully but counts at this share when the part's
# cause is chosen: a hardware error a training process echoes (CUDA's "uncorrectable ECC
# error encountered" cannot tell HBM from SRAM, the driver's Xid can), or a host's silence
# (its board, its power: a guess that its own last lines, a machine check, say, overrule).
SECONDHAND_CAUSE_SHARE = 0.3

# Weak evidence on a part whose rank was demonstrably alive (it reported waiting like the
# others) counts this much: a corrected error there did not stop the job.
ALIVE_DISCOUNT = 0.25


def hardware(items: Iterable[Item], hang_start: datetime, topology: Topology | None,
             alive: frozenset[str] = frozenset()) -> list[Vote]:
    """Hardware events near the hang start, weighted by severity and closeness in time;
    non-fatal ones on GPUs whose ranks were still waiting in the collective weigh less."""
    votes = []
    for item in items:
        if item.event["kind"] == "train_anomaly" and "/" not in (item.event.get("component") or ""):
            # A loss spike or NaN is the job's number whichever rank logged it (the last
            # pipeline stage, rank 0): it names a part only where its poster named one.
            continue
        if item.component and item.signal.weight > 0:
            score = item.signal.weight * proximity(item.time, hang_start)
            if item.signal.role != "fault" and item.component in alive:
                score *= ALIVE_DISCOUNT
            share = SECONDHAND_CAUSE_SHARE if item.event.get("rank") is not None else 1.0
            votes.append(Vote(item.component, score, "hardware", component_cause(item, topology), [item.id], share))
    return votes


# A drop the link recovered from within this long is one flap.
FLAP_BACK = timedelta(minutes=5)


def flapping(items: Iterable[Item], topology: Topology | None, *, min_downs: int = 2) -> list[Vote]:
    """A NIC whose link went down and came back repeatedly: blame its cable (the link to
    its switch). A link that went down and stayed down is the NIC's or the switch's."""
    downs: dict[str, list[Item]] = defaultdict(list)
    ups: dict[str, list[datetime]] = defaultdict(list)
    for item in items:
        state = (item.event.get("attrs") or {}).get("state")
        if item.event["kind"] == "nic_link" and item.component:
            if state == "down":
                downs[item.component].append(item)
            elif state == "up":
                ups[item.component].append(item.time)
    votes = []
    for nic, events in downs.items():
        cycles = [e for e in events if any(timedelta(0) <= up - e.time <= FLAP_BACK for up in ups[nic])]
        if len(events) < min_downs or len(cycles) < min_downs:
            continue
        target = topology.cable_of(nic) if topology is not None else nic
        votes.append(Vote(target, 1.5 * len(events), "flapping", "network_switch_cable", [e.id for e in events]))
    return votes


def _parents(parts: Iterable[str], topology: Topology, kind: str) -> dict[str, set[str]]:
    """The parts grouped by each neighbour of type `kind` they hang from (their switch)."""
    children: dict[str, set[str]] = defaultdict(set)
    for part in parts:
        for neighbour in topology.neighbours(part, of_type=kind):
            children[neighbour].add(part)
    return children


def common_component(items: Sequence[Item], topology: Topology | None, *, min_members: int = 2) -> list[Vote]:
    """Many NICs failing together on different hosts: blame the switch they share."""
    if topology is None:
        return []
    failing_nics: dict[str, list[Item]] = defaultdict(list)
    for item in items:
        if item.signal.role == "fault" and item.component and topology.type_of(item.component) == "nic":
            failing_nics[item.component].append(item)
    if len(failing_nics) < min_members:
        return []
    votes = []
    for switch, nics in _parents(failing_nics, topology, "switch").items():
        hosts = {topology.host_of(nic) for nic in nics}
        if len(nics) >= min_members and len(hosts) >= min_members:
            share = len(nics) / len(failing_nics)
            evidence = [item.id for nic in sorted(nics) for item in failing_nics[nic]]
            score = share * sum(max(i.signal.weight for i in failing_nics[nic]) for nic in nics) * 1.5
            votes.append(Vote(switch, score, "common_component", "network_switch_cable", evidence))
    return votes


# What a part behind a PCIe switch shows when its link to the host is gone.
_OFF_THE_BUS = frozenset({"gpu_fell_off_bus", "nic"})


def pcie_switch(items: Sequence[Item], topology: Topology | None, *, min_parts: int = 2) -> list[Vote]:
    """Several parts behind one PCIe switch (a GPU and its NIC, say) dropping off together:
    blame the switch they hang from (Llama 3's "IO expansion board"), not each of them."""
    if topology is None:
        return []
    lost: dict[str, list[Item]] = defaultdict(list)
    for item in items:
        fatal_aer = item.event["kind"] == "pcie_aer" and (item.event.get("attrs") or {}).get("severity") == "fatal"
        if item.component and item.signal.role == "fault" and (item.signal.cause in _OFF_THE_BUS or fatal_aer):
            lost[item.component].append(item)
    votes = []
    for switch, parts in _parents(lost, topology, "pciesw").items():
        if len(parts) >= min_parts:
            evidence = [item.id for part in sorted(parts) for item in lost[part]]
            score = sum(max(i.signal.weight for i in lost[part]) for part in parts) * 1.5
            votes.append(Vote(switch, score, "pcie_switch", "io_expansion_board", evidence))
    return votes


def nvswitch(items: Sequence[Item], topology: Topology | None, *, min_gpus: int = 2) -> list[Vote]:
    """Several GPUs of a host reporting NVLink errors while an NVSwitch chip they all link
    to reports its own: blame the chip (the baseboard's fabric), not each GPU. The chip's own
    report is required: on a DGX-style baseboard every GPU links to every chip, so the GPUs'
    errors alone cannot tell the chips apart. (GB200 racks: `racks.nvlink_domain`.)"""
    if topology is None:
        return []
    gpus: dict[str, list[Item]] = defaultdict(list)
    reporting: set[str] = set()
    for item in items:
        if not item.component or item.signal.weight <= 0:
            continue
        kind = topology.type_of(item.component)
        if kind == "gpu" and item.signal.cause == "nvlink":
            gpus[item.component].append(item)
        elif kind == "nvswitch" and item.signal.role in ("fault", "evidence"):
            reporting.add(item.component)
    votes = []
    for chip, linked in _parents(gpus, topology, "nvswitch").items():
        if chip in reporting and len(linked) >= min_gpus:
            evidence = [item.id for gpu in sorted(linked) for item in gpus[gpu]]
            score = sum(max(i.signal.weight for i in gpus[gpu]) for gpu in linked) * 1.5
            votes.append(Vote(chip, score, "nvswitch", "nvswitch", evidence))
    return votes


def waiting(symptoms: Sequence[Item], placement: Placement | None) -> frozenset[str]:
    """The GPUs whose ranks reported waiting in the hung collective: alive at the hang."""
    if placement is None:
        return frozenset()
    ranks = {item.event.get("rank") for item in symptoms if item.event["kind"] == "nccl_timeout"}
    return frozenset(gpu for gpu in (placement.rank_to_gpu(r) for r in ranks if isinstance(r, int)) if gpu)


def silence(symptoms: Sequence[Item], placement: Placement | None, lost_hosts: Iterable[Item] = (),
            spoke: frozenset[str] = frozenset()) -> list[Vote]:
    """Ranks that said nothing while most of their peers timed out, and hosts gone quiet.

    Whole hosts silent point at the host; a few silent ranks on an otherwise talking host
    point at their GPUs. A host in `spoke` (its own kernel or services logged at the hang)
    was up: its silence names it, but not the guess that the machine died (`chassis`); its
    own lines say why.
    """
    def host_cause(host: str) -> str | None:
        return None if host in spoke else SILENT_HOST_CAUSE

    # A lost heartbeat counts only for a host none of whose ranks spoke: a host whose ranks
    # report timeouts was up, and only its agent paused.
    talking = {item.event["host"] for item in symptoms}
    votes = [Vote(item.event["host"], item.signal.weight, "silence", host_cause(item.event["host"]), [item.id],
                  SECONDHAND_CAUSE_SHARE)
             for item in lost_hosts if item.event["host"] not in talking]
    if placement is None:
        return votes
    reporting = {item.event.get("rank") for item in symptoms if item.event["kind"] in ("nccl_timeout", "nccl_error")}
    reporting.discard(None)
    world = placement.world_size
    if world < 2 or len(reporting) < world / 2:
        return votes
    silent = [rank for rank in range(world) if rank not in reporting]
    if not silent or len(silent) > max(8, world // 4):
        return votes
    by_host: dict[str, list[int]] = defaultdict(list)
    for rank in silent:
        host = placement.host_of(rank)
        assert host is not None  # rank < world_size: inside the placement
        by_host[host].append(rank)
    for host, ranks in by_host.items():
        if len(ranks) == len(placement.host_ranks(host)) and len(ranks) > 1:
            votes.append(Vote(host, 0.8, "silence", host_cause(host), cause_share=SECONDHAND_CAUSE_SHARE))
        else:
            # A rank alone gone quiet on a host whose other ranks talk: its process stopped
            # (a dataloader deadlock, a crash) unless hardware on its GPU says otherwise.
            for rank in ranks:
                gpu = placement.rank_to_gpu(rank)
                assert gpu is not None  # as above
                votes.append(Vote(gpu, 0.6 / len(ranks), "silence", "software_bug", cause_share=SECONDHAND_CAUSE_SHARE))
    return votes


def came_back_broken(items: Sequence[Item], lost_hosts: Iterable[Item]) -> list[Vote]:
    """A host that went quiet and, once back, failed a part outright (a GPU that will not
    initialise at boot): that part is why it went down, however long the reboot took, so it
    is weighed in full, not by its distance from the hang."""
    quiet_since: dict[str, datetime] = {}
    for item in lost_hosts:
        if (item.event.get("attrs") or {}).get("state") == "lost":
            host = item.event["host"]
            quiet_since[host] = min(item.time, quiet_since.get(host, item.time))
    return [Vote(item.component, item.signal.weight, "came_back_broken", item.signal.cause, [item.id])
            for item in items
            if item.event["host"] in quiet_since and item.time > quiet_since[item.event["host"]]
            and item.component and "/" in item.component and item.signal.role == "fault"
            and item.event.get("rank") is None]  # the driver's own report, not a process's echo


# A whole host that went quiet without a word (its agent died with it): the host itself,
# its board or power; `cpu` and the like win where its last lines name them.
SILENT_HOST_CAUSE = "chassis"
# Exceptions raised this close to the first one are the same failure seen on several ranks.
SAME_FAILURE = timedelta(seconds=30)


def exceptions(symptoms: Sequence[Item], placement: Placement | None) -> list[Vote]:
    """A rank's own exception (a Python traceback: CUDA out of memory, an illegal memory
    access, a failed assertion) is the root of the timeouts that follow on the other ranks:
    its process died, so they waited for it. The first raisers share the blame."""
    raised = sorted((i for i in symptoms if i.event["kind"] in ("job_fail", "nccl_error") and i.event.get("rank") is not None
                     and i.signal.cause not in ("nccl_watchdog", "unknown")), key=lambda i: (i.time, i.id))
    if not raised:
        return []
    first = [i for i in raised if i.time - raised[0].time <= SAME_FAILURE]
    votes = []
    for item in first:
        rank = item.event["rank"]
        target = (placement.rank_to_gpu(rank) if placement else None) or item.component or item.event["host"]
        votes.append(Vote(target, 1.5 / len(first), "exception", item.signal.cause, [item.id]))
    return votes


def sequence_lag(symptoms: Sequence[Item], placement: Placement | None) -> list[Vote]:
    """Flight-recorder reasoning: within a process group, the rank whose last collective
    sequence number is behind everyone else's never arrived at the collective they wait on."""
    last: dict[str, dict[int, tuple[int, str]]] = defaultdict(dict)
    for item in symptoms:
        attrs = item.event.get("attrs") or {}
        rank = item.event.get("rank")
        if rank is None:
            rank = attrs.get("rank")
        if item.event["kind"] != "nccl_timeout" or rank is None or not isinstance(attrs.get("seq"), int):
            continue
        group = str(attrs.get("pg", ""))
        if rank not in last[group] or attrs["seq"] > last[group][rank][0]:
            last[group][rank] = (attrs["seq"], item.id)
    votes = []
    for ranks in last.values():
        if len(ranks) < 3:
            continue
        leading = Counter(seq for seq, _ in ranks.values()).most_common(1)[0][0]
        laggards = [(rank, event_id) for rank, (seq, event_id) in ranks.items() if seq < leading]
        if not laggards or len(laggards) > max(1, len(ranks) // 10):
            continue
        for rank, event_id in laggards:
            gpu = placement.rank_to_gpu(rank) if placement else None
            if gpu:
                votes.append(Vote(gpu, 0.9 / len(laggards), "sequence_lag", "software_bug", [event_id]))
    return votes


def peers(symptoms: Sequence[Item], resolver: Peers | None, placement: Placement | None) -> list[Vote]:
    """NET/IB and socket errors name the far end; a peer named by several reporters is suspect."""
    if resolver is None:
        return []
    named: dict[str, set[str]] = defaultdict(set)
    evidence: dict[str, list[str]] = defaultdict(list)
    for item in symptoms:
        peer = (item.event.get("attrs") or {}).get("peer")
        if item.event["kind"] != "nccl_error" or peer is None:
            continue
        target = resolver.peer(str(peer), placement)
        if target and target != item.event["host"]:
            named[target].add(item.event["host"])
            evidence[target].append(item.id)
    reporters = len({item.event["host"] for item in symptoms if item.event["kind"] == "nccl_error"})
    # Several NICs of one host named at once: the host behind them stopped, not each NIC.
    by_host: dict[str, list[str]] = defaultdict(list)
    for target in named:
        if "/" in target and "~" not in target:
            by_host[target.split("/", 1)[0]].append(target)
    for host, nics in by_host.items():
        if len(nics) >= 2:
            for nic in nics:
                named[host] = named.get(host, set()) | named.pop(nic)
                evidence[host] = evidence.get(host, []) + evidence.pop(nic)
    votes = []
    for target, hosts in named.items():
        if len(hosts) >= 2 or reporters == 1:
            votes.append(Vote(target, 0.5 * len(hosts) / max(1, reporters), "peers", None, evidence[target][:20]))
    return votes
