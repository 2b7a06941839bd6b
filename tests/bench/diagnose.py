"""Diagnosing a large paste: 100,000 lines through `POST /v1/diagnose`'s code, in process.

Run from the repository root: `python tests/bench/diagnose.py [--lines N] [--runs R]`.
The paste is a job's output as people send it: the parse benchmark's training-log and
syslog lines (NCCL INFO chatter, kernel and daemon noise) with the real incidents of
`tests/data/diagnose/` spread through it, so readers, blocks and rules all have work.
Prints seconds per run for the diagnosis and, measured in the same run on the same lines,
for parsing alone as live ingest does it (`ingest.records.group_lines`, what `/v1/logs` and
the agent run: lines grouped into records, each record parsed), and their ratio.
Target (issue 21): 100,000 lines diagnosed in < 5 s on the 2-core shared dev machine.

`--corpus` instead prints the accuracy on the real incidents of tests/data/diagnose/ per
class (the thread's category): category right, and place right where the thread names one.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
import tomllib
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

from faultgraph.ingest.records import group_lines
from faultgraph.service.diagnose import service

HERE = Path(__file__).resolve().parent
RECEIVED = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _parse_bench():
    spec = importlib.util.spec_from_file_location("parse_bench", HERE / "parse.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def paste(n: int) -> list[str]:
    """n lines: chatter, with every real incident's lines inserted at even intervals."""
    bench = _parse_bench()
    chatter = [*bench.TRAINING, *bench.QUIET]
    incidents = [path.read_text().split("\n")[:-1] for path in sorted((HERE.parent / "data" / "diagnose").glob("*.log"))]
    lines: list[str] = []
    every = max(1, n // (len(incidents) * 3))
    k = 0
    while len(lines) < n:
        if len(lines) % every == 0:
            lines.extend(incidents[k % len(incidents)])
            k += 1
        lines.append(chatter[len(lines) % len(chatter)])
    return lines[:n]


def corpus() -> None:
    """Category and place accuracy per class on the real incidents."""
    data = HERE.parent / "data" / "diagnose"
    cases = tomllib.loads((data / "cases.toml").read_text())
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # cases, category ok, places named, place ok
    for name, spec in cases.items():
        lines = (data / f"{name}.log").read_text().split("\n")[:-1]
        incidents = service.diagnose({"lines": lines, "host": spec.get("host")}, received=RECEIVED)["incidents"]
        root = incidents[0]["root_cause"] if incidents else {"category": None, "component": ""}
        # a place on no named host is no component (null); the answer names it in what is missing
        named = root["component"] or " ".join(incidents[0]["missing"] if incidents else ())
        row = tally[spec["category"]]
        row[0] += 1
        row[1] += root["category"] == spec["category"]
        if "place" in spec:
            row[2] += 1
            row[3] += spec["place"] in named
        print(f"{name:42s} thread: {spec['category']:8s} answer: {root['category']!s:8s} at {root['component']}")
    total = [sum(col) for col in zip(*tally.values())]
    print("\n| class | incidents | category right | place named | place right |\n|---|---|---|---|---|")
    for cls, (n, cat, named, place) in [*sorted(tally.items()), ("all", total)]:
        print(f"| {cls} | {n} | {cat}/{n} ({cat / n:.0%}) | {named} | {f'{place}/{named} ({place / named:.0%})' if named else '–'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--corpus", action="store_true", help="print the accuracy on the real incidents instead")
    args = parser.parse_args()
    if args.corpus:
        corpus()
        return
    lines = paste(args.lines)
    parse_s, diagnose_s = [], []
    for _ in range(args.runs):
        start = time.perf_counter()
        sum(1 for _ in group_lines(lines, host="pasted", received=RECEIVED))
        parse_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        answer = service.diagnose({"lines": lines}, received=RECEIVED)
        diagnose_s.append(time.perf_counter() - start)
    ratios = [d / p for d, p in zip(diagnose_s, parse_s)]
    print(f"{len(lines):,} lines, {answer['events']:,} events, {len(answer['incidents'])} incidents answered")
    print(f"parse alone: {min(parse_s):.2f}–{max(parse_s):.2f} s")
    print(f"diagnose:    {min(diagnose_s):.2f}–{max(diagnose_s):.2f} s  (target < 5 s)")
    print(f"ratio diagnose / parse: {min(ratios):.1f}–{max(ratios):.1f}")


if __name__ == "__main__":
    main()
