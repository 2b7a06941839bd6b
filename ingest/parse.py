"""Turn raw log lines into SPEC §1 event dicts with the rules of `ingest/catalogue/`.

Most lines a host writes match nothing, so the cost that matters is rejecting them. Every
rule names its keywords, words one of which must occur in the line; the line is cut into
words with one `bytes.translate` and `split` (C speed) and dropped unless a word is a
keyword.
Only then is its timestamp split and are the rules with a present keyword tried (in
catalogue order, first match wins). A regex alternation over the keywords instead runs
at a fifth of the speed.

An event dict carries `time` (tz-aware UTC: the line's own, else `received`), `host`
(the syslog header's, else the caller's), `kind`, `severity`, `attrs` and `message`;
`component` and `rank` only when the line alone determines them. `attrs.cause` and
`attrs.role` are the catalogue's hint (SPEC §6 cause; root or cascade), `attrs.rule` the
rule that matched. PCI addresses go to `attrs.pci` as domain:bus:device, for the topology
to resolve to a GPU.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime, tzinfo
from typing import Any

from faultgraph.ingest import catalogue, progress
from faultgraph.ingest.prefixes import NO_PREFIX, Prefixed, has_prefix, strip_prefix
from faultgraph.ingest.timestamps import as_utc, split_timestamp

_CAT = catalogue.load()
# Bytes that are not part of a word (ASCII other than letters, digits, "_") become spaces.
_WORD_BYTES = bytes(c if c >= 128 or c == 95 or chr(c).isalnum() else 32 for c in range(256))
_KEYWORDS = frozenset(k.encode() for r in _CAT.rules for k in r.keywords)
# Kinds a training process reports: only there does a launcher's prefix name a rank.
_PROCESS_KINDS = frozenset({"nccl_timeout", "nccl_error", "gpu_ecc", "nvlink_error", "nic_error",
                            "train_anomaly", "job_fail"})
# keyword -> positions of the rules that name it, so a line tries only its candidates.
_RULES_BY_KEYWORD = {k: tuple(i for i, r in enumerate(_CAT.rules) if k.decode() in r.keywords)
                     for k in _KEYWORDS}


def parse_line(line: str, *, host: str | None = None, source: str | None = None,
               received: datetime | None = None, boot_time: datetime | None = None,
               zone: tzinfo = UTC, prefixed: Prefixed | None = None) -> dict[str, Any] | None:
    """The event a line describes (trailing newline ignored), or None when no rule matches.

    `host` is used when the line has no syslog header; `source` (e.g. "kmsg") is kept as
    `attrs.source`; `received` is the time for lines without their own (default: now);
    `boot_time` dates /dev/kmsg records; `zone` is that of stamps without one (syslog,
    glog). Naive datetimes are taken as UTC. `prefixed` is `strip_prefix(line)` when the
    caller has it already (a record grouper keys lines by their prefix): a watchdog line's
    prefixes then are not read twice. Raises ValueError for a line not a str.
    """
    if not isinstance(line, str):
        raise ValueError(f"a log line must be a str, not {type(line).__name__}")
    line = line.rstrip("\r\n")
    if (step := progress.parse(line, host=host, time=as_utc(received) if received else datetime.now(UTC), source=source)):
        return step  # training progress lines (ingest/progress.py)
    words = line.encode("utf-8", "surrogatepass").translate(_WORD_BYTES).split()
    if _KEYWORDS.isdisjoint(words):
        return None
    candidates = sorted({i for k in _KEYWORDS.intersection(words) for i in _RULES_BY_KEYWORD[k]})
    received = as_utc(received) if received else datetime.now(UTC)
    if prefixed is None:
        prefixed = strip_prefix(line) if has_prefix(line) else NO_PREFIX
    time, header_host, message = split_timestamp(prefixed.text if prefixed.key else line,
                                                 received=received, boot_time=boot_time, zone=zone)
    if not prefixed.key and message is not line and has_prefix(message):
        prefixed = strip_prefix(message)  # a launcher's prefix inside a syslog line
        message = prefixed.text
    for i in candidates:
        rule = _CAT.rules[i]
        if rule.needs_rank and prefixed.rank is None:
            continue
        match = rule.regex.search(message)
        if match:
            try:
                event = _event(rule, match, message, time or received, header_host or host,
                               source, prefixed)
            except ValueError:  # a number int() refuses (too long): not a line a driver wrote
                continue
            if time is None:  # the engine must not place a backfill's storm at its receipt
                event["attrs"]["time_source"] = "received"
            return event
    return None


def parse_lines(lines: Iterable[str], *, host: str | None = None, source: str | None = None,
                received: datetime | None = None, boot_time: datetime | None = None,
                zone: tzinfo = UTC) -> tuple[list[dict[str, Any]], int]:
    """(events, number of lines that matched no rule), trailing newlines ignored."""
    received = as_utc(received) if received else datetime.now(UTC)
    events: list[dict[str, Any]] = []
    unmatched = 0
    for line in lines:
        event = parse_line(line, host=host, source=source, received=received,
                           boot_time=boot_time, zone=zone)
        if event is None:
            unmatched += 1
        else:
            events.append(event)
    return events, unmatched


def _event(rule: catalogue.Rule, match: re.Match[str], message: str, time: datetime,
           host: str | None, source: str | None, prefixed: Prefixed) -> dict[str, Any]:
    attrs = dict(rule.attrs)
    _merge(attrs, match.groupdict())
    for extractor in _CAT.extractors:
        if rule.kind in extractor.kinds:
            extra = extractor.search(message)
            if extra:
                _merge(attrs, extra.groupdict(), keep_existing=True)
    for target, (table, frm) in rule.derive.items():
        value = _CAT.maps[table].get(attrs.get(frm))  # type: ignore[arg-type]
        if value is not None:
            attrs[target] = value
    _normalise_pci(attrs)
    severity, cause, role = _classify(rule, attrs)
    if "intrinfo" in attrs and "error_status" in attrs:
        severity = _decode_nvlink5(attrs, severity)
    attrs.update(cause=cause, role=role, rule=rule.id)
    if source:
        attrs["source"] = source
    event: dict[str, Any] = {"time": time, "host": host, "kind": rule.kind,
                             "severity": severity, "attrs": attrs, "message": message}
    prefix_rank = None
    if rule.kind in _PROCESS_KINDS:  # a launcher's prefix names a process, not a host's kernel
        prefix_rank = prefixed.rank
        if prefixed.local_rank is not None:
            attrs["local_rank"] = prefixed.local_rank
        if prefixed.task is not None:
            attrs["task"] = prefixed.task
        if prefixed.host is not None:
            attrs["launcher_host"] = prefixed.host
    rank = _ranks(attrs, prefix_rank)
    if rank is not None:
        event["rank"] = rank
    if rule.component and host:
        try:
            event["component"] = rule.component.format_map({**attrs, "host": host})
        except KeyError:  # the template names an attr this line did not give
            pass
    return event


def _merge(attrs: dict[str, Any], groups: dict[str, str | None],
           keep_existing: bool = False) -> None:
    """Add captured groups to attrs, typed; placeholders like `<unknown>` mean absent. A
    name ending in `_` is the same attr captured by another branch of the regex (`re`
    allows a group name once)."""
    for name, value in groups.items():
        if value is None or value in _CAT.null_values:
            continue
        if name[-1] == "_":
            name = name[:-1]
        if keep_existing and name in attrs:
            continue
        if name in _CAT.int_attrs:
            attrs[name] = int(value)
        elif name in _CAT.float_attrs:
            attrs[name] = float(value)
        else:
            attrs[name] = value.strip()


def _normalise_pci(attrs: dict[str, Any]) -> None:
    """`pci` as domain:bus:device (the topology's key); `bdf` keeps the function.

    A bus id without its domain (`18:00.0`, as some driver messages print it) is in domain
    0000; fabric manager's 8-digit domain (`00000000:86:00.0`) is the same 16-bit domain.
    """
    if "bdf" in attrs:
        attrs["bdf"] = attrs["bdf"].lower()
        attrs.setdefault("pci", attrs["bdf"])
    if "pci" in attrs:
        pci = attrs["pci"].lower().split(".", 1)[0]
        parts = pci.split(":")
        if len(parts) == 2:
            pci = "0000:" + pci
        elif len(parts[0]) > 4:
            pci = parts[0][-4:] + ":" + ":".join(parts[1:])
        attrs["pci"] = pci


def _classify(rule: catalogue.Rule, attrs: dict[str, Any]) -> tuple[str, str, str]:
    """Severity, cause and role: the rule's, or its code table's, then the line's own word."""
    severity, cause, role = rule.severity, rule.cause, rule.role
    if rule.codes == "xid" and "xid" in attrs:
        entry = catalogue.xid(attrs["xid"])
        if entry:
            severity, role = entry.severity, entry.role
            cause = catalogue.xid_cause(attrs["xid"], attrs.get("unit")) or entry.cause
    elif rule.codes == "sxid" and "sxid" in attrs:
        entry = catalogue.sxid(attrs["sxid"])
        cause = catalogue.sxid_cause(attrs["sxid"])
        if entry:
            severity, role = entry.severity, entry.role
    if rule.severity_from:
        table, frm = rule.severity_from
        severity = _CAT.maps[table].get(attrs.get(frm), severity)  # type: ignore[arg-type]
    return severity, cause, role


def _decode_nvlink5(attrs: dict[str, Any], severity: str) -> str:
    """NVLink5 Xids (144-150): the sub-code (intrinfo bits 20-25, as gpud computes it) and
    NVIDIA's decode of the unit, intrinfo and error status; the decode's severity wins."""
    intrinfo, status = int(attrs["intrinfo"], 16), int(attrs["error_status"], 16)
    attrs["sub_code"] = (intrinfo >> 20) & 0x3F
    row = catalogue.nvlink5(attrs.get("xid", 0), attrs.get("unit", ""), intrinfo, status)
    if row is None:
        return severity
    attrs.update(nvlink5_severity=row.severity, resolution=row.resolution,
                 investigatory=row.investigatory)
    return "warning" if row.severity.lower().startswith("non") else "critical"


def _ranks(attrs: dict[str, Any], prefix_rank: int | None) -> int | None:
    """The job's global rank, and `pg` naming the process group of `pg_rank`.

    PyTorch >= 2.2 prefixes `[rankN]:` (global; `prefix_rank`, as a launcher's prefix may
    give it too) and names the group `[PG ID i PG GUID g(name) Rank r]`; older versions
    print only `[Rank r]`. Without a prefix, a rank in the default group (PG 0, or no group
    named, as before 2.2) is the global rank.
    """
    pg_name, pg_id = attrs.pop("pg_name", None), attrs.pop("pg_id", None)
    attrs.pop("pg_guid", None)
    if pg_name or pg_id:
        attrs["pg"] = pg_name or pg_id
    if prefix_rank is not None and "rank" not in attrs:
        attrs["rank"] = prefix_rank
    if "rank" not in attrs and "pg_rank" in attrs and pg_id in (None, "0"):
        attrs["rank"] = attrs["pg_rank"]
    return attrs.get("rank")
