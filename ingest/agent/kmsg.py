"""The kernel log, from `/dev/kmsg` where it can be read, else from `journalctl -k -f`.

Both carry a position that survives an agent restart: /dev/kmsg records are numbered per
boot (resume after the saved sequence number of the same boot id), journald has cursors
(`--after-cursor`). Either way the line's identity is (boot, position), so a re-read
record gets the id it had before.
"""

import logging
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from faultgraph.ingest.agent.lines import Line, Source

log = logging.getLogger("faultgraph.agent")

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
UPTIME = Path("/proc/uptime")


def boot_id() -> str:
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return "unknown-boot"


def boot_time() -> datetime:
    """When the kernel's clock started: /dev/kmsg stamps are microseconds since then."""
    try:
        uptime = float(UPTIME.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        uptime = time.monotonic()
    return datetime.now(UTC) - timedelta(seconds=uptime)


class KmsgReader:
    """`/dev/kmsg`, non-blocking: each read() of the device returns one record
    `prio,seq,usec,flags;text` followed by ` KEY=value` continuation lines."""

    name = "kmsg"
    label = "kmsg"

    def __init__(self, saved: str | None, *, from_start: bool, path: str = "/dev/kmsg") -> None:
        self._fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self._boot = boot_id()
        self._boot_time = boot_time()
        self._after = -1
        self._pending = b""
        state = orjson.loads(saved) if saved else None
        if state and state.get("boot_id") == self._boot:
            self._after = int(state["seq"])
        elif not from_start:
            os.lseek(self._fd, 0, os.SEEK_END)

    def read(self, max_bytes: int) -> tuple[list[Line], bool]:
        out: list[Line] = []
        size = 0
        while size < max_bytes:
            try:
                chunk = os.read(self._fd, 8192)
            except BlockingIOError:
                return out, True
            except BrokenPipeError:  # records were overwritten before we read them
                log.warning("kernel log ring buffer overran: some records were lost before the agent read them")
                continue
            if not chunk:  # a regular file standing in for the device has an end
                return out, True
            size += len(chunk)
            records = (self._pending + chunk).split(b"\n")
            self._pending = records.pop()
            for record in records:
                line = self._line(record)
                if line is not None:
                    out.append(line)
        return out, False

    def _line(self, record: bytes) -> Line | None:
        if not record or record[:1] == b" ":  # continuation (dictionary) lines
            return None
        header, _, _ = record.partition(b";")
        fields = header.split(b",")
        if len(fields) < 3 or not fields[1].isdigit():
            return None
        seq = int(fields[1])
        if seq <= self._after:
            return None
        self._after = seq
        resume = orjson.dumps({"boot_id": self._boot, "seq": seq}).decode()
        return Line(record.decode("utf-8", "replace"), f"kmsg:{self._boot}", str(seq), resume,
                    boot_time=self._boot_time)

    def close(self) -> None:
        os.close(self._fd)


class JournalReader:
    """`journalctl -k -f -o json` as a child process, restarted from its last cursor if it
    dies; records are read without blocking from its pipe."""

    name = "journal"
    label = "kmsg"

    def __init__(self, saved: str | None, *, from_start: bool, command: Sequence[str] = ("journalctl",)) -> None:
        self._command = list(command)
        self._cursor: str | None = orjson.loads(saved)["cursor"] if saved else None
        self._from_start = from_start
        self._pending = b""
        self._proc: subprocess.Popen | None = None
        self._started_at = 0.0
        self._start()

    def _start(self) -> None:
        args = [*self._command, "-k", "-f", "-o", "json", "--no-pager"]
        if self._cursor:
            args += ["--after-cursor", self._cursor]
        else:
            args += ["-b", "-n", "all"] if self._from_start else ["-n", "0"]
        self._proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        os.set_blocking(self._proc.stdout.fileno(), False)  # type: ignore[union-attr]
        self._started_at = time.monotonic()
        self._pending = b""

    def read(self, max_bytes: int) -> tuple[list[Line], bool]:
        assert self._proc is not None and self._proc.stdout is not None
        try:
            chunk = os.read(self._proc.stdout.fileno(), max_bytes)
        except BlockingIOError:
            return [], True
        if not chunk:
            if self._proc.poll() is not None and time.monotonic() - self._started_at > 5:
                log.warning("journalctl exited (%s): starting it again after the last cursor", self._proc.returncode)
                self._proc.stdout.close()
                self._start()
            return [], True
        records = (self._pending + chunk).split(b"\n")
        self._pending = records.pop()
        out = [line for line in map(self._line, records) if line is not None]
        return out, len(chunk) < max_bytes

    def _line(self, record: bytes) -> Line | None:
        try:
            entry = orjson.loads(record)
            cursor = entry["__CURSOR"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return None
        message = entry.get("MESSAGE")
        if isinstance(message, list):  # journald sends non-UTF-8 messages as byte arrays
            message = bytes(b & 0xFF for b in message if isinstance(b, int)).decode("utf-8", "replace")
        if not isinstance(message, str):
            return None
        try:
            when = datetime.fromtimestamp(int(entry["__REALTIME_TIMESTAMP"]) / 1e6, UTC)
        except (KeyError, ValueError, TypeError, OverflowError):
            when = None
        self._cursor = cursor
        return Line(message, "journal", cursor, orjson.dumps({"cursor": cursor}).decode(), time=when)

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            self._proc.wait(timeout=5)


def open_kernel_log(saved: dict[str, str], *, from_start: bool, journal_command: Sequence[str] = ("journalctl",)) -> Source:
    """/dev/kmsg if this process may read it, else journald; ValueError when neither is there."""
    try:
        return KmsgReader(saved.get(KmsgReader.name), from_start=from_start)
    except OSError as exc:
        reason = f"/dev/kmsg: {exc.strerror}"
    if shutil.which(journal_command[0]):
        log.info("%s; reading the kernel log through %s", reason, journal_command[0])
        return JournalReader(saved.get(JournalReader.name), from_start=from_start, command=journal_command)
    raise ValueError(f"no kernel log to read ({reason}; no {journal_command[0]} on PATH)")
