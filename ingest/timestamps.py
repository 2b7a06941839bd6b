"""Split a log line's leading timestamp (and syslog host) from its message.

Formats, tried in order of how cheaply they are recognised:
- RFC 3339 as rsyslog and `journalctl -o short-iso-precise` write it, followed by the
  syslog host and tag (`2026-11-29T08:00:00.123456+00:00 node0042 kernel: ...`);
  `dmesg --time-format iso` (comma before the fraction, no host) likewise;
- classic syslog `Nov 29 08:00:00 node0042 kernel: ...` (no year: the year of receipt);
- `dmesg -T` ctime `[Fri Oct 14 14:56:49 2022] ...` (the day unpadded too: `[Sun Dec 1 ...]`);
- NVIDIA fabric manager's `[Jul 23 2024 07:53:55] [ERROR] ...` and Python logging's
  `[2024-03-01 10:00:00,123] ...` (DeepSpeed, sglang), both in `zone`;
- a printk level `<4>` before any kernel format (pstore, `dmesg -r`);
- `dmesg` monotonic `[171167.620236] ...` and `dmesg -H` deltas `[  +0.000004]`: seconds
  since boot, no absolute time;
- `/dev/kmsg` records `prio,seq,usec,flags;msg`: usec since boot, absolute only when the
  boot time is known;
- glog as PyTorch writes it, `[E1129 08:00:00.123456 ...]`, possibly after a `[rankN]:`
  prefix: the time is read, the line is kept whole (the glog header is the application's
  own text, not a transport header). PyTorch does not zero-pad the month (c10 logging
  prints `tm_mon + 1` bare, the day as two digits), so `[E207 ...]` is 7 February: the
  last two digits are the day, the one or two before them the month.
Times without a zone are in `zone` (default UTC). The message keeps the syslog tag except
`kernel:`, so a kernel line reads the same whether it came from syslog, journald or
/dev/kmsg.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo

_MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}

_DMESG_DECODE = re.compile(r"(?:kern|user|daemon|syslog|local\d)\s*:\s*\w+\s*: ")
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:([.,])(\d+))?(Z|[+-]\d{2}:?\d{2})?\s+")
_HOST_TAG = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*) ([A-Za-z_][\w.\-/]*)(?:\[\d+\])?: ")
_SYSLOG = re.compile(
    r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) ([ \d]\d) (\d{2}):(\d{2}):(\d{2})"
    r"(?:\.(\d+))? (?:([A-Za-z0-9][A-Za-z0-9._-]*) | )")  # some writers leave the host empty
_TAG = re.compile(r"([A-Za-z_][\w.\-/]*)(?:\[\d+\])?: ")
_CTIME = re.compile(
    r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
    r" {1,2}(\d{1,2}) (\d{1,2}):(\d{2}):(\d{2}) (\d{4})\]\s*")
_FABRIC = re.compile(
    r"\[(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}(\d{1,2}) (\d{4})"
    r" (\d{2}):(\d{2}):(\d{2})\]\s*")
_PYLOG = re.compile(
    r"\[(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(Z|[+-]\d{2}:?\d{2})?[\] ]")
_PRINTK_LEVEL = re.compile(r"<\d>(?=\[)")
_MONOTONIC = re.compile(r"\[\s*\+?\d+\.\d+\]\s*(?:\[\s*[CT]\d+\]\s*)?")
_KMSG = re.compile(r"\d+,\d+,(\d+),[^;]*;")
_GLOG = re.compile(r"\[[IWEF](1[0-2]|0?[1-9])(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?[ \]]")
_GLOG_WINDOW = 160  # "[rankNNNNN]:" and a tool's prefix (Ray's "(WorkerDict pid=…)", a progress bar)


def _micro(frac: str | None) -> int:
    return int((frac or "0")[:6].ljust(6, "0"))


def _zone(text: str | None, default: tzinfo) -> tzinfo:
    if not text:
        return default
    if text == "Z":
        return UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    return timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))


def as_utc(t: datetime) -> datetime:
    """A datetime in UTC; a naive one is taken to be UTC already."""
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def _in_receipt_year(month: int, day: int, h: int, m: int, s: int, micro: int,
                     received: datetime, zone: tzinfo) -> datetime:
    """A yearless time in the year of receipt; a line stamped just before New Year but
    received just after belongs to the previous year."""
    year = received.astimezone(zone).year
    t = datetime(year, month, day, h, m, s, micro, tzinfo=zone).astimezone(UTC)
    if t - received > timedelta(days=1):
        t = datetime(year - 1, month, day, h, m, s, micro, tzinfo=zone).astimezone(UTC)
    return t


def _strip_kernel_tag(rest: str) -> str:
    tag = _TAG.match(rest)
    if tag and tag.group(1) == "kernel":
        rest = rest[tag.end():]
        mono = _MONOTONIC.match(rest)
        if mono:
            rest = rest[mono.end():]
    return rest


def split_timestamp(line: str, *, received: datetime | None = None,
                    boot_time: datetime | None = None,
                    zone: tzinfo = UTC) -> tuple[datetime | None, str | None, str]:
    """(time in UTC or None, host from a syslog header or None, the rest of the line).

    `received` supplies the year for yearless formats (default: now); `boot_time` turns
    /dev/kmsg's microseconds since boot into an absolute time. Naive datetimes are UTC.
    `zone` is the zone of stamps that carry none (syslog, glog, `dmesg -T`). Never raises
    on odd text: an impossible date (Feb 30) just means no time was found.
    """
    try:
        return _split(line, as_utc(received) if received else datetime.now(UTC),
                      as_utc(boot_time) if boot_time else None, zone)
    except (ValueError, OverflowError):
        return None, None, line


def _split(line: str, received: datetime, boot_time: datetime | None,
           zone: tzinfo) -> tuple[datetime | None, str | None, str]:
    first = line[:1]
    if first.isdigit():
        m = _RFC3339.match(line)
        if m:
            y, mo, d, h, mi, s, sep, frac, offset = m.groups()
            t = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), _micro(frac),
                         tzinfo=_zone(offset, zone)).astimezone(UTC)
            rest = line[m.end():]
            if sep != ",":  # dmesg --time-format iso uses a comma and never has a host
                header = _HOST_TAG.match(rest)
                if header:
                    return t, header.group(1), _strip_kernel_tag(rest[len(header.group(1)) + 1:])
            return t, None, rest
        m = _KMSG.match(line)
        if m:
            since_boot = timedelta(microseconds=int(m.group(1)))
            return (boot_time + since_boot if boot_time else None), None, line[m.end():]
    elif first == "[":
        m = _CTIME.match(line)
        if m:
            mon, d, h, mi, s, y = m.groups()
            t = datetime(int(y), _MONTHS[mon], int(d), int(h), int(mi), int(s),
                         tzinfo=zone).astimezone(UTC)
            return t, None, line[m.end():]
        m = _MONOTONIC.match(line)
        if m:
            return None, None, line[m.end():]
        m = _FABRIC.match(line)
        if m:
            mon, d, y, h, mi, s = m.groups()
            t = datetime(int(y), _MONTHS[mon], int(d), int(h), int(mi), int(s),
                         tzinfo=zone).astimezone(UTC)
            return t, None, line[m.end():]
        m = _PYLOG.match(line)
        if m:
            y, mo, d, h, mi, s, frac, offset = m.groups()
            t = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), _micro(frac),
                         tzinfo=_zone(offset, zone)).astimezone(UTC)
            return t, None, line
    elif first == "<":
        m = _PRINTK_LEVEL.match(line)
        if m:
            return _split(line[m.end():], received, boot_time, zone)
    elif first in "JFMASOND":
        m = _SYSLOG.match(line)
        if m:
            mon, d, h, mi, s, frac, host = m.groups()
            t = _in_receipt_year(_MONTHS[mon], int(d), int(h), int(mi), int(s), _micro(frac),
                                 received, zone)
            return t, host, _strip_kernel_tag(line[m.end():])
    elif first in "kudsl":
        m = _DMESG_DECODE.match(line)
        if m:
            return _split(line[m.end():], received, boot_time, zone)
    m = _GLOG.search(line, 0, _GLOG_WINDOW)
    if m:
        mo, d, h, mi, s, frac = m.groups()
        t = _in_receipt_year(int(mo), int(d), int(h), int(mi), int(s), _micro(frac), received,
                             zone)
        return t, None, line
    return None, None, line
