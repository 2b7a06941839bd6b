"""Read a log as people paste it: a whole document, not a stream of well-formed lines.

A paste mixes sources (a job's output file, a `dmesg`, a `py-spy dump` of every rank),
carries the launchers' prefixes (`[default3]:`, `42: `, `[rank42]:`, `worker-3: `: read by
`ingest.prefixes.strip_prefix`, as live ingest reads them) and tools' (Ray's
`(RayWorkerWrapper pid=4009) `, grep's `messages:`), often has no timestamps at all, and
spreads one fact over many lines (a Python traceback, a C++ `terminate called after
throwing` block, a py-spy thread stack, a kernel hung-task trace). This module turns such
a document into `Line`s (prefix stripped, rank and host kept, a time that preserves the
order) and `Block`s (the multi-line facts), and every line into the events the catalogue
parsers make of it — the same `parse_line` live ingest uses.

Order is the only clock of a paste without timestamps: a line without its own time gets
the time of the nearest stamped line before it plus one microsecond per line, or, before
the first stamped line (`received` when none is), that time minus one millisecond per line
still to come. Times are read on first use: parsing a large paste reads only those of the
lines that decide something.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from faultgraph.ingest.prefixes import strip_prefix
from faultgraph.ingest.records import Record, RecordGrouper
from faultgraph.ingest.timestamps import as_utc, split_timestamp

# The host of lines that name none, when the caller gave none either.
UNNAMED_HOST = "pasted"
# Tools' prefixes that come before the launchers' (which `ingest.prefixes.strip_prefix`
# reads): colour codes, a bracketed time, Ray's actor tag, a pid before PyTorch's prefix,
# grep's file name before a syslog line.
_TOOL_PREFIX = re.compile("|".join(f"(?:{p})" for p in (
    r"\x1b\[[0-9;]*m",                                          # colour codes
    r"\[0m ",                                                   # a colour code whose ESC was lost in the paste
    r"\[(?P<stamp>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)\]\s+",
    r"\((?:\w+) pid=\d+(?:, ip=[\d.]+)?\) ",                      # Ray actors
    r"\[\d+\] (?=\[rank)",                                       # a pid before PyTorch's prefix
    r"[\w./-]+:(?=(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d )",  # grep's file name
)))
# NCCL's own prefix names the host and the local CUDA device: `node5:240:240 [6] `.
_NCCL_PREFIX = re.compile(r"(?P<host>[\w.-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] ")
_RANK_IN_TEXT = re.compile(r"\[(?:PG (?:ID )?0 (?:PG GUID 0(?:\(default_pg\))? )?)?Rank (?P<rank>\d+)\]")

_PYSPY_PROCESS = re.compile(r"Process (?P<pid>\d+): (?P<cmd>.*)")
_PYSPY_THREAD = re.compile(r"Thread (?P<tid>0x[0-9A-Fa-f]+|\d+) \((?P<state>[\w ]+)\)(?:: \"(?P<name>[^\"]*)\")?")
_PYSPY_FRAME = re.compile(r"\s+(?P<func>[^\s(]+) \((?P<file>[^():]+):(?P<line>\d+)\)")
_TERMINATE = re.compile(r"terminate called after throwing an instance of '(?P<type>[^']+)'")
_WHAT = re.compile(r"\s*what\(\):\s+(?P<text>.*)")


class Line:
    """One pasted line: its position, its text without launcher prefixes, what they said,
    and (read on first use, see `_Clock`) its time and the host its syslog header names."""

    __slots__ = ("_clock", "default_host", "index", "launched", "local_rank", "rank", "raw", "stream", "text")

    def __init__(self, index: int, raw: str, text: str, rank: int | None, local_rank: int | None,
                 named_host: str | None, fallback_host: str | None, clock: _Clock, launched: str = "") -> None:
        self.index, self.raw, self.text = index, raw, text
        self.launched = launched or text  # the line with only its launchers' prefixes
        self.rank, self.local_rank = rank, local_rank
        self.stream = (named_host, rank, local_rank)  # what the line itself says of its process
        self.default_host, self._clock = fallback_host, clock

    @property
    def time(self) -> datetime:
        return self._clock.time(self.index)[0]

    @property
    def stamped(self) -> bool:
        """The time is the line's own, not synthesised from its position."""
        return self._clock.time(self.index)[1]

    @property
    def host(self) -> str | None:
        """The host the line names (launcher prefix, then syslog header), else the caller's."""
        return self.stream[0] or self._clock.own(self.index)[1] or self.default_host

    def __repr__(self) -> str:
        return f"Line({self.index}, {self.raw!r})"


class _Clock:
    """Each line's own time and syslog host, read on first use: a large paste's lines are
    mostly never asked. A line without its own time gets that of the nearest stamped line
    before it plus 1 µs per line; before the first stamped line, that line's time minus
    1 ms per line; in a paste with no stamp at all, `received` minus 1 ms per line to come."""

    def __init__(self, texts: Sequence[str], found: Sequence[dict[str, Any]], received: datetime) -> None:
        self.texts, self.found, self.received = texts, found, received
        self._own: list[tuple[datetime | None, str | None] | None] = [None] * len(texts)
        self._before: list[int | None] = [None] * len(texts)  # nearest stamped index <= i, -1: none
        self._after: list[int | None] = [None] * len(texts)   # nearest stamped index >= i, n: none

    def own(self, i: int) -> tuple[datetime | None, str | None]:
        if self._own[i] is None:
            self._own[i] = _stamp(self.texts[i], self.found[i], self.received)
        return self._own[i]  # type: ignore[return-value]

    def _nearest(self, i: int, step: int, memo: list[int | None], end: int) -> int:
        walked = []
        k = i
        while k != end and memo[k] is None and self.own(k)[0] is None:
            walked.append(k)
            k += step
        found = end if k == end else (known if (known := memo[k]) is not None else k)
        for j in walked:
            memo[j] = found
        if k != end and memo[k] is None:
            memo[k] = k
        return found

    def time(self, i: int) -> tuple[datetime, bool]:
        stamp = self.own(i)[0]
        if stamp is not None:
            return stamp, True
        before = self._nearest(i, -1, self._before, -1)
        if before >= 0:
            stamped = self.own(before)[0]
            assert stamped is not None  # _nearest stops at a line with its own time
            return stamped + timedelta(microseconds=i - before), False
        n = len(self.texts)
        after = self._nearest(i, 1, self._after, n)
        anchor, at = (self.own(after)[0], after) if after < n else (self.received, n)
        assert anchor is not None  # as above; a paste without times falls back to its receipt
        return anchor - timedelta(milliseconds=at - i), False


@dataclass
class Block:
    """A fact spread over several lines. `kind` is `traceback`, `terminate`, `pyspy` or
    `hung_task`; `head` indexes the line in `lines` that states it (the exception, the
    `what():`, the thread, the `INFO: task … blocked`); `frames` are function names,
    innermost last for Python, in printed order for the kernel."""

    kind: str
    lines: list[Line]
    head: int = 0
    frames: list[str] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def indices(self) -> list[int]:
        return [line.index for line in self.lines]


@dataclass
class Paste:
    """A read document: its lines, blocks, and the events the catalogue made of it."""

    lines: list[Line]
    blocks: list[Block]
    events: list[dict[str, Any]]
    unmatched: int


def _strip(raw: str) -> tuple[str, dict[str, Any]]:
    """The line without its tools' and launchers' prefixes, and what they named
    (`found["launched"]`: the line with only the launchers' prefixes, as a launcher's log
    file holds it)."""
    text, found = raw.rstrip("\r\n"), {}
    while text and (m := _TOOL_PREFIX.match(text)) and m.end() > 0:
        if m.group("stamp") and "stamp" not in found:
            found["stamp"] = m.group("stamp")
        text = text[m.end():]
    found["launched"] = text
    launched = strip_prefix(text)
    for name in ("rank", "local_rank", "host"):
        if getattr(launched, name) is not None:
            found[name] = getattr(launched, name)
    return launched.text, found


def _stamp(text: str, found: dict[str, Any], received: datetime) -> tuple[datetime | None, str | None]:
    """The line's own time and the host its syslog header names, if any."""
    time, header_host, _ = split_timestamp(text, received=received)
    if "stamp" in found:
        try:
            time = datetime.fromisoformat(found["stamp"].replace(",", ".")).replace(tzinfo=UTC)
        except ValueError:
            pass
    return time, header_host


def read_lines(raw_lines: Sequence[str], *, host: str | None = None, hosts: Sequence[str | None] = (),
               host_of_rank: Callable[[int], str | None] | None = None,
               received: datetime | None = None) -> list[Line]:
    """Lines without prefixes. A line's host is the one it names itself (launcher prefix,
    NCCL prefix, syslog header), else the one the caller gave for it (`hosts[i]`), else
    the host of its rank (`host_of_rank`, from the job's placement), else `host`; its time
    keeps the document's order."""
    received = as_utc(received) if received else datetime.now(UTC)
    stripped = [_strip(raw) for raw in raw_lines]
    clock = _Clock([text for text, _ in stripped], [found for _, found in stripped], received)
    lines: list[Line] = []
    for index, (raw, (text, found)) in enumerate(zip(raw_lines, stripped)):
        nccl = _NCCL_PREFIX.match(text)
        rank = found.get("rank")
        if rank is None and "Rank " in text and (m := _RANK_IN_TEXT.search(text)):
            rank = int(m.group("rank"))
        local = found.get("local_rank")
        if local is None and nccl:
            local = int(nccl.group("dev"))
        named = found.get("host") or (nccl.group("host") if nccl else None)
        fallback = (hosts[index] if index < len(hosts) else None) \
            or (host_of_rank(rank) if rank is not None and host_of_rank is not None else None) or host
        lines.append(Line(index, raw.rstrip("\r\n"), text, rank, local, named, fallback, clock, found["launched"]))
    return lines


def _pyspy_thread(lines: Sequence[Line], start: int, process: dict[str, Any]) -> tuple[Block, int]:
    m = _PYSPY_THREAD.match(lines[start].text)
    assert m is not None  # the caller matched this line
    block = Block("pyspy", [lines[start]], attrs={"thread": m.group("name") or m.group("tid"),
                                                  "state": m.group("state"), **process})
    i = start + 1
    while i < len(lines):
        frame = _PYSPY_FRAME.match(lines[i].text)
        if not frame:
            break
        block.frames.append(f"{frame.group('func')} ({frame.group('file')}:{frame.group('line')})")
        block.lines.append(lines[i])
        i += 1
    return block, i


def _terminate(lines: Sequence[Line], start: int) -> tuple[Block, int]:
    """`terminate called after throwing an instance of 'c10::CUDAError'`, its `what():`
    and the frames under it."""
    m = _TERMINATE.search(lines[start].text)
    assert m is not None  # the caller matched this line
    block = Block("terminate", [lines[start]], attrs={"exception": m.group("type")})
    i = start + 1
    while i < len(lines) and i - start < 200:
        text = lines[i].text
        what = _WHAT.match(text)
        if what and "text" not in block.attrs:
            block.head, block.attrs["text"] = len(block.lines), what.group("text")
        elif not (text.startswith(("frame #", "Exception raised from", "CUDA kernel errors", "For debugging",
                                   "Compile with", " ")) or not text.strip()):
            break
        if text.startswith("frame #"):
            block.frames.append(text.split(": ", 1)[-1])
        block.lines.append(lines[i])
        i += 1
    return block, i


def find_blocks(lines: Sequence[Line], records: Iterable[Record] = ()) -> list[Block]:
    """The multi-line facts of a document, in order: tracebacks and kernel hung-task
    reports as live ingest groups them (`records`, from `ingest.records`), py-spy thread
    stacks and C++ `terminate … what():` blocks read here. Ranks interleaved in one paste
    are read apart: each block keeps to the lines of the process that opened it."""
    blocks = [block for record in records if (block := _from_record(record, lines)) is not None]
    by_rank: dict[tuple, list[Line]] = {}
    for line in lines:
        by_rank.setdefault(line.stream, []).append(line)
    for stream in by_rank.values():
        process: dict[str, Any] = {}
        i = 0
        while i < len(stream):
            text = stream[i].text
            if text.startswith("Thread ") and _PYSPY_THREAD.match(text):
                block, i = _pyspy_thread(stream, i, process)
            elif "terminate called after throwing" in text and _TERMINATE.search(text):
                block, i = _terminate(stream, i)
            else:
                if text.startswith("Process ") and (m := _PYSPY_PROCESS.match(text)):
                    process = {"pid": int(m.group("pid")), "cmd": m.group("cmd")}
                i += 1
                continue
            blocks.append(block)
    blocks.sort(key=lambda b: b.lines[0].index)
    return blocks


def _from_record(record: Record, lines: Sequence[Line]) -> Block | None:
    """A traceback, or a hung-task report with its call trace, as a Block."""
    if record.kind not in ("traceback", "kernel"):
        return None
    attrs = (record.event or {}).get("attrs") or {}
    members = [lines[tag] for tag in record.tags]
    if record.kind == "traceback":
        return Block("traceback", members, head=record.head or 0, frames=list(record.frames),
                     attrs={"exception": attrs.get("exception")})
    if record.kind == "kernel" and attrs.get("event") == "hung_task":
        symbols = [frame.split("+", 1)[0] for frame in attrs.get("call_trace", ())]
        return Block("hung_task", members, frames=symbols,
                     attrs={"task": attrs.get("process"), "pid": attrs.get("pid"), "blocked_s": attrs.get("blocked_s")})
    return None


def _records(lines: Sequence[Line], source: str | None, received: datetime) -> list[Record]:
    """The lines grouped and parsed as live ingest does (`ingest.records`), one grouper per
    host the lines are attributed to; a record's tags are its lines' indices."""
    groupers: dict[str, RecordGrouper] = {}
    records: list[Record] = []
    for line in lines:
        host = line.stream[0] or line.default_host or UNNAMED_HOST
        grouper = groupers.get(host)
        if grouper is None:
            grouper = groupers[host] = RecordGrouper(host=host, source=source)
        records += grouper.feed(line.launched, tag=line.index, received=received)
    for grouper in groupers.values():
        records += grouper.flush()
    return records


def read(raw_lines: Iterable[str], *, host: str | None = None, hosts: Sequence[str | None] = (),
         host_of_rank: Callable[[int], str | None] | None = None, source: str | None = None,
         received: datetime | None = None) -> Paste:
    """The document read: lines, blocks, and one event per record live ingest would make of
    it (id `line-<index>` of the line that decides it, so an incident can quote it)."""
    raw = list(raw_lines)
    received = as_utc(received) if received else datetime.now(UTC)
    lines = read_lines(raw, host=host, hosts=hosts, host_of_rank=host_of_rank, received=received)
    records = _records(lines, source, received)
    events: list[dict[str, Any]] = []
    for record in records:
        if record.event is None:
            continue
        event, line = record.event, lines[record.tags[record.head or 0]]
        event["id"] = f"line-{line.index}"
        # the receipt time stands for "no time of its own": the line then takes its place
        # in the document's order
        if event["time"] == received:
            event["time"] = line.time
        if event.get("rank") is None and line.rank is not None:
            event["rank"] = line.rank
        if line.local_rank is not None:
            event["attrs"].setdefault("local_rank", line.local_rank)
        events.append(event)
    unmatched = len(lines) - len(events)
    return Paste(lines=lines, blocks=find_blocks(lines, records), events=events, unmatched=unmatched)
