"""PyTorch NCCL flight recorder dumps: the first collective the ranks disagree on.

Each rank's dump (the JSON form `TORCH_NCCL_DEBUG_INFO_TEMP_FILE` / `_dump_nccl_trace_json`
writes) holds `rank`, `pg_config` (`{pg: {"name", "desc", "ranks": "[0, 1, …]"}}`) and
`entries`, each with `process_group` `[name, desc]`, `collective_seq_id`, `profiling_name`
(`nccl:all_reduce`), `input_sizes`, `state` (`scheduled`/`started`/`completed`) and
`time_created_ns` — the records `torch/distributed/flight_recorder` analyses. Here, per
process group, the collectives are walked in sequence order from the first one every
rank's ring buffer still holds; the first sequence number where a member never entered
the collective, or members entered different operations or sizes, is the answer: the
ranks that never entered it are where the job stopped making progress.
"""

import ast
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Mismatch:
    """The first collective of a process group on which its ranks disagree."""

    pg: str
    desc: str
    seq: int
    op: str
    reason: str  # "never_entered", "op_mismatch" or "size_mismatch"
    missing: list[int]  # members that never entered it (their dumps end before it)
    entered: list[int]
    odd: dict[int, str] = field(default_factory=dict)  # rank → the op or sizes it entered instead
    time_ns: int | None = None  # when the first rank entered it

    def as_dict(self) -> dict[str, Any]:
        return {"pg": self.pg, "desc": self.desc, "seq": self.seq, "op": self.op, "reason": self.reason,
                "missing_ranks": self.missing, "entered": len(self.entered),
                "odd": {str(k): v for k, v in self.odd.items()}}


class DumpError(ValueError):
    """A dump that is not the flight recorder's JSON form; the message names the problem."""


def _members(dump: Mapping[str, Any], where: str) -> dict[str, tuple[str, list[int]]]:
    config = dump.get("pg_config")
    if not isinstance(config, Mapping):
        raise DumpError(f"{where}: pg_config must be an object")
    groups = {}
    for key, pg in config.items():
        try:
            ranks = pg["ranks"]
            ranks = ast.literal_eval(ranks) if isinstance(ranks, str) else ranks
            groups[str(pg.get("name", key))] = (str(pg.get("desc", "")), [int(r) for r in ranks])
        except (KeyError, TypeError, ValueError, SyntaxError):
            raise DumpError(f"{where}: pg_config.{key}.ranks must list the group's global ranks") from None
    return groups


def _entries(dump: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    entries = dump.get("entries")
    if not isinstance(entries, list):
        raise DumpError(f"{where}: entries must be a list")
    checked = []
    for i, entry in enumerate(entries):
        try:
            if entry.get("is_p2p") or " " in entry["profiling_name"]:  # send/recv: not a collective
                continue
            checked.append({"pg": str(entry["process_group"][0]), "seq": int(entry["collective_seq_id"]),
                            "op": str(entry["profiling_name"]), "sizes": entry.get("input_sizes"),
                            "time_ns": entry.get("time_created_ns")})
        except (AttributeError, KeyError, TypeError, ValueError, IndexError):
            raise DumpError(f"{where}: entries[{i}] needs process_group, collective_seq_id and profiling_name") from None
    return checked


def first_mismatches(dumps: Iterable[Mapping[str, Any]]) -> list[Mismatch]:
    """Per process group, the first collective its ranks disagree on (groups that agree are left out).

    DumpError names the first dump that is not the flight recorder's JSON form."""
    groups: dict[str, tuple[str, list[int]]] = {}
    by_rank: dict[int, list[dict[str, Any]]] = {}
    for i, dump in enumerate(dumps):
        where = f"dumps[{i}]"
        if not isinstance(dump, Mapping) or not isinstance(dump.get("rank"), int):
            raise DumpError(f"{where}: a dump is an object with an integer rank")
        groups.update(_members(dump, where))
        by_rank[dump["rank"]] = _entries(dump, where)
    found = []
    for pg, (desc, members) in sorted(groups.items()):
        mismatch = _first_in_group(pg, desc, [r for r in members if r in by_rank], by_rank)
        if mismatch is not None:
            found.append(mismatch)
    return sorted(found, key=lambda m: (m.time_ns or 0, m.pg))


def _first_in_group(pg: str, desc: str, members: list[int], by_rank: Mapping[int, list[dict]]) -> Mismatch | None:
    seen: dict[int, dict[int, dict]] = defaultdict(dict)  # seq → rank → entry
    oldest: dict[int, int] = {}
    for rank in members:
        own = [e for e in by_rank[rank] if e["pg"] == pg]
        for entry in own:
            seen[entry["seq"]][rank] = entry
        oldest[rank] = min((e["seq"] for e in own), default=0)
    if len(members) < 2 or not seen:
        return None
    start = max(oldest.values())  # older records have left some rank's ring buffer
    for seq in sorted(s for s in seen if s >= start):
        entries = seen[seq]
        first = min(entries.values(), key=lambda e: e["time_ns"] or 0)
        missing = sorted(set(members) - set(entries))
        ops = {r: e["op"] for r, e in entries.items()}
        common_op = max(set(ops.values()), key=lambda op: (list(ops.values()).count(op), op))
        odd_ops = {r: op for r, op in ops.items() if op != common_op}
        sizes = {r: str(e["sizes"]) for r, e in entries.items() if e["op"] == common_op}
        common_size = max(set(sizes.values()), key=lambda s: (list(sizes.values()).count(s), s)) if sizes else None
        odd_sizes = {r: s for r, s in sizes.items() if s != common_size}
        if missing or odd_ops or odd_sizes:
            reason = "op_mismatch" if odd_ops else "size_mismatch" if odd_sizes else "never_entered"
            return Mismatch(pg, desc, seq, common_op, reason, missing, sorted(entries),
                            odd_ops or odd_sizes, first["time_ns"])
    return None
