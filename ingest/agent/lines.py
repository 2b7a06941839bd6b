"""What every source hands the agent: one line, where it sits in its stream, how to resume."""

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class Line:
    """A line and its place: `stream` names the byte stream (a file's device, inode and
    truncation generation; a boot's kernel log), `pos` the line's position in it, so
    (stream, pos) is the line's identity across agent restarts. `resume` is the source's
    saved state after this line, opaque to everything but the source."""

    text: str
    stream: str
    pos: str
    resume: str
    time: datetime | None = None  # the transport's own timestamp (journald), if any
    boot_time: datetime | None = None  # dates /dev/kmsg records


class Source(Protocol):
    """A followed log: `read` never blocks and says whether it has reached the end for now."""

    name: str
    label: str  # kept in the events as attrs.source

    def read(self, max_bytes: int) -> tuple[list[Line], bool]: ...

    def close(self) -> None: ...


def event_id(*, host: str, line: Line) -> str:
    """The id of the event whose first line is `line`: the same after any re-read, so the
    service stores a resent event once."""
    key = "\x1f".join((host, line.stream, line.pos))
    return "a-" + hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
