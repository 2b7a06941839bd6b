"""Flight recorder dumps → the first collective the ranks disagree on → evidence events.

Each rank that never entered that collective (or entered another operation or sizes)
becomes one `flight_recorder` event on its GPU, carrying the analysis; the engine weighs
them as it weighs sequence lag (`attribution/classify.py`), and they stay in the store and
on the incident's timeline. Posting the same dumps twice stores them once (stable ids).
"""

from datetime import UTC, datetime

from faultgraph.attribution.flight_recorder import Mismatch, first_mismatches
from faultgraph.attribution.placement import Placement


def _when(mismatch: Mismatch, received: datetime) -> datetime:
    if isinstance(mismatch.time_ns, int | float) and mismatch.time_ns > 0:
        return datetime.fromtimestamp(mismatch.time_ns / 1e9, tz=UTC)
    return received


def events(job: str, dumps: list[dict], placement: Placement | None, *, host: str | None,
           received: datetime) -> tuple[list[Mismatch], list[dict]]:
    """The mismatches of the dumps and the events that record them (DumpError on a bad dump)."""
    found = first_mismatches(dumps)
    out = []
    for mismatch in found:
        culprits = mismatch.missing or sorted(mismatch.odd)
        for rank in culprits:
            where = placement.host_of(rank) if placement is not None else None
            if where is None and host is None:
                continue
            event = {"time": _when(mismatch, received), "host": where or host, "kind": "flight_recorder",
                     "severity": "error", "job": job, "rank": rank,
                     "id": f"flight_recorder:{job}:{mismatch.pg}:{mismatch.seq}:{rank}",
                     "message": f"rank {rank} {mismatch.reason.replace('_', ' ')} {mismatch.op} #{mismatch.seq} "
                                f"of process group {mismatch.pg} ({mismatch.desc})",
                     "attrs": {**mismatch.as_dict(), "share": round(1 / len(culprits), 6)}}
            if placement is not None and placement.rank_to_gpu(rank):
                event["component"] = placement.rank_to_gpu(rank)
            out.append(event)
    return found, out
