"""Whose clock an event's time is on, and how far each host's clock is off.

Hosts' clocks differ by seconds, and by minutes where NTP or chrony is broken. The events
keep the time their host reported; the engine reasons on corrected time. The estimate is
in-band, from the one moment every rank of a hung job shares: the collective they all
entered. Each watchdog timeout reports when it fired and how long the collective ran
(`elapsed_ms`), so `time - elapsed` is the hang start as that host's clock saw it; the
median over a job's hosts is the reference, and a host's offset is how far its own hang
starts sit from it, taken over every hang it took part in (median of medians).

An event whose time fell back to the moment it was received (a line without a timestamp
the parsers could read) carries `attrs.time_source = "received"`: it is on the receiver's
clock, not the host's, and says nothing about when things happened in a backfill.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

# Events these kinds are posted by services (scheduler, trainer's launcher, the service's
# own liveness), on their clocks, not on the host's.
SERVICE_KINDS = frozenset({"job_start", "job_end", "job_fail", "job_restart", "checkpoint_save", "checkpoint_load",
                           "host_heartbeat", "maintenance", "component_state", "audit"})
# A hang's reference needs this many hosts reporting it, so one host cannot outvote the rest.
MIN_HOSTS = 3
# Hang starts at one sequence number further apart than this belong to different runs.
SAME_HANG = timedelta(minutes=10)
# Offsets smaller than this are transport jitter, not skew worth correcting or showing.
NEGLIGIBLE = timedelta(seconds=1)


def received_time(event: Mapping[str, Any]) -> bool:
    """Whether the event's time is its receipt's, not its own."""
    return (event.get("attrs") or {}).get("time_source") == "received"


def on_host_clock(event: Mapping[str, Any]) -> bool:
    """Whether the event's time was read from the host's own clock."""
    return not received_time(event) and (event["kind"] not in SERVICE_KINDS or event.get("rank") is not None)


def offsets(events: Iterable[Mapping[str, Any]], job_of: Mapping[str, str | None] | None = None) -> dict[str, timedelta]:
    """Each host's clock offset (its clock minus the reference), for hosts seen in a hang.

    A hang is one job's timeouts at one collective sequence number; `job_of` names the job
    of events that carry none (by event id). Seconds as floats: a storm has tens of
    thousands of timeouts."""
    by_key: dict[tuple[str, object], list[tuple[float, str]]] = defaultdict(list)
    for event in events:
        if event["kind"] != "nccl_timeout":
            continue
        attrs = event.get("attrs") or {}
        ran_ms = attrs.get("elapsed_ms") or attrs.get("timeout_ms")
        seq = attrs.get("seq")
        if seq is None or not isinstance(ran_ms, int | float) or ran_ms <= 0 or attrs.get("time_source") == "received":
            continue
        job = event.get("job") or (job_of or {}).get(event["id"])
        if job is not None:
            by_key[(job, seq)].append((event["time"].timestamp() - ran_ms / 1000, event["host"]))
    deviations: dict[str, list[float]] = defaultdict(list)
    for hosts in (hang for timed in by_key.values() for hang in _hangs(timed)):
        if len(hosts) < MIN_HOSTS:
            continue
        per_host = {host: _median(starts) for host, starts in hosts.items()}
        reference = _median(list(per_host.values()))
        for host, value in per_host.items():
            deviations[host].append(value - reference)
    found = {host: timedelta(seconds=_median(values)) for host, values in deviations.items()}
    return {host: offset for host, offset in found.items() if abs(offset) >= NEGLIGIBLE}


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _hangs(timed: list[tuple[float, str]]) -> list[dict[str, list[float]]]:
    """One job's hang starts at one sequence number, split where a restart reused it
    (starts further apart than any clock is off)."""
    hangs: list[dict[str, list[float]]] = []
    last: float | None = None
    gap = SAME_HANG.total_seconds()
    for start, host in sorted(timed):
        if last is None or start - last > gap:
            hangs.append(defaultdict(list))
        hangs[-1][host].append(start)
        last = start
    return hangs
