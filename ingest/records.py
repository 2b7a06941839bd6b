"""Multi-line records: a Python traceback, a kernel oops or hung-task report with its call
trace, a machine-check block — several lines that say one thing.

Parsed line by line, a traceback's frames are noise at best (a code line quoting
`"NCCL error"`) and its one useful line, the exception, loses its context; a kernel call
trace's frames name functions like `out_of_memory` that must not read as an OOM. So the
lines of one record are grouped first and the record gives at most one event:

- a traceback (`Traceback (most recent call last):`, its frames, its exception line) gives
  the exception line's event, with `attrs.exception` (its type) and `attrs.frames`
  (`file:line in function`, innermost last); frames never give events of their own;
- a kernel line that gives an event (oops, panic, hung task, lockup, MCE…) takes the
  report lines that follow it (`CPU:`, `Hardware name:`, `Call Trace:`, `func+0x1/0x2`,
  registers, `---[ end trace …]---`) into `attrs.call_trace`;
- consecutive `[Hardware Error]:` / `mce:` lines are one block: its first event, with
  the block's detail lines in `attrs.details`.

Lines are grouped per process: launcher prefixes (`[rank3]:`, `42: `) say which process
wrote a line (`ingest.prefixes`), so tracebacks of eight ranks interleaved line by line
in one file come out as eight records. A record closes at `max_lines`, and in a stream
once it has been open `max_wait_s` of wall time, so a stuck record cannot hold the stream.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, tzinfo
from typing import Any

from faultgraph.ingest.parse import parse_line
from faultgraph.ingest.prefixes import NO_PREFIX, Prefixed, has_prefix, strip_prefix
from faultgraph.ingest.timestamps import split_timestamp

__all__ = ["Prefixed", "Record", "RecordGrouper", "group_lines", "strip_prefix"]

MAX_FRAMES = 30  # innermost frames kept in attrs: where it failed, not how it got there

_TRACEBACK = "Traceback (most recent call last):"
_FRAME = re.compile(r'\s+File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?')
_EXCEPTION = re.compile(r"(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning|"
                        r"Fault|Timeout|Failure))(?::|$)")
# What follows a kernel report's headline (arch/x86/kernel/dumpstack.c, kernel/hung_task.c,
# mm/oom_kill.c dump_header, lib/dump_stack.c): none of it is a new report.
_KERNEL_DETAIL = re.compile(
    r"\s*(?:Call Trace:|<(?:/?TASK|/?IRQ|/?NMI|EOI)>|\? |\[<[0-9a-f]+>\]|"
    r"[\w.$]+\+0x[0-9a-f]+/0x[0-9a-f]+|Oops: |"
    r"(?:CPU|PID): \d+|Hardware name:|Modules linked in:|Tainted:|Not tainted|task: |"
    r"(?:RIP|RSP|RAX|RBX|RCX|RDX|RSI|RDI|RBP|R\d+|FS|GS|CS|CR\d|IP|EFLAGS|ORIG_RAX)\b|"
    r"Code:|Stack:|PGD |PUD |PMD |PTE |Workqueue:|task:\S+ +state:|\S+ +[DRSTZ] [0-9a-f]{16} |"
    r"\"echo 0 > /proc/sys/kernel/hung_task_timeout_secs\"|"
    r"---\[ end (?:trace|Kernel panic)|Kernel Offset:|Rebooting in|"
    r"(?:[0-9a-f]{16} ?){2,}|$)")
_KERNEL_FRAME = re.compile(r"(?:\? )?(?:\[<[0-9a-f]+>\] )?(?:\? )?([\w.$]+\+0x[0-9a-f]+/0x[0-9a-f]+)")
_HW_BLOCK = re.compile(r"(?:mce: |\{\d+\})?\[Hardware Error\]:|mce: CPU\d+: |"
                       r"EDAC \w+ MC\d+: (?:HANDLING MCE|CPU \d+: Machine Check|TSC |ADDR |MISC |PROCESSOR )")
_KERNEL_KINDS = frozenset({"host_kernel", "host_mce", "host_oom", "host_mem_ecc"})
# The driver's fallen-off-the-bus notice is one message printed as three "NVRM:" lines.
_NVRM_BLOCK = "NVRM: The NVIDIA GPU "
_NVRM_LINES = 4


class Record:
    """Lines that say one thing, and the event they give (None when they give none).

    `lines` are the raw lines (prefixes kept), `tags` whatever the caller fed with each
    (the agent's line positions, a document's line numbers), `head` the offset in `lines`
    of the line whose event it is, `kind` one of `line`, `traceback`, `kernel`,
    `hardware_error`, `nvrm` (the driver's three-line fallen-off-the-bus notice), `key`
    the launcher prefix the lines share; `frames` (traceback frames or call-trace symbols)
    and `details` (a hardware-error block's detail lines) as the event's attrs carry them.
    A plain slotted class: one is made for every line read, so it must be cheap.
    """

    __slots__ = ("lines", "tags", "kind", "key", "head", "event", "opened", "frames",
                 "details", "done", "received", "boot_time")

    def __init__(self, lines: list[str], tags: list[Any], kind: str = "line", key: str = "",
                 head: int | None = None, event: dict[str, Any] | None = None,
                 opened: float = 0.0, received: datetime | None = None,
                 boot_time: datetime | None = None) -> None:
        self.lines, self.tags, self.kind, self.key = lines, tags, kind, key
        self.head, self.event, self.opened = head, event, opened
        self.received, self.boot_time = received, boot_time
        self.frames: list[str] = []
        self.details: list[str] = []
        self.done = False

    def __repr__(self) -> str:
        return f"Record(kind={self.kind!r}, key={self.key!r}, lines={len(self.lines)}, event={self.event is not None})"


class RecordGrouper:
    """Groups a stream's lines into records; `feed` hands back the records now complete.

    Parsing happens here (each line once), with the `parse_line` arguments given at
    construction and per line. A line that gives no event and continues no record is a
    record of its own at once, so only lines that may be followed by more of their record
    are held: a traceback until its exception line, an event line until the next line of
    its process shows whether a call trace follows.
    """

    def __init__(self, *, host: str | None = None, source: str | None = None,
                 zone: tzinfo = UTC, max_lines: int = 200,
                 max_wait_s: float = 5.0) -> None:
        if max_lines < 1:
            raise ValueError("max_lines must be at least 1")
        self._host, self._source, self._zone = host, source, zone
        self.max_lines = max_lines
        self.max_wait_s = max_wait_s
        self._open: dict[str, Record] = {}  # prefix key -> the record still taking lines

    def __len__(self) -> int:
        return len(self._open)

    def feed(self, line: str, *, tag: Any = None, received: datetime | None = None,
             boot_time: datetime | None = None, now: float = 0.0) -> list[Record]:
        """Add one line; the records it completed (possibly its own), oldest first."""
        line = line.rstrip("\r\n")
        if has_prefix(line):
            prefixed = strip_prefix(line)
            key, text = prefixed.key, prefixed.text
        else:
            prefixed, key, text = NO_PREFIX, "", line
        out: list[Record] = []
        record = self._open.get(key)
        if record is not None:
            if record.kind == "traceback":
                if self._traceback_line(record, line, tag, text, received, boot_time):
                    if record.done or len(record.lines) >= self.max_lines:
                        out.append(self._close(key))
                    return out
                out.append(self._close(key))
            elif self._continues(record, text, received, boot_time):
                record.lines.append(line)
                record.tags.append(tag)
                if len(record.lines) >= self.max_lines:
                    out.append(self._close(key))
                return out
            else:
                out.append(self._close(key))
        if self.max_lines > 1 and _TRACEBACK in text:
            self._open[key] = Record([line], [tag], "traceback", key, opened=now,
                                     received=received, boot_time=boot_time)
            return out
        if self.max_lines > 1 and _NVRM_BLOCK in text:
            self._open[key] = Record([line], [tag], "nvrm", key, opened=now, received=received,
                                     boot_time=boot_time)
            return out
        event = parse_line(line, host=self._host, source=self._source, received=received,
                           boot_time=boot_time, zone=self._zone, prefixed=prefixed)
        if event is None:
            out.append(Record([line], [tag], "line", key))
        elif event["kind"] in _KERNEL_KINDS and self.max_lines > 1:
            kind = "hardware_error" if _HW_BLOCK.search(text, 0, 200) else "kernel"
            self._open[key] = Record([line], [tag], kind, key, 0, event, now)
        else:
            out.append(Record([line], [tag], "line", key, 0, event))
        return out

    def expire(self, *, now: float) -> list[Record]:
        """Close the records open `max_wait_s` of wall time or longer."""
        stale = [k for k, r in self._open.items() if now - r.opened >= self.max_wait_s]
        return [self._close(k) for k in stale]

    def flush(self) -> list[Record]:
        """Close every open record (end of input, shutdown)."""
        return [self._close(k) for k in list(self._open)]

    # ------------------------------------------------------------------ internals

    def _parse(self, line: str, received: datetime | None,
               boot_time: datetime | None) -> dict[str, Any] | None:
        return parse_line(line, host=self._host, source=self._source, received=received,
                          boot_time=boot_time, zone=self._zone)

    def _traceback_line(self, record: Record, line: str, tag: Any, text: str,
                        received: datetime | None, boot_time: datetime | None) -> bool:
        """Take `line` into an open traceback if it belongs there; the exception line ends it."""
        if text.startswith(" ") or text.startswith("\t") or text.startswith(_TRACEBACK):
            record.lines.append(line)
            record.tags.append(tag)
            frame = _FRAME.match(text)
            if frame:
                where = f"{frame['file']}:{frame['line']}"
                record.frames.append(f"{where} in {frame['func']}" if frame["func"] else where)
            return True
        if not text.strip() or len(record.lines) < 2:
            return False  # a traceback with no frame yet, or a blank line: not this record
        record.lines.append(line)
        record.tags.append(tag)
        record.head = len(record.lines) - 1
        record.event = self._parse(line, received, boot_time)
        exc = _EXCEPTION.match(text)
        if record.event is not None and exc:
            record.event["attrs"]["exception"] = exc["type"]
        record.done = True
        return True

    def _continues(self, record: Record, text: str, received: datetime | None,
                   boot_time: datetime | None) -> bool:
        _, _, body = split_timestamp(text, received=received, boot_time=boot_time,
                                     zone=self._zone)
        if record.kind == "hardware_error":
            if _HW_BLOCK.search(body, 0, 40):
                record.details.append(body.strip())
                return True
            return False
        if record.kind == "nvrm":
            body = body.lstrip()
            if body.startswith("NVRM: ") and not body.startswith("NVRM: Xid"):
                record.details.append(body)
                return len(record.lines) < _NVRM_LINES
            return False
        if _KERNEL_DETAIL.match(body):
            frame = _KERNEL_FRAME.match(body.strip())
            if frame:
                record.frames.append(frame.group(1))
            return True
        return False

    def _close(self, key: str) -> Record:
        record = self._open.pop(key)
        if record.kind == "traceback" and record.head is None:
            # no exception line came: the opening line still gets its own chance
            record.event = self._parse(record.lines[0], record.received, record.boot_time)
            record.head = 0 if record.event else None
        if record.kind == "nvrm":
            joined = "\n".join([record.lines[0], *record.details])
            record.event = self._parse(joined, record.received, record.boot_time)
            record.head = 0 if record.event else None
            if record.event:
                record.event["message"] = record.event["message"].replace("\n", " ")
            return record
        event = record.event
        if event is not None:
            attrs = event["attrs"]
            if record.kind == "traceback" and record.frames:
                attrs["frames"] = record.frames[-MAX_FRAMES:]
            elif record.kind == "kernel" and record.frames:
                attrs["call_trace"] = record.frames[:MAX_FRAMES]
            elif record.kind == "hardware_error" and record.details:
                attrs["details"] = record.details[:MAX_FRAMES]
            if len(record.lines) > 1:
                attrs["record_lines"] = len(record.lines)
        return record


def group_lines(lines: Iterable[str], *, host: str | None = None, source: str | None = None,
                received: datetime | None = None, boot_time: datetime | None = None,
                zone: tzinfo = UTC, max_lines: int = 200) -> Iterator[Record]:
    """The records of a whole document, each line in exactly one; `Record.tags` are the
    lines' indices in `lines`. Records come out as they complete (a traceback after the
    lines of other processes written while it was open)."""
    received = received or datetime.now(UTC)
    grouper = RecordGrouper(host=host, source=source, zone=zone, max_lines=max_lines)
    for index, line in enumerate(lines):
        yield from grouper.feed(line, tag=index, received=received, boot_time=boot_time)
    yield from grouper.flush()
