"""Agent CPU at a steady line rate: % of one core, against `tail -F` on the same file.

    python tests/bench/agent.py [--rate 100] [--seconds 30] [--match 0.05] [--kmsg]

Starts `faultgraph serve` on loopback and `faultgraph agent` following one file, appends
`--rate` lines/s to it (the realistic syslog mix of tests/bench/parse.py, a fraction
`--match` of them fault lines, each distinct), and reads the agent's user+system CPU time
from /proc over the measured window (after a warm-up). The baseline is `tail -F` following
the same file in the same run: the least any follower can cost. Target (issue 3): the
agent under 2% of a core at 100 lines/s.
"""

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.append(str(Path(__file__).resolve().parent))

from conftest import cpu_seconds, start_server  # noqa: E402
from parse import QUIET  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def fault_line(i: int, when: datetime) -> str:
    stamp = when.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")
    return f"{stamp} node0001 kernel: NVRM: Xid (PCI:0000:{i >> 8 & 255:02x}:{i & 255:02x}): 79, pid=1, GPU has fallen off the bus."


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=float, default=100.0, help="lines per second")
    ap.add_argument("--seconds", type=float, default=30.0, help="measured window")
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--match", type=float, default=0.05, help="fraction of lines that are faults")
    ap.add_argument("--kmsg", action="store_true", help="the agent also reads the kernel log")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="faultgraph-agent-bench-") as tmp:
        run(args, Path(tmp))


def run(args: argparse.Namespace, work: Path) -> None:
    server = start_server(f"duckdb:///{work / 'bench.duckdb'}")
    log = work / "syslog"
    log.touch()
    agent_cmd = [sys.executable, "-m", "faultgraph.service.cli", "agent", "--url", server.url, "--file", str(log),
                 "--state-dir", str(work / "state"), "--host", "node0001", "--read-from", "beginning"]
    if args.kmsg:
        agent_cmd.append("--kmsg")
    agent = subprocess.Popen(agent_cmd, stderr=(work / "agent.log").open("wb"))
    tail = subprocess.Popen(["tail", "-F", str(log)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rng = random.Random(1)
    start_time = datetime.now(UTC)
    written = faults = 0
    try:
        with log.open("a", buffering=1) as out:
            begin = time.monotonic()
            measured_from = begin + args.warmup
            until = measured_from + args.seconds
            marks = None
            while (now := time.monotonic()) < until:
                if marks is None and now >= measured_from:
                    marks = (now, cpu_seconds(agent.pid), cpu_seconds(tail.pid))
                due = int((now - begin) * args.rate)
                while written < due:
                    if rng.random() < args.match:
                        out.write(fault_line(faults, start_time + timedelta(seconds=faults)) + "\n")
                        faults += 1
                    else:
                        out.write(rng.choice(QUIET) + "\n")
                    written += 1
                time.sleep(0.01)
            end = (time.monotonic(), cpu_seconds(agent.pid), cpu_seconds(tail.pid))
        time.sleep(3)
        stored = len(server.client.get("/v1/events", params={"host": "node0001", "kind": "gpu_xid", "limit": 10_000}).json()["events"])
    finally:
        tail.terminate()
        agent.terminate()
        agent.wait(timeout=20)
        server.stop()
    assert marks is not None
    wall = end[0] - marks[0]
    agent_pct = 100 * (end[1] - marks[1]) / wall
    tail_pct = 100 * (end[2] - marks[2]) / wall
    print(f"lines written: {written} at {args.rate:g}/s ({faults} faults); events stored: {stored}")
    print(f"agent CPU over {wall:.1f} s: {agent_pct:.2f}% of a core (target < 2%)")
    print(f"tail -F CPU (baseline):   {tail_pct:.2f}% of a core; agent/tail = "
          f"{agent_pct / tail_pct:.1f}x" if tail_pct > 0 else "tail -F CPU (baseline): below the clock tick")
    print(f"(/proc CPU times tick at 1/{TICK} s)")


if __name__ == "__main__":
    main()
