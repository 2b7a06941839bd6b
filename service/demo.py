"""A simulated day of one training job on a generated cluster, for `faultgraph demo`.

The hardware and training-process side arrives as raw log lines (kernel, PyTorch) run
through the same parsers the agent uses; the scheduler side (job start, restarts,
checkpoints) as SPEC §1 events, as a scheduler integration would post them. Five faults
over the day: four recovered by a restart, the last still open, so the UI has both.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from attribution.generators import rail_optimized
from ingest.parse import parse_lines

GPUS_PER_HOST = 8
JOB = "llama-demo"
CHECKPOINT_EVERY = timedelta(minutes=30)
WATCHDOG = timedelta(minutes=10)  # NCCL's timeout: the ranks notice ten minutes after the fault


@dataclass(frozen=True)
class Fault:
    after: timedelta  # from the start of the day
    host: int
    lines: tuple[str, ...]  # kernel lines on that host; {pci:<component>} is replaced by its PCI address
    restart_after: timedelta | None  # None: still down at the end of the day


FAULTS = (
    Fault(timedelta(hours=2, minutes=10), 5, ("NVRM: Xid (PCI:{pci:gpu3}): 79, pid=4242, name=python3, GPU has fallen off the bus.",),
          timedelta(minutes=14)),
    Fault(timedelta(hours=7, minutes=45), 12, ("mlx5_core {pci:nic2}.0: Port module event: module 2, Cable unplugged",
                                               "mlx5_core {pci:nic2}.0 ib2: Link down"), timedelta(minutes=16)),
    Fault(timedelta(hours=13, minutes=20), 20, (
        "NVRM: Xid (PCI:{pci:gpu5}): 48, pid=4242, name=python3, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.",),
        timedelta(minutes=12)),
    Fault(timedelta(hours=19, minutes=5), 27, ("NVRM: Xid (PCI:{pci:gpu1}): 74, pid=4242, name=python3, NVLink: fatal error detected on link 2(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",),
          timedelta(minutes=15)),
    Fault(timedelta(hours=23, minutes=30), 9, ("NVRM: Xid (PCI:{pci:gpu6}): 79, pid=4242, name=python3, GPU has fallen off the bus.",), None),
)
# Everyday lines no rule wants, and warnings that do not interrupt anything.
NOISE = (
    "systemd[1]: Started Session {n} of user root.",
    "kernel: NVRM: Xid (PCI:{pci:gpu2}): 63, pid=4242, name=python3, Row Remapper: New row marked for remapping, reset gpu to activate.",
    "sshd[2201]: Accepted publickey for ops from 10.0.0.{n} port 52000 ssh2",
)


def host_name(index: int) -> str:
    return f"node{index:04d}"


def topology(hosts: int) -> dict[str, list[dict[str, Any]]]:
    return rail_optimized(hosts)


def job(hosts: int, start: datetime) -> dict[str, Any]:
    """The job on every host: tp 8 inside a host, pp 4, the rest data-parallel."""
    if hosts < 4 or hosts % 4:
        raise ValueError(f"the demo job needs a multiple of 4 hosts, got {hosts}")
    return {"id": JOB, "start": _iso(start), "gpus_per_host": GPUS_PER_HOST,
            "hosts": [host_name(i) for i in range(hosts)],
            "parallelism": {"tp": GPUS_PER_HOST, "pp": 4, "dp": hosts // 4}}


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _pci_lookup(body: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    return {c["id"]: c["attrs"]["pci"] for c in body["components"] if "pci" in (c.get("attrs") or {})}


def _fill(template: str, host: str, pci: dict[str, str], n: int) -> str:
    text = template.replace("{n}", str(n))
    while "{pci:" in text:
        start = text.index("{pci:")
        end = text.index("}", start)
        text = text[:start] + pci[f"{host}/{text[start + 5:end]}"] + text[end + 1:]
    return text


def _syslog(moment: datetime, host: str, program: str, text: str) -> str:
    """An rsyslog file line: RFC 3339 stamp, host, program, message."""
    return f"{moment.isoformat(timespec='microseconds')} {host} {program}: {text}"


def day(hosts: int, start: datetime) -> tuple[list[dict], int]:
    """(events in time order, log lines that made no event) for the day from `start`."""
    body = topology(hosts)
    pci = _pci_lookup(body)
    world = hosts * GPUS_PER_HOST
    lines: list[str] = []
    scheduler: list[dict] = [{"time": _iso(start), "host": host_name(0), "kind": "job_start", "job": JOB}]
    t = start + CHECKPOINT_EVERY
    while t < start + timedelta(days=1):
        scheduler.append({"time": _iso(t), "host": host_name(0), "kind": "checkpoint_save", "job": JOB,
                          "attrs": {"step": int((t - start) / CHECKPOINT_EVERY) * 500, "duration_s": 42.0}})
        t += CHECKPOINT_EVERY
    for n in range(96):  # a line of noise every quarter hour
        host = host_name((n * 7) % hosts)
        moment = start + timedelta(minutes=15 * n, seconds=7)
        template = NOISE[n % len(NOISE)]
        program, _, text = template.partition(": ")
        lines.append(_syslog(moment, host, program, _fill(text, host, pci, n)))
    for fault in FAULTS:
        host = host_name(fault.host % hosts)
        at = start + fault.after
        for k, template in enumerate(fault.lines):
            lines.append(_syslog(at + timedelta(milliseconds=k), host, "kernel", _fill(template, host, pci, 0)))
        failed_gpu = next((int(t.split("{pci:gpu")[1][0]) for t in fault.lines if "{pci:gpu" in t), None)
        for rank in range(world):
            if host_name(rank // GPUS_PER_HOST) == host and rank % GPUS_PER_HOST == failed_gpu:
                continue  # the dead GPU's own rank says nothing
            moment = at + WATCHDOG + timedelta(milliseconds=rank % 1000)
            stamp = moment.strftime("%m%d %H:%M:%S.%f")
            lines.append(_syslog(moment, host_name(rank // GPUS_PER_HOST), "python[4242]",
                                 f"[rank{rank}]:[E{stamp} ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective "
                                 f"operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                                 f"Timeout(ms)=600000) ran for 600020 milliseconds before timing out."))
        if fault.restart_after is not None:
            scheduler.append({"time": _iso(at + fault.restart_after), "host": host_name(0), "kind": "job_restart",
                              "job": JOB, "attrs": {"reason": "NCCL watchdog timeout"}})
    parsed, unmatched = parse_lines(lines)
    for event in parsed:
        if event["kind"].startswith("nccl"):
            event["job"] = JOB
    events = sorted(parsed + scheduler, key=lambda e: e["time"] if isinstance(e["time"], str) else _iso(e["time"]))
    return [{**e, "time": e["time"] if isinstance(e["time"], str) else _iso(e["time"])} for e in events], unmatched
