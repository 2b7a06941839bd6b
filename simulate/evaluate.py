"""`faultgraph eval`: replay a simulated scenario through a running service and score the
incidents it produced against the scenario's ground truth.

Everything goes over the public API as a real cluster would send it: the topology
(`PUT /v1/topology`), the jobs (`POST /v1/jobs`), the hosts' log lines parsed at the
edge as the host agent parses them and the services' events (`POST /v1/events`); then
`POST /v1/analyze`, and the incidents are read back.
"""

import socket
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import httpx
import orjson

from faultgraph.ingest.parse import parse_line
from faultgraph.simulate.scenarios import Scenario

# An incident answers a fault when it is of the fault's job and its interruption began
# this close to the moment the fault broke the job (or to the fault's first trace).
MATCH_WINDOW = timedelta(minutes=20)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _check(answer: httpx.Response, what: str) -> dict:
    if answer.status_code >= 300:
        raise RuntimeError(f"{what}: HTTP {answer.status_code}: {answer.text[:500]}")
    return answer.json()


def replay(client: httpx.Client, scenario: Scenario, *, batch: int = 5000,
           progress: Callable[[int], None] | None = None) -> dict[str, int]:
    """Send a scenario to the service as its hosts would; returns what was sent and kept.

    Log lines are parsed at the edge, as `faultgraph agent` does, with the moment each
    was written as its receive time: lines that carry no timestamp of their own (NCCL's
    `WARN` lines) then land when they were written, not when the replay runs.
    """
    _check(client.put("/v1/topology", content=orjson.dumps(scenario.topology),
                      headers={"content-type": "application/json"}), "PUT /v1/topology")
    for job in scenario.jobs:
        _check(client.post("/v1/jobs", json=job), f"POST /v1/jobs {job['id']}")
    totals = {"lines": 0, "parsed": 0, "events": 0, "accepted": 0}
    pending: list[dict] = []

    def flush() -> None:
        answer = _check(client.post("/v1/events", content=orjson.dumps(pending),
                                    headers={"content-type": "application/json"}), "POST /v1/events")
        totals["events"] += len(pending)
        totals["accepted"] += answer["accepted"]
        if progress:
            progress(len(pending))
        pending.clear()

    for record in scenario.records:
        if record["type"] == "log":
            totals["lines"] += 1
            event = parse_line(record["line"], host=record["host"], source=record["source"], received=_time(record["time"]))
            if event is None:
                continue
            totals["parsed"] += 1
        else:
            event = record["event"]
        pending.append(event)
        if len(pending) >= batch:
            flush()
    if pending:
        flush()
    _check(client.post("/v1/analyze", timeout=600), "POST /v1/analyze")
    return totals


def incidents(client: httpx.Client) -> list[dict]:
    """Every incident, all pages."""
    found, cursor = [], None
    while True:
        page = _check(client.get("/v1/incidents", params={"limit": 1000, **({"cursor": cursor} if cursor else {})}),
                      "GET /v1/incidents")
        found += page["incidents"]
        if not (cursor := page["next"]):
            return found


@dataclass
class Row:
    """Scores of one fault mechanism."""

    faults: int = 0
    top1: int = 0
    top3: int = 0
    category: int = 0
    cause: int = 0  # the SPEC §6 cause (a Llama 3 row), finer than the category
    missed: int = 0
    split: int = 0
    decoy_blamed: int = 0


# Confidence bins of the reliability table: (low, high), high exclusive except the last.
CONFIDENCE_BINS = ((0.0, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, 0.9), (0.9, 1.0))


@dataclass
class Report:
    rows: dict[str, Row] = field(default_factory=dict)
    merged: int = 0
    spurious: int = 0
    misses: list[dict] = field(default_factory=list)
    # (confidence, top-1 right) of every matched fault, for the reliability table
    judged: list[tuple[float, bool]] = field(default_factory=list)
    # incidents that are not interruptions (SPEC §5 type), by type
    other_types: dict[str, int] = field(default_factory=dict)

    def reliability(self) -> list[dict]:
        """Per confidence bin: how many incidents and how many had the right root."""
        table = []
        for low, high in CONFIDENCE_BINS:
            inside = [right for conf, right in self.judged if low <= conf < high or (high == 1.0 and conf == 1.0)]
            table.append({"confidence": f"{low:.1f}–{high:.1f}", "incidents": len(inside), "right": sum(inside),
                          "accuracy_pct": round(100 * sum(inside) / len(inside), 1) if inside else None})
        return table

    @property
    def total(self) -> Row:
        total = Row()
        for row in self.rows.values():
            for name in vars(total):
                setattr(total, name, getattr(total, name) + getattr(row, name))
        return total

    def as_dict(self) -> dict:
        def pct(part: int, whole: int) -> float | None:
            return round(100 * part / whole, 1) if whole else None

        table = {}
        for name, row in [*sorted(self.rows.items()), ("all", self.total)]:
            table[name] = {**vars(row), "top1_pct": pct(row.top1, row.faults), "top3_pct": pct(row.top3, row.faults),
                           "category_pct": pct(row.category, row.faults), "cause_pct": pct(row.cause, row.faults)}
        return {"mechanisms": table, "merged": self.merged, "spurious": self.spurious, "misses": self.misses[:20],
                "reliability": self.reliability(), "other_types": self.other_types}


def score(found: list[dict], truth: list[dict]) -> Report:
    """Match interruptions to faults (same job, start within MATCH_WINDOW) and count hits;
    incidents of other types (faults, degradations) are counted apart."""
    report = Report()
    for incident in found:
        kind = incident.get("type", "interruption")
        if kind != "interruption":
            report.other_types[kind] = report.other_types.get(kind, 0) + 1
    found = [incident for incident in found if incident.get("type", "interruption") == "interruption"]
    claims: dict[str, list[str]] = defaultdict(list)
    for fault in truth:
        row = report.rows.setdefault(fault["mechanism"], Row())
        row.faults += 1
        moments = [_time(fault["time"]), _time(fault["onset"])]
        matches = [
            incident for incident in found
            if incident["job"] == fault["job"]
            and min(abs(_time(incident["interruption"]["start"]) - m) for m in moments) <= MATCH_WINDOW
        ]
        if not matches:
            row.missed += 1
            report.misses.append({"fault": fault["id"], "mechanism": fault["mechanism"], "truth": fault["root_component"], "got": None})
            continue
        if len(matches) > 1:
            row.split += 1
        best = min(matches, key=lambda i: min(abs(_time(i["interruption"]["start"]) - m) for m in moments))
        claims[best["id"]].append(fault["id"])
        root = best["root_cause"]
        report.judged.append((root.get("confidence") or 0.0, root["component"] == fault["root_component"]))
        if root["component"] == fault["root_component"]:
            row.top1 += 1
        else:
            report.misses.append({"fault": fault["id"], "mechanism": fault["mechanism"], "truth": fault["root_component"],
                                  "got": root["component"], "incident": best["id"]})
        if fault["root_component"] in [c["component"] for c in best["candidates"][:3]]:
            row.top3 += 1
        if root["category"] == fault["category"]:
            row.category += 1
        if root["cause"] == fault["cause"]:
            row.cause += 1
        if root["component"] in fault.get("decoys", []):
            row.decoy_blamed += 1
    report.merged = sum(1 for faults in claims.values() if len(faults) > 1)
    report.spurious = sum(1 for incident in found if incident["id"] not in claims)
    return report


@contextmanager
def throwaway_server(directory: Path) -> Iterator[str]:
    """A `faultgraph serve` on a free loopback port over a fresh DuckDB file; yields its URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "faultgraph.service.cli", "serve", "--port", str(port), "--db", f"duckdb:///{directory / 'eval.duckdb'}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the throwaway server did not start")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=60)
