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

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from faultgraph.attribution import diagnose as reasoning
from faultgraph.attribution import engine
from faultgraph.attribution.cluster import ClusterSnapshot
from faultgraph.attribution.placement import Placement
from faultgraph.ingest import paste
from faultgraph.service.diagnose.models import DiagnoseBody, DiagnoseBodyAdapter
from faultgraph.service.events.service import BodyError, format_time

JOB_ID = "pasted-job"
# Places that name no machine: the answer then says how to give it one.
UNPLACED = ("rank", "pci:", "pid ", "the ", "this ")
MAX_INCIDENTS = 5


def decode(body: bytes, *, content_type: str, host: str | None, max_lines: int) -> DiagnoseBody:
    """The JSON body `{"lines", "host"?, "job"?}`, or plain text with `?host=`; BodyError
    naming the problem when it is neither."""
    if "json" in content_type or ("text/" not in content_type and body.lstrip()[:1] == b"{"):
        try:
            parsed = DiagnoseBodyAdapter.validate_json(body)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "body"
            raise BodyError(f'{where}: {first["msg"]} (expected {{"lines": [...], "host"?: ..., "job"?: {{"hosts": [...]}}}})', 422) from None
    else:
        lines = body.decode("utf-8", errors="replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        try:
            parsed = DiagnoseBodyAdapter.validate_python({"lines": lines, "host": host})
        except ValidationError as exc:
            first = exc.errors()[0]
            raise BodyError(f"{'.'.join(map(str, first['loc']))}: {first['msg']}", 422) from None
    if len(parsed["lines"]) > max_lines:
        raise BodyError(f"{len(parsed['lines'])} lines exceed the limit of {max_lines}; paste the part around the failure", 413)
    return parsed


def _job(body: DiagnoseBody) -> tuple[dict | None, Placement | None]:
    job = body.get("job")
    if not job:
        return None, None
    spec = {"id": job.get("id") or JOB_ID, "hosts": job["hosts"], "gpus_per_host": job.get("gpus_per_host", 8),
            **({"parallelism": job["parallelism"]} if job.get("parallelism") else {})}
    try:
        return spec, Placement.from_job(spec)
    except ValueError as exc:
        raise BodyError(f"job: {exc}", 422) from None


def diagnose(body: DiagnoseBody, *, received: datetime) -> dict[str, Any]:
    """The answer to one paste: `{"incidents": [...], "events": n, "unmatched": n, "lines": n}`."""
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
    events = sorted(read.events, key=lambda e: (e["time"], e["id"]))
    if job:
        for event in events:
            event["job"] = job["id"]
    drafts = engine.analyse(events, ClusterSnapshot(None, [job] if job else []))
    findings = [
        *reasoning.signatures(read.lines),
        *reasoning.hardware(events),
        *reasoning.elided_xids(read.lines, {_line_no(e["id"]) for e in events}),
        *reasoning.stacks(read.blocks),
        *reasoning.hung_tasks(read.blocks),
        *reasoning.silent_ranks(events, placement),
        *reasoning.config_change(read.lines, events),
        *_from_engine(drafts, read),
    ]
    ranked = reasoning.rank(findings)
    if not ranked and drafts:
        ranked = [_unexplained(drafts, read)]
    # the hosts the paste names: its events' (syslog headers included) and its prefixes'
    named_hosts = {e["host"] for e in events} | {line.stream[0] for line in read.lines if line.stream[0]}
    named_hosts.discard(paste.UNNAMED_HOST)
    incidents = [_incident(f, ranked, read, events, job, placement, named_hosts) for f in ranked[:MAX_INCIDENTS]]
    return {"incidents": incidents, "events": len(events), "unmatched": read.unmatched, "lines": len(read.lines)}


def _line_no(event_id: str) -> int:
    return int(event_id.removeprefix("line-"))


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
                                      action=draft.action.get("detail", "")))
    return found


def _unexplained(drafts: Sequence[engine.Draft], read: paste.Paste) -> reasoning.Finding:
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
    host = finding.place.split("/", 1)[0] if not finding.place.startswith(UNPLACED) else None
    if finding.category in ("gpu", "host") or (finding.cause == "dependency" and host and finding.rule != "odd_stack"):
        kind = "evict"
    elif finding.category == "network":
        kind = "replace" if "~" in finding.place else "evict"
    else:
        kind = "restart"
    return {"kind": kind, "target": host or finding.place if kind != "restart" else (job or {}).get("id") or finding.place,
            "detail": finding.action}


def _incident(finding: reasoning.Finding, ranked: Sequence[reasoning.Finding], read: paste.Paste,
              events: Sequence[dict], job: dict | None, placement: Placement | None,
              named_hosts: set[str]) -> dict[str, Any]:
    total = sum(f.score for f in ranked) or 1.0
    cited = sorted(set(finding.lines))
    by_index = {i: read.lines[i] for i in cited if 0 <= i < len(read.lines)}
    # A paste without timestamps has no clock: its synthesised times keep the order but
    # say nothing about when, so only the lines' own times open an incident.
    first = min((by_index[i].time for i in cited if i in by_index and by_index[i].stamped), default=None)
    symptoms = [e for e in events if e["kind"] in ("nccl_timeout", "nccl_error")]
    missing = list(finding.missing)
    if finding.place.startswith(UNPLACED):
        missing.append("the lines name no host: pass `host` (CLI --host) or the job's hosts so the answer can name the machine")
    kinds = {e["kind"] for e in events if _line_no(e["id"]) in cited}
    return {
        "opened": format_time(first),
        "closed": None,
        "type": "interruption",
        "job": job["id"] if job else None,
        "symptoms": len(symptoms),
        "hosts": len(named_hosts),
        "root_cause": {
            "component": finding.place,
            "kind": min(kinds) if kinds else None,
            "category": finding.category,
            "cause": finding.cause,
            "confidence": round(finding.score / total * min(1.0, finding.score), 4),
            "evidence": [f"line-{i}" for i in cited],
            "explanation": finding.explanation,
            "rule": finding.rule,
        },
        "candidates": [{"component": f.place, "score": round(f.score / total, 4)} for f in ranked[:5]],
        "action": _action(finding, job),
        "interruption": {"start": format_time(first), "end": None, "gpus": placement.world_size if placement else None,
                         "gpu_hours_lost": 0.0},
        "lines": [{"line": i + 1, "text": by_index[i].raw} for i in cited if i in by_index],
        "missing": missing,
    }
