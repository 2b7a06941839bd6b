"""Storm coalescing: the same line repeated within a window becomes one event with a count.

"The same" is the same host, kind, component, rank and attrs, minus the parts that vary
between repeats of one fault (the reporting process, elapsed times, per-line counts).
Membership goes by event time, so re-reading the same lines after a restart forms the same
groups; a group is also closed once it has been open a window's length of wall time, so a
storm's event is not held back while more lines of it may come.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson

# attrs that differ between repeats of one fault; `count` is summed instead
VOLATILE_ATTRS = frozenset({"count", "pid", "process", "elapsed_ms", "source"})


@dataclass
class _Group:
    event: dict[str, Any]
    until: datetime  # event time at which the window ends
    opened: float  # monotonic clock when the group opened
    lines: int
    total: int  # sum of the lines' own counts (1 for a line without one)


def _count(event: dict[str, Any]) -> int:
    value = event.get("attrs", {}).get("count")
    return value if isinstance(value, int) and value >= 0 else 1


class Coalescer:
    """Groups of one source's events; `add` and `expire` hand back the events whose group closed."""

    def __init__(self, *, window_s: float = 1.0, volatile: frozenset[str] = VOLATILE_ATTRS) -> None:
        self._window = timedelta(seconds=window_s)
        self._window_s = window_s
        self._volatile = volatile
        self._groups: dict[tuple, _Group] = {}

    def __len__(self) -> int:
        return len(self._groups)

    def _key(self, event: dict[str, Any]) -> tuple:
        attrs = {k: v for k, v in event.get("attrs", {}).items() if k not in self._volatile}
        try:
            frozen: bytes | str = orjson.dumps(attrs, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
        except TypeError:  # a number past 64 bits from a garbled line: the spool will refuse it
            frozen = repr(sorted(attrs.items()))
        return (event["host"], event["kind"], event.get("component"), event.get("rank"), frozen)

    def add(self, event: dict[str, Any], *, now: float) -> list[dict[str, Any]]:
        """Count `event` into its open group, or open one (closing the expired group first)."""
        key = self._key(event)
        group = self._groups.get(key)
        if group is not None and event["time"] < group.until:
            group.lines += 1
            group.total += _count(event)
            return []
        closed = [self._close(self._groups.pop(key))] if group is not None else []
        self._groups[key] = _Group(event, event["time"] + self._window, now, 1, _count(event))
        return closed

    def expire(self, *, now: float) -> list[dict[str, Any]]:
        """Close the groups open for a window's length of wall time."""
        done = [key for key, group in self._groups.items() if now - group.opened >= self._window_s]
        return [self._close(self._groups.pop(key)) for key in done]

    def drain(self) -> list[dict[str, Any]]:
        """Close every group (shutdown, or a storm that never pauses)."""
        groups, self._groups = self._groups, {}
        return [self._close(group) for group in groups.values()]

    @staticmethod
    def _close(group: _Group) -> dict[str, Any]:
        event = group.event
        if group.lines > 1:
            event["attrs"] = {**event.get("attrs", {}), "count": group.total}
        return event
