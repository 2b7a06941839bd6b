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
from datetime import datetime, timezone, tzinfo
from typing import Any

from faultgraph.ingest import catalogue, progress
from faultgraph.ingest.timestamps import as_utc, split_timestamp

_CAT = catalogue.load()
# Bytes that are not part of a word (ASCII other than letters, digits, "_") become spaces.
_WORD_BYTES = bytes(c if c >= 128 or c == 95 or chr(c).isalnum() else 32 for c in range(256))
_KEYWORDS = frozenset(k.encode() for r in _CAT.rules for k in r.keywords)
# keyword -> positions of the rules that name it, so a line tries only its candidates.
_RULES_BY_KEYWORD = {k: tuple(i for i, r in enumerate(_CAT.rules) if k.decode() in r.keywords)
                     for k in _KEYWORDS}


def parse_line(line: str, *, host: str | None = None, source: str | None = None,
               received: datetime | None = None, boot_time: datetime | None = None,
               zone: tzinfo = timezone.utc) -> dict[str, Any] | None:
    """The event a line describes (trailing newline ignored), or None when no rule matches.

    `host` is used when the line has no syslog header; `source` (e.g. "kmsg") is kept as
    `attrs.source`; `received` is the time for lines without their own (default: now);
    `boot_time` dates /dev/kmsg records; `zone` is that of stamps without one (syslog,
    glog). Naive datetimes are taken as UTC. Raises ValueError for a line not a str.
    """
    if not isinstance(line, str):
        raise ValueError(f"a log line must be a str, not {type(line).__name__}")
    line = line.rstrip("\r\n")
    if (step := progress.parse(line, host=host, time=as_utc(received) if received else datetime.now(timezone.utc), source=source)):
        return step  # training progress lines (ingest/progress.py)
    words = line.encode("utf-8", "surrogatepass").translate(_WORD_BYTES).split()
    if _KEYWORDS.isdisjoint(words):
        return None
    candidates = sorted({i for k in _KEYWORDS.intersection(words) for i in _RULES_BY_KEYWORD[k]})
    received = as_utc(received) if received else datetime.now(timezone.utc)
    time, header_host, message = split_timestamp(line, received=received, boot_time=boot_time,
                                                 zone=zone)
    for i in candidates:
        rule = _CAT.rules[i]
        match = rule.regex.search(message)
        if match:
            try:
                return _event(rule, match, message, time or received, header_host or host,
                              source)
            except ValueError:  # a number too long for int(): not a line a driver wrote
                continue
    return None


def parse_lines(lines: Iterable[str], *, host: str | None = None, source: str | None = None,
                received: datetime | None = None, boot_time: datetime | None = None,
                zone: tzinfo = timezone.utc) -> tuple[list[dict[str, Any]], int]:
    """(events, number of lines that matched no rule), trailing newlines ignored."""
    received = as_utc(received) if received else datetime.now(timezone.utc)
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
           host: str | None, source: str | None) -> dict[str, Any]:
    attrs = dict(rule.attrs)
    _merge(attrs, match.groupdict())
    for extractor in _CAT.extractors:
        if rule.kind in extractor.kinds:
            extra = extractor.regex.search(message)
            if extra:
                _merge(attrs, extra.groupdict(), keep_existing=True)
    for target, (table, frm) in rule.derive.items():
        value = _CAT.maps[table].get(attrs.get(frm))  # type: ignore[arg-type]
        if value is not None:
            attrs[target] = value
    _normalise_pci(attrs)
    severity, cause, role = _classify(rule, attrs)
    attrs.update(cause=cause, role=role, rule=rule.id)
    if source:
        attrs["source"] = source
    event: dict[str, Any] = {"time": time, "host": host, "kind": rule.kind,
                             "severity": severity, "attrs": attrs, "message": message}
    rank = _ranks(attrs)
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
    """Add captured groups to attrs, typed; placeholders like `<unknown>` mean absent."""
    for name, value in groups.items():
        if value is None or value in _CAT.null_values or (keep_existing and name in attrs):
            continue
        attrs[name] = int(value) if name in _CAT.int_attrs else value.strip()


def _normalise_pci(attrs: dict[str, Any]) -> None:
    """`pci` as domain:bus:device (the topology's key); `bdf` keeps the function."""
    if "bdf" in attrs:
        attrs["bdf"] = attrs["bdf"].lower()
        attrs.setdefault("pci", attrs["bdf"])
    if "pci" in attrs:
        attrs["pci"] = attrs["pci"].lower().split(".", 1)[0]


def _classify(rule: catalogue.Rule, attrs: dict[str, Any]) -> tuple[str, str, str]:
    """Severity, cause and role: the rule's, or its code table's, then the line's own word."""
    severity, cause, role = rule.severity, rule.cause, rule.role
    if rule.codes == "xid" and "xid" in attrs:
        entry = catalogue.xid(attrs["xid"])
        if entry:
            severity, cause, role = entry.severity, entry.cause, entry.role
    elif rule.codes == "sxid" and "sxid" in attrs:
        entry = catalogue.sxid(attrs["sxid"])
        cause = catalogue.sxid_cause(attrs["sxid"])
        if entry:
            severity, role = entry.severity, entry.role
    if rule.severity_from:
        table, frm = rule.severity_from
        severity = _CAT.maps[table].get(attrs.get(frm), severity)  # type: ignore[arg-type]
    return severity, cause, role


def _ranks(attrs: dict[str, Any]) -> int | None:
    """The job's global rank, and `pg` naming the process group of `pg_rank`.

    PyTorch >= 2.2 prefixes `[rankN]:` (global) and names the group `[PG ID i PG GUID
    g(name) Rank r]`; older versions print only `[Rank r]`. Without the prefix, a rank in
    the default group (PG 0, or no group named, as before 2.2) is the global rank.
    """
    pg_name, pg_id = attrs.pop("pg_name", None), attrs.pop("pg_id", None)
    attrs.pop("pg_guid", None)
    if pg_name or pg_id:
        attrs["pg"] = pg_name or pg_id
    if "rank" not in attrs and "pg_rank" in attrs and pg_id in (None, "0"):
        attrs["rank"] = attrs["pg_rank"]
    return attrs.get("rank")
