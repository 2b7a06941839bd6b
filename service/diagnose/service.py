"""Diagnose pasted lines: read them as a document, run the engine and the paste rules,
answer ranked incidents that quote the lines that decided them. Stores nothing.

The engine (`attribution.engine.analyse`) sees the same events live ingest would make of
the lines and groups them into interruptions; `attribution.diagnose` adds what only a
whole document shows (stacks, hung-task traces, ranks that stayed silent). Both conclude
`Finding`s; the answer is one incident per place, most likely first, in the SPEC §5 shape
without `id`/`status`, each with `lines` (the quoted lines, 1-based) and `missing` (what to
look at that the paste does not hold).
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from faultgraph.attribution import diagnose as reasoning
from faultgraph.attribution import engine
from faultgraph.attribution.classify import classify
from faultgraph.attribution.cluster import ClusterSnapshot
from faultgraph.attribution.placement import Placement
from faultgraph.attribution.resolve import Resolver
from faultgraph.ingest import paste
from faultgraph.service.diagnose.models import DiagnoseBody, DiagnoseBodyAdapter
from faultgraph.service.events.models import EARLIEST, LATEST
from faultgraph.service.events.service import BodyError, format_time
from faultgraph.service.http import first_error, is_json, text_lines

JOB_ID = "pasted-job"
# Places that name no machine: the answer then says how to give it one.
UNPLACED = ("rank", "pci:", "pid ", "the ", "this ")
MAX_INCIDENTS = 5
# The parts of a host SPEC §2 names: without a topology, the resolver's conventions make
# anything after `host/` an id, so only these are kept (a `pci:` or `pid` place is its host).
CONVENTIONAL_PART = re.compile(r"(?:gpu|nvswitch|nic|pciesw|cpu)\d+")
# Rules that read kernel hardware lines only: alone (no job's symptom in the paste) a fault.
HARDWARE_RULES = {"hardware", "elided_xid"}


def decode(body: bytes, *, content_type: str, host: str | None, max_lines: int) -> DiagnoseBody:
    """The JSON body `{"lines", "host"?, "job"?}`, or plain text with `?host=`; BodyError
    naming the problem when it is neither."""
    if is_json(body, content_type):
        try:
            parsed = DiagnoseBodyAdapter.validate_json(body)
        except ValidationError as exc:
            where, what = first_error(exc)
            raise BodyError(f'{where}: {what} (expected {{"lines": [...], "host"?: ..., "job"?: {{"hosts": [...]}}}})', 422) from None
    else:
        try:
            parsed = DiagnoseBodyAdapter.validate_python({"lines": text_lines(body), "host": host})
        except ValidationError as exc:
            where, what = first_error(exc)
            raise BodyError(f"{where}: {what}", 422) from None
    if len(parsed["lines"]) > max_lines:
        raise BodyError(f"{len(parsed['lines'])} lines exceed the limit of {max_lines}; paste the part around the failure", 413)
    return parsed


# The most ranks a pasted job may place: 32,768 hosts of 8 GPUs, which a paste reads in
# about a second; a claimed 2 million (32,768 × 64) took five, a cost any reader could ask for.
MAX_RANKS = 262_144


def _job(body: DiagnoseBody) -> tuple[dict | None, Placement | None]:
    job = body.get("job")
    if not job:
        return None, None
    hosts, per_host = job["hosts"], job.get("gpus_per_host", 8)
    if len(hosts) * per_host > MAX_RANKS:
        raise BodyError(f"job: {len(hosts) * per_host:,} ranks ({len(hosts):,} hosts × {per_host}) exceed the "
                        f"{MAX_RANKS:,} a paste may place", 422)
    spec = {"id": job.get("id") or JOB_ID, "hosts": hosts, "gpus_per_host": per_host,
            **({"parallelism": job["parallelism"]} if job.get("parallelism") else {})}
    try:
        return spec, Placement.from_job(spec)
    except ValueError as exc:
        raise BodyError(f"job: {exc}", 422) from None


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Reading a paste makes several objects per line, all freed by reference counting;
    the cyclic collector would scan the growing heap again and again (half the time of a
    100,000-line paste). Paused for one paste, resumed after (it is process-wide: a
    concurrent request meanwhile only collects later)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def diagnose(body: DiagnoseBody, *, received: datetime, resolver: Resolver | None = None) -> dict[str, Any]:
    """The answer to one paste: `{"incidents": [...], "events": n, "unmatched": n, "lines": n}`.
    `resolver`: the server's, so components get the ids stored events get; without one
    (the command) the resolver's naming conventions."""
    with _cyclic_gc_paused():
        return _diagnose(body, received=received, resolver=resolver or Resolver(None))


def _snapshot(resolver: Resolver, job: dict | None) -> ClusterSnapshot:
    """The engine's cluster: the resolver's topology and the pasted job. The server's
    resolver is reused: indexing its topology again would cost more than most pastes."""
    snapshot = ClusterSnapshot(None, [job] if job else [])
    snapshot.topology, snapshot.resolver = resolver.topology, resolver
    return snapshot


def _enrich(event: dict, resolver: Resolver, placement: Placement | None) -> None:
    """The component ingest would store for the event (`service.cluster.Cluster.enrich`);
    none on a line with no host, whose placeholder host is no machine."""
    if event["host"] == paste.UNNAMED_HOST:
        return
    explicit = event.get("component")
    found = resolver.canonical(explicit) if explicit else resolver.resolve(event, placement)
    if found is not None:
        event["component"] = found


def _diagnose(body: DiagnoseBody, *, received: datetime, resolver: Resolver) -> dict[str, Any]:
    job, placement = _job(body)
    raw: list[str] = []
    hosts: list[str | None] = []
    for item in body["lines"]:
        if isinstance(item, str):
            raw.append(item)
            hosts.append(None)
        else:
            raw.append(item["line"])
            hosts.append(item.get("host"))
    read = paste.read(raw, host=body.get("host"), hosts=hosts, received=received,
                      host_of_rank=placement.host_of if placement else None)
    # A line dated outside the years the store keeps is no event, as /v1/logs refuses it (one
    # stamped 9999-12-31 overflowed the engine's look-ahead): it counts as matching no rule.
    events = sorted((e for e in read.events if EARLIEST <= e["time"] < LATEST), key=lambda e: (e["time"], e["id"]))
    undated = len(read.events) - len(events)
    for event in events:
        if job:
            event["job"] = job["id"]
        _enrich(event, resolver, placement)
    drafts = engine.analyse(events, _snapshot(resolver, job))
    candidates = reasoning.candidates(read.lines)
    findings = [
        *reasoning.signatures(candidates),
        *reasoning.hardware(events),
        *reasoning.elided_xids(candidates, {_line_no(e["id"]) for e in events}),
        *reasoning.stacks(read.blocks),
        *reasoning.hung_tasks(read.blocks),
        *reasoning.silent_ranks(events, placement),
        *reasoning.config_change(candidates, events),
        *_from_engine(drafts, read),
    ]
    ranked = reasoning.rank(_placed(findings, resolver))
    if not ranked and drafts:
        ranked = _placed([_unexplained(drafts)], resolver)
    types = _engine_types(drafts)
    stopped = any(classify(e).role in ("symptom", "maintenance") for e in events)
    # the hosts the paste names: its events' (syslog headers included) and its prefixes'
    named_hosts = {e["host"] for e in events} | {line.stream[0] for line in read.lines if line.stream[0]}
    named_hosts.discard(paste.UNNAMED_HOST)
    incidents = [_incident(f, ranked, read, events, job, placement, named_hosts, _type(f, types, stopped=stopped))
                 for f in ranked[:MAX_INCIDENTS]]
    return {"incidents": incidents, "events": len(events), "unmatched": read.unmatched + undated, "lines": len(read.lines)}


def _line_no(event_id: str) -> int:
    return int(event_id.removeprefix("line-"))


def _placed(findings: list[reasoning.Finding], resolver: Resolver) -> list[reasoning.Finding]:
    """The findings with their places as canonical ids, so findings about one part merge."""
    for finding in findings:
        finding.place = _canonical(finding.place, resolver)
    return findings


def _canonical(place: str, resolver: Resolver) -> str:
    """A finding's place as the id ingest would store (SPEC §2): through the topology where
    there is one, else by the resolver's conventions; a part nothing maps is its host. Places
    that name no machine (`UNPLACED`) stay as they are: `_component` answers them as null."""
    if place.startswith(UNPLACED):
        return place
    host, _, part = place.partition("/")
    found = resolver.canonical(place) if part or "~" in place else resolver.peer(place)
    found_part = (found or "").partition("/")[2]
    if found is not None and (resolver.topology is not None or not found_part or CONVENTIONAL_PART.fullmatch(found_part)):
        return found
    return resolver.host(host) or host


def _component(place: str) -> str | None:
    """The answer's component: null for a place that names no machine (a rank no job places)."""
    return None if place.startswith(UNPLACED) else place


def _engine_types(drafts: Sequence[engine.Draft]) -> dict[int, str]:
    """Line → the engine's type (SPEC §5) of the incident it is part of; where a line is in
    several, an interruption's wins."""
    types: dict[int, str] = {}
    for draft in sorted(drafts, key=lambda d: d.type == "interruption"):
        for item in (*draft.members, *draft.evidence):
            types[_line_no(item.id)] = draft.type
    return types


def _type(finding: reasoning.Finding, types: dict[int, str], *, stopped: bool) -> str:
    """The engine's type for the lines it placed in time. Lines without times of their own
    open no engine incident; for them its criterion: a job's symptom in the paste (`stopped`)
    or a job's own output (stacks, errors) is an interruption, kernel hardware lines alone a fault."""
    found = {types[i] for i in finding.lines if i in types}
    if found:
        return "interruption" if "interruption" in found else min(found)
    return "fault" if not stopped and set(finding.rule.split("+")) <= HARDWARE_RULES else "interruption"


def _from_engine(drafts: Sequence[engine.Draft], read: paste.Paste) -> list[reasoning.Finding]:
    """The engine's roots where it found one on hardware (an XID, a NIC, a switch). Its
    sentence names the time of the first evidence: kept only when that line had one."""
    found = []
    for draft in drafts:
        root = draft.root_cause
        if not root.get("component") or root["category"] == "unknown" or root["component"] == paste.UNNAMED_HOST:
            continue
        lines = [_line_no(i) for i in root["evidence"]]
        timed = all(read.lines[i].stamped for i in lines)
        explanation = root["explanation"] if timed else f"{root['component']}: {root['cause'].replace('_', ' ')} ({root['kind']})"
        found.append(reasoning.Finding(place=root["component"], cause=root["cause"], score=0.6 * root["confidence"],
                                      rule="engine", lines=lines, explanation=explanation,
                                      action=draft.action.get("detail", ""), action_kind=draft.action.get("kind")))
    return found


def _unexplained(drafts: Sequence[engine.Draft]) -> reasoning.Finding:
    """Symptoms only (timeouts, NCCL errors) with nothing that says why."""
    members = [_line_no(item.id) for draft in drafts for item in draft.members]
    hosts = sorted({item.event["host"] for draft in drafts for item in draft.members} - {paste.UNNAMED_HOST})
    where = f" from {', '.join(hosts[:8])}" if hosts else ""
    return reasoning.Finding(place=hosts[0] if len(hosts) == 1 else "the job", cause="nccl_watchdog", score=0.1,
                            rule="symptoms_only", lines=members[:20],
                            explanation=f"{len(members)} symptom line(s){where} (collective timeouts or NCCL errors) and nothing that names a cause",
                            action="restart the job from its last checkpoint",
                            missing=[f"no kernel log{where or ' from the hosts'}: check `dmesg` there for XIDs, ECC and link errors",
                                     "no py-spy dump: run `py-spy dump --pid` on every rank while it hangs to find the odd one out"])


def _action(finding: reasoning.Finding, job: dict | None) -> dict[str, str | None]:
    component = _component(finding.place)
    host = component.split("/", 1)[0] if component else None
    if finding.action_kind:
        kind = finding.action_kind
    elif finding.category in ("gpu", "host") or (finding.cause == "dependency" and host and finding.rule != "odd_stack"):
        kind = "evict"
    elif finding.category == "network":
        kind = "replace" if "~" in finding.place else "evict"
    else:
        kind = "restart"
    return {"kind": kind, "target": host if kind != "restart" else (job or {}).get("id") or component,
            "detail": finding.action}


def _incident(finding: reasoning.Finding, ranked: Sequence[reasoning.Finding], read: paste.Paste,
              events: Sequence[dict], job: dict | None, placement: Placement | None,
              named_hosts: set[str], kind_of_incident: str) -> dict[str, Any]:
    total = sum(f.score for f in ranked) or 1.0
    cited = sorted(set(finding.lines))
    by_index = {i: read.lines[i] for i in cited if 0 <= i < len(read.lines)}
    # A paste without timestamps has no clock: its synthesised times keep the order but
    # say nothing about when, so only the lines' own times open an incident.
    first = min((by_index[i].time for i in cited if i in by_index and by_index[i].stamped), default=None)
    symptoms = [e for e in events if e["kind"] in ("nccl_timeout", "nccl_error")]
    missing = list(finding.missing)
    if finding.place.startswith(UNPLACED):
        missing.append(f"the lines name no host for {finding.place}: pass `host` (CLI --host) or the job's hosts so the answer can name the machine")
    kinds = {e["kind"] for e in events if _line_no(e["id"]) in cited}
    return {
        "opened": format_time(first),
        "closed": None,
        "type": kind_of_incident,
        "job": job["id"] if job else None,
        "symptoms": len(symptoms),
        "hosts": len(named_hosts),
        "root_cause": {
            "component": _component(finding.place),
            "kind": min(kinds) if kinds else None,
            "category": finding.category,
            "cause": finding.cause,
            "confidence": round(finding.score / total * min(1.0, finding.score), 4),
            "evidence": [f"line-{i}" for i in cited],
            "explanation": finding.explanation,
            "rule": finding.rule,
        },
        "candidates": [{"component": f.place, "score": round(f.score / total, 4)} for f in ranked[:5]
                       if _component(f.place)],
        "action": _action(finding, job),
        "interruption": {"start": format_time(first), "end": None, "gpus": placement.world_size if placement else None,
                         "gpu_hours_lost": 0.0},
        "lines": [{"line": i + 1, "text": by_index[i].raw} for i in cited if i in by_index],
        "missing": missing,
    }
