"""Reasoning over pasted logs: what an engineer who reads them would conclude.

Live ingest sees events one by one from agents that know their host; a paste is the other
way round — no topology, often no host, no clock, but multi-line facts the engine never
sees: a py-spy stack per process, a kernel hung-task trace, a C++ `what():`, NCCL's last
error. Each rule here is a pure function of the read paste (`ingest/paste.py`) to
`Finding`s: a place, a SPEC §6 cause, a weight, the lines that decided it, and what is
missing to be sure. `rank` merges findings about the same place and orders them. The
signatures and stack vocabularies are data, in `diagnose.toml` next to this file.

Rules: `signatures` (lines that mean one thing: a fabric manager not running, an ECC error,
a refused peer), `hardware` (the catalogue's fault events, placed on the GPU and link they
name), `stacks` (the odd stack out in a py-spy dump of many processes, or one blocked on
its DataLoader), `hung_tasks` (a process blocked in a cluster filesystem's write path),
`silent_ranks` (the ranks that did not time out, or lag in sequence, while the others did).
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from faultgraph.attribution.classify import SEVERITY_WEIGHT, classify
from faultgraph.attribution.placement import Placement
from faultgraph.ingest import catalogue
from faultgraph.ingest.causes import category_of
from faultgraph.ingest.paste import UNNAMED_HOST, Block, Line

RULES_FILE = Path(__file__).with_name("diagnose.toml")


@dataclass(frozen=True)
class Signature:
    id: str
    keywords: tuple[str, ...]
    regex: re.Pattern[str]
    cause: str
    place: str
    weight: float
    meaning: str
    action: str
    missing: str
    source: str


@dataclass(frozen=True)
class Change:
    """A line that says the host's GPU stack changed (driver, fabric manager, packages)."""

    id: str
    keywords: tuple[str, ...]
    regex: re.Pattern[str]
    what: str
    source: str


@dataclass(frozen=True)
class Rules:
    signatures: tuple[Signature, ...]
    changes: tuple[Change, ...]
    change_keywords: re.Pattern[str]
    any_keyword: re.Pattern[str]  # every line rule's keywords: the lines worth a rule's look
    stack: dict[str, tuple[str, ...]]
    keywords: re.Pattern[str]  # every signature's keywords in one search: most lines hold none


@dataclass
class Finding:
    """One conclusion: `place` is a component id (`node7`, `node7/gpu3`, `node7/pci:0000:3b:00`),
    a peer address or `rank<N>` when the paste names no host for the rank."""

    place: str
    cause: str
    score: float
    rule: str
    lines: list[int]
    explanation: str
    action: str = ""
    missing: list[str] = field(default_factory=list)
    # The engine's action kind where the engine decided it (it weighs evicting against a
    # restart on a spare with the job in view); else the answer derives one from the cause.
    action_kind: str | None = None

    @property
    def category(self) -> str:
        return category_of(self.cause)


@cache
def rules() -> Rules:
    """The shipped signatures and stack vocabularies, read and checked once."""
    data = tomllib.loads(RULES_FILE.read_text())
    signatures = []
    for s in data["signature"]:
        if category_of(s["cause"]) == "unknown" and s["cause"] != "unknown":
            raise ValueError(f"diagnose.toml {s['id']}: cause {s['cause']!r} is not a SPEC §6 cause")
        if s["place"] not in ("host", "gpu", "peer"):
            raise ValueError(f"diagnose.toml {s['id']}: place {s['place']!r} is not host, gpu or peer")
        signatures.append(Signature(id=s["id"], keywords=tuple(s["keyword"]), regex=re.compile(s["regex"]), cause=s["cause"], place=s["place"],
                                    weight=float(s["weight"]), meaning=s["meaning"], action=s["action"],
                                    missing=s["missing"], source=s["source"]))
    keywords = re.compile("|".join(re.escape(k) for s in signatures for k in s.keywords))
    changes = tuple(Change(c["id"], tuple(c["keyword"]), re.compile(c["regex"]), c["what"], c["source"])
                    for c in data["change"])
    change_keywords = re.compile("|".join(re.escape(k) for c in changes for k in c.keywords))
    every = [k for s in signatures for k in s.keywords] + [k for c in changes for k in c.keywords] + ["Xid"]
    return Rules(tuple(signatures), changes, change_keywords, re.compile("|".join(map(re.escape, every))),
                 {name: tuple(words) for name, words in data["stack"].items()}, keywords)


def _host(line_host: str | None) -> str | None:
    return None if line_host in (None, UNNAMED_HOST) else line_host


def _gpu_place(host: str | None, local_rank: int | None, pci: str | None, rank: int | None) -> str:
    """The most precise place a line gives for a GPU."""
    if pci:
        pci = pci.lower()
        return f"{host}/pci:{pci}" if host else f"pci:{pci}"
    if host and local_rank is not None:
        return f"{host}/gpu{local_rank}"
    if host:
        return host
    return f"rank{rank}" if rank is not None else "the GPU of this job"


def _fill(template: str, **names: str | None) -> str:
    return template.format_map({k: v or "that host" for k, v in names.items()})


def candidates(lines: Sequence[Line]) -> list[Line]:
    """The lines any line rule (`signatures`, `config_change`, `elided_xids`) could want:
    one keyword pass over a large paste instead of one per rule."""
    keyword = rules().any_keyword
    return [line for line in lines if keyword.search(line.text)]


def signatures(lines: Sequence[Line]) -> list[Finding]:
    """Lines that on their own say what broke and where."""
    found = []
    loaded = rules()
    for line in lines:
        if not loaded.keywords.search(line.text):
            continue
        for sig in loaded.signatures:
            m = any(k in line.text for k in sig.keywords) and sig.regex.search(line.text)
            if not m:
                continue
            groups = m.groupdict()
            host = _host(line.host)
            if sig.place == "peer" and groups.get("peer"):
                place = groups["peer"]
            elif sig.place == "gpu":
                place = _gpu_place(host, line.local_rank, groups.get("pci"), line.rank)
            else:
                place = host or "the host this ran on"
            what = f"{sig.meaning}" + (f" ({groups['why']})" if groups.get("why") else "")
            found.append(Finding(place=place, cause=sig.cause, score=sig.weight, rule=sig.id, lines=[line.index],
                                 explanation=what, action=_fill(sig.action, host=host, peer=groups.get("peer")),
                                 missing=[_fill(sig.missing, host=host, peer=groups.get("peer"))]))
            break
    return found


def hardware(events: Iterable[dict]) -> list[Finding]:
    """The catalogue's hardware events (XIDs, SXids, AER, MCE, EDAC…), on the GPU and link
    they name: faults at their weight, lesser evidence (a corrected error) at half of it —
    in a paste that holds nothing worse, a burst of corrected errors is still the answer."""
    found = []
    for event in events:
        signal = classify(event)
        if signal.role not in ("fault", "evidence") or signal.weight < 0.1:
            continue
        attrs = event.get("attrs") or {}
        host = _host(event["host"])
        place = event.get("component") or _gpu_place(host, attrs.get("local_rank"), attrs.get("pci"), event.get("rank"))
        code = f" XID {attrs['xid']}" if "xid" in attrs else f" SXid {attrs['sxid']}" if "sxid" in attrs else ""
        link = f", NVLink {attrs['link']}" if "link" in attrs else ""
        found.append(Finding(place=place, cause=signal.cause, score=signal.weight * (1.0 if signal.role == "fault" else 0.5),
                             rule="hardware", lines=[int(event["id"].removeprefix("line-"))],
                             explanation=f"{event['kind']}{code}{link}: {signal.cause.replace('_', ' ')}",
                             action=f"drain {host or 'the host'} and repair {place}",
                             missing=[] if host else ["the lines name no host: pass the host they came from"]))
    return found


# What a failure at a job's first collectives looks like: NCCL's own warnings and errors,
# or a watchdog timeout in one of the first collectives (sequence numbers start at 1).
FIRST_COLLECTIVES = 3


def _early_failure(event: dict) -> bool:
    attrs = event.get("attrs") or {}
    if event["kind"] == "nccl_error":
        return True
    return event["kind"] == "nccl_timeout" and isinstance(attrs.get("seq"), int) and attrs["seq"] <= FIRST_COLLECTIVES


def config_change(lines: Sequence[Line], events: Sequence[dict]) -> list[Finding]:
    """A job whose first collectives fail after its host's driver or fabric manager
    changed (in the same paste, earlier): the host's configuration, not its hardware."""
    loaded = rules()
    changes = [(line, change, m) for line in lines if loaded.change_keywords.search(line.text)
               for change in loaded.changes if (m := change.regex.search(line.text))]
    if not changes:
        return []
    failures = sorted(int(e["id"].removeprefix("line-")) for e in events if _early_failure(e))
    found = []
    for line, change, m in changes:
        after = [i for i in failures if i > line.index]
        if not after:
            continue
        host = _host(line.host)
        what = change.what.format_map({k: v or "" for k, v in m.groupdict().items()})
        place = host or "the host this ran on"
        found.append(Finding(place=place, cause="dependency", score=0.7, rule="config_change",
                             lines=[line.index, after[0]],
                             explanation=f"{what} on {place}, then the job's first collectives failed: "
                                         f"the host's configuration changed under it",
                             action=f"reboot {place} (or reset its GPUs) so driver, fabric manager and libraries are in step, then rerun",
                             missing=[f"no fabric manager log from {place}: check `journalctl -u nvidia-fabricmanager` there"]))
    return found


# An XID line whose bus id the paster elided or cut (`PCI:...`, `PCI:0000:...`): the
# catalogue's rule wants a whole address, so the code alone has to say what happened.
_ELIDED_XID = re.compile(r"NVRM: Xid \(PCI:(?P<pci>[^)]*)\):? (?P<xid>\d+)")
_LINK = re.compile(r"[Ll]ink (?P<link>\d+)")


def elided_xids(lines: Sequence[Line], parsed: set[int]) -> list[Finding]:
    """XIDs the parsers could not read for an elided bus id: the XID catalogue's cause and
    severity, on the host (and link) the line names."""
    found = []
    for line in lines:
        if line.index in parsed or "Xid" not in line.text or not (m := _ELIDED_XID.search(line.text)):
            continue
        entry = catalogue.xid(int(m.group("xid")))
        if entry is None or entry.severity in ("info", "debug"):
            continue
        host = _host(line.host)
        link = _LINK.search(line.text[m.end():])
        where = f", NVLink {link.group('link')}" if link and entry.cause == "nvlink" else ""
        found.append(Finding(place=host or "the GPU this ran on", cause=entry.cause,
                             score=SEVERITY_WEIGHT.get(entry.severity, 0.6) * (1.0 if entry.interrupts else 0.5),
                             rule="elided_xid", lines=[line.index],
                             explanation=f"XID {entry.code} ({entry.name}){where} on a GPU whose bus id the paste elides",
                             action=f"drain {host or 'the host'}; find the GPU with `nvidia-smi -q` or the full `dmesg` line",
                             missing=[f"the bus id is elided: check `dmesg | grep Xid` on {host or 'the host'} for the full PCI address of the GPU"]))
    return found


def _stack_class(frames: Sequence[str]) -> str:
    """Where a Python stack waits: in a collective, on data, in I/O, or elsewhere (compute)."""
    vocab = rules().stack
    text = " ".join(frames).lower()
    for name in ("collective", "data", "io"):
        if any(word.lower() in text for word in vocab[name]):
            return name
    return "other"


def stacks(blocks: Sequence[Block]) -> list[Finding]:
    """The odd stack out of a py-spy dump: one process waiting on its DataLoader (or in
    I/O, or computing) while its peers sit in a collective is the one they wait for."""
    mains: dict[tuple, Block] = {}
    for block in blocks:
        if block.kind != "pyspy":
            continue
        who = (block.attrs.get("pid"), block.lines[0].rank, block.lines[0].host, block.lines[0].local_rank)
        if who not in mains or block.attrs.get("thread") == "MainThread":
            mains[who] = block
    if not mains:
        return []
    classes = {who: _stack_class(block.frames) for who, block in mains.items()}
    counts = Counter(classes.values())
    found = []
    for who, block in mains.items():
        cls = classes[who]
        peers_waiting = counts["collective"] - (cls == "collective")
        if cls == "collective" or (counts[cls] > 1 and counts[cls] >= peers_waiting):
            continue
        line = block.lines[0]
        place = _process_place(line, block.attrs.get("pid"))
        cause = "dependency" if cls == "io" else "software_bug"
        innermost = block.frames[:3]
        why = {"data": "waits on its data pipeline (DataLoader queue)", "io": "is blocked in file I/O",
               "other": "is busy outside any collective"}[cls]
        peers = f" while {peers_waiting} other process(es) sit in a collective" if peers_waiting else ""
        score = 0.85 if peers_waiting else 0.6
        found.append(Finding(place=place, cause=cause, score=score, rule="odd_stack", lines=block.indices[:8],
                             explanation=f"{place} {why}{peers}: {' < '.join(innermost)}",
                             action=f"fix or bound what {place} waits for (a DataLoader worker, a file, a lock), then restart from the checkpoint",
                             missing=[] if peers_waiting else [f"no py-spy dump of the other ranks: run `py-spy dump --pid` on each to confirm they wait in a collective for {place}"]))
    return found


def _process_place(line: Line, pid: int | None) -> str:
    host = _host(line.host)
    if line.rank is not None:
        return f"{host}/rank{line.rank}" if host else f"rank{line.rank}"
    if host and line.local_rank is not None:
        return f"{host}/gpu{line.local_rank}"
    if pid is not None:
        return f"{host}/pid{pid}" if host else f"pid {pid}"
    return host or "this process"


def hung_tasks(blocks: Sequence[Block]) -> list[Finding]:
    """A task the kernel reports blocked: in a cluster filesystem's or the writeback path
    it is the host's storage (a dependency), in the GPU driver the GPU, else the host."""
    vocab = rules().stack
    found = []
    for block in blocks:
        if block.kind != "hung_task":
            continue
        frames = " ".join(block.frames).lower()
        host = _host(block.lines[0].host)
        place = host or "the host this ran on"
        task = f"{block.attrs['task']}:{block.attrs['pid']} blocked for {block.attrs['blocked_s']} s"
        if any(w in frames for w in vocab["cluster_fs"]):
            cause, score, where = "dependency", 0.85, "in a network/cluster filesystem"
        elif any(w in frames for w in vocab["writeback"]):
            cause, score, where = "dependency", 0.7, "writing back to a filesystem"
        elif any(w in frames for w in vocab["gpu_driver"]):
            cause, score, where = "faulty_gpu", 0.6, "in the NVIDIA driver"
        else:
            cause, score, where = "unknown", 0.3, "in the kernel"
        frames_shown = ", ".join(f for f in block.frames if f not in ("schedule", "__schedule"))[:160]
        found.append(Finding(place=place, cause=cause, score=score, rule="hung_task", lines=block.indices[:12],
                             explanation=f"{task} {where} ({frames_shown}): the host's storage stalls the job, not its GPU"
                             if cause == "dependency" else f"{task} {where} ({frames_shown})",
                             action=f"check the filesystem mounts and the storage servers {place} writes to; drain it if the mount stays hung",
                             missing=[f"no filesystem client log from {place}: check `dmesg | grep -iE 'nfs|lustre|LustreError'` and `mount` there"]))
    return found


def silent_ranks(events: Sequence[dict], placement: Placement | None) -> list[Finding]:
    """Ranks that did not time out while the others did, or whose last collective is
    behind everyone else's: the rest wait for them (still preprocessing, stuck in I/O, dead)."""
    timeouts = [e for e in events if e["kind"] == "nccl_timeout" and (e.get("attrs") or {}).get("rule") == "torch_watchdog_timeout"
                and e.get("rank") is not None]
    if len(timeouts) < 2:
        return []
    by_rank: dict[int, dict] = {}
    for event in timeouts:
        by_rank.setdefault(event["rank"], event)
    world = placement.world_size if placement else max(by_rank) + 1
    missing = [r for r in range(world) if r not in by_rank]
    seqs = Counter(e["attrs"].get("seq") for e in by_rank.values())
    leading = seqs.most_common(1)[0][0]
    lagging = [r for r, e in by_rank.items() if isinstance(e["attrs"].get("seq"), int)
               and isinstance(leading, int) and e["attrs"]["seq"] < leading]
    cited = sorted(int(e["id"].removeprefix("line-")) for e in by_rank.values())[:20]
    op = next(iter(by_rank.values()))["attrs"].get("op", "collective")
    found = []
    if missing and len(missing) <= max(1, world // 8):
        for rank in missing:
            place = (placement.rank_to_gpu(rank) if placement else None) or f"rank{rank}"
            found.append(Finding(place=place, cause="unknown", score=0.5 / len(missing), rule="silent_rank", lines=cited,
                                 explanation=f"rank {rank} is the only one of {world} that did not time out in {op} SeqNum {leading}: "
                                             f"the others waited for it (it was still preprocessing, stuck in I/O, or dead)",
                                 action=f"look at what rank {rank} was doing: its own output, its host's kernel log",
                                 missing=[f"no stack of rank {rank}: run `py-spy dump --pid` on its process while it hangs",
                                          f"no kernel log from rank {rank}'s host: check `dmesg` there"]))
    if lagging and len(lagging) <= max(1, len(by_rank) // 10):
        for rank in lagging:
            place = (placement.rank_to_gpu(rank) if placement else None) or f"rank{rank}"
            found.append(Finding(place=place, cause="software_bug", score=0.6 / len(lagging), rule="sequence_lag",
                                 lines=[int(by_rank[rank]["id"].removeprefix("line-"))],
                                 explanation=f"rank {rank} timed out in SeqNum {by_rank[rank]['attrs']['seq']} while the others are at {leading}: "
                                             f"it issued fewer collectives (a rank-dependent code path)",
                                 action="restart from the checkpoint and find the code path only that rank took",
                                 missing=[f"no stack of rank {rank}: run `py-spy dump --pid` on it"]))
    return found


def _host_of(place: str) -> str:
    return place.split("/", 1)[0]


def rank(findings: Iterable[Finding], *, reasons: int = 3) -> list[Finding]:
    """Findings about the same place (a host and its parts, the same rank) merged into the
    most specific one, their weights added, their first `reasons` explanations kept; its
    cause is the one most of its lines name (a generic "machine check events logged"
    yields to the EDAC lines that say memory). Most likely first."""
    merged: dict[str, Finding] = {}
    votes: dict[str, dict[str, list[float]]] = {}  # place key -> cause -> [lines, score]
    cited: dict[str, set[int]] = {}
    said: dict[str, list[str]] = {}
    for finding in sorted(findings, key=lambda f: -f.score):
        key = _host_of(finding.place)
        tally = votes.setdefault(key, {}).setdefault(finding.cause, [0.0, 0.0])
        tally[0] += len(finding.lines) if finding.cause not in ("unknown", "nccl_watchdog") else 0
        tally[1] += finding.score
        cited.setdefault(key, set()).update(finding.lines)
        if key not in merged:
            merged[key] = Finding(finding.place, finding.cause, finding.score, finding.rule, [],
                                  finding.explanation, finding.action, list(finding.missing), finding.action_kind)
            said[key] = [finding.explanation]
            continue
        into = merged[key]
        if finding.action_kind and not into.action_kind:  # the engine's decision, whoever found the place first
            into.action, into.action_kind = finding.action, finding.action_kind
        if finding.place.count("/") > into.place.count("/") and finding.place.startswith(into.place):
            into.place = finding.place
        if len(said[key]) < reasons and finding.explanation not in said[key] and finding.rule not in into.rule:
            said[key].append(finding.explanation)
        into.score += finding.score
        if finding.rule not in into.rule:
            into.rule = f"{into.rule}+{finding.rule}"
        into.missing += [m for m in finding.missing if m not in into.missing]
    for key, into in merged.items():
        into.cause = max(sorted(votes[key]), key=lambda cause: tuple(votes[key][cause]))
        into.lines = sorted(cited[key])
        into.explanation = "; ".join(text.rstrip(".") for text in said[key])
    return sorted(merged.values(), key=lambda f: (-f.score, f.place))
