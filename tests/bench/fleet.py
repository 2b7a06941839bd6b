"""Fleet statistics cost: replaying component states and computing the SPEC §7 fleet answer.

Run from the repository root: `python tests/bench/fleet.py [--gpus N] [--transitions N] [--runs R]`.
Workloads: the real Titan history (12,734 transitions over 18,687 slots, tests/data) and a
synthetic fleet (N GPUs, random faults and repairs). Prints seconds per stage and the
ratio to a baseline measured in the same run on the same transitions (one `sorted()` by
time, the least any replay must do), min–max over runs.
"""

from __future__ import annotations

import argparse
import csv
import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from faultgraph.attribution.fleet import Transition, exposures, replay, summarize

DATA = Path(__file__).resolve().parents[1] / "data" / "reference"


def titan() -> tuple[list[Transition], list[str]]:
    transitions = []
    with open(DATA / "titan-gpu-failures.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            time_ = datetime.fromisoformat(row["time_utc"]).replace(tzinfo=UTC)
            transitions += [Transition(time_, row["location"], "faulty", cause="gpu_hbm"),
                            Transition(time_ + timedelta(hours=6), row["location"], "healthy")]
    return transitions, (DATA / "titan-gpu-slots.txt").read_text().split()


def synthetic(gpus: int, count: int, seed: int = 1) -> tuple[list[Transition], list[str]]:
    rng, start = random.Random(seed), datetime(2026, 1, 1, tzinfo=UTC)
    names = [f"node{i // 8:04d}/gpu{i % 8}" for i in range(gpus)]
    transitions = []
    for _ in range(count // 2):
        name, at = rng.choice(names), start + timedelta(hours=rng.uniform(0, 24 * 300))
        transitions += [Transition(at, name, "faulty", cause=rng.choice(["gpu_hbm", "nvlink", "power_supply"]), judged=True),
                        Transition(at + timedelta(hours=rng.expovariate(1 / 20)), name, "healthy")]
    return transitions, names


def measure(transitions: list[Transition], names: list[str]) -> dict[str, float]:
    low = min(t.time for t in transitions)
    high = max(t.time for t in transitions) + timedelta(seconds=1)
    started = time.perf_counter()
    sorted(transitions, key=lambda t: t.time)
    baseline = time.perf_counter() - started
    started = time.perf_counter()
    units = replay(transitions)
    replayed = time.perf_counter() - started
    started = time.perf_counter()
    summarize(exposures(units, names=names, since=low, until=high))
    summarised = time.perf_counter() - started
    return {"baseline": baseline, "replay": replayed, "summary": summarised}


def span(runs: list[dict[str, float]], key: str) -> str:
    values = [r[key] for r in runs]
    return f"{min(values):.3f}–{max(values):.3f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gpus", type=int, default=32_768)
    parser.add_argument("--transitions", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for label, (transitions, names) in (("titan", titan()),
                                        (f"synthetic {args.gpus} GPUs", synthetic(args.gpus, args.transitions))):
        runs = [measure(transitions, names) for _ in range(args.runs)]
        ratios = [(r["replay"] + r["summary"]) / r["baseline"] for r in runs]
        print(f"{label}: {len(transitions):,} transitions, {len(names):,} units; sort baseline {span(runs, 'baseline')}, "
              f"replay {span(runs, 'replay')}, summary {span(runs, 'summary')}; (replay+summary)/baseline "
              f"{min(ratios):.0f}–{max(ratios):.0f}×")


if __name__ == "__main__":
    main()
