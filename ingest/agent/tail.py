"""Follow files the way `tail -F` does, and resume where the last run stopped.

A file is known by (device, inode), not by name: when the name points at a new inode the
old file was rotated, and it is read to its end (with a grace period for writers still
holding it) before the new one is opened from its start. A file that shrinks below the
read position was truncated (copytruncate): reading restarts at 0 under a new generation,
so lines at reused offsets get new identities. The saved state is (device, inode,
generation, offset); on restart a file rotated while the agent was down is found again by
its inode among its siblings and finished first.
"""

import glob
import logging
import os
import time
from typing import BinaryIO

import orjson

from faultgraph.ingest.agent.lines import Line

log = logging.getLogger("faultgraph.agent")

MAX_LINE_BYTES = 64 * 1024  # a longer "line" is cut: memory stays bounded on binary junk
ROTATION_GRACE_S = 1.0  # keep reading a rotated file this long after its last byte


class FileTail:
    """One path, followed across rotation and truncation."""

    def __init__(self, path: str, saved: str | None, *, from_start: bool) -> None:
        self.path = path
        self.name = "file:" + path
        self.label = path
        self._file: BinaryIO | None = None
        self._dev = self._ino = 0
        self._gen = 0
        self._offset = 0  # end of the last complete line handed out
        self._pending = b""
        self._rotated_at: float | None = None
        self._from_start = from_start
        self._resume(orjson.loads(saved) if saved else None)

    # -- opening -------------------------------------------------------------------------

    def _open(self, path: str, offset: int, gen: int) -> bool:
        try:
            handle = open(path, "rb")  # noqa: SIM115 - held open across calls, closed on rotation
        except OSError:
            return False
        st = os.fstat(handle.fileno())
        if offset > st.st_size:
            log.warning("%s shrank below the saved offset while the agent was away: reading it from the start", path)
            offset, gen = 0, gen + 1
        handle.seek(offset)
        self._file, self._dev, self._ino, self._gen, self._offset = handle, st.st_dev, st.st_ino, gen, offset
        self._pending, self._rotated_at = b"", None
        return True

    def _resume(self, saved: dict | None) -> None:
        if saved is None:
            if os.path.exists(self.path):
                size = os.path.getsize(self.path)
                self._open(self.path, 0 if self._from_start else size, 0)
            return
        ident = (saved["dev"], saved["ino"])
        try:
            st = os.stat(self.path)
            current = (st.st_dev, st.st_ino)
        except OSError:
            current = None
        if current == ident:
            self._open(self.path, saved["offset"], saved["gen"])
            return
        rotated = self._find_inode(*ident)
        if rotated and self._open(rotated, saved["offset"], saved["gen"]):
            log.info("%s was rotated while the agent was away: finishing %s first", self.path, rotated)
            self._rotated_at = time.monotonic()
            return
        log.warning("%s was replaced and its old file is gone: reading the new one from the start", self.path)
        self._open(self.path, 0, 0)

    def _find_inode(self, dev: int, ino: int) -> str | None:
        directory = os.path.dirname(self.path) or "."
        try:
            entries = list(os.scandir(directory))
        except OSError:
            return None
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == (dev, ino):
                return entry.path
        return None

    # -- reading -------------------------------------------------------------------------

    def _state(self, offset: int) -> str:
        return orjson.dumps({"dev": self._dev, "ino": self._ino, "gen": self._gen, "offset": offset}).decode()

    def _lines(self, data: bytes, *, final: bool = False) -> list[Line]:
        """Complete lines of pending + data; at the end of a rotated file, the rest too."""
        pieces = (self._pending + data).split(b"\n")
        self._pending = pieces.pop()
        ended = [(piece, len(piece) + 1) for piece in pieces]
        if self._pending and (final or len(self._pending) > MAX_LINE_BYTES):
            ended.append((self._pending, len(self._pending)))
            self._pending = b""
        stream = f"file:{self._dev}:{self._ino}:{self._gen}"
        out = []
        for piece, size in ended:
            start = self._offset
            self._offset += size
            out.append(Line(piece.decode("utf-8", "replace"), stream, str(start), self._state(self._offset)))
        return out

    def read(self, max_bytes: int) -> tuple[list[Line], bool]:
        """New complete lines (at most about `max_bytes`), and whether the file is at its end."""
        if self._file is None:
            if not self._open(self.path, 0, 0):
                return [], True
            log.info("following %s from its start", self.path)
        assert self._file is not None  # _open succeeded
        data = self._file.read(max_bytes)
        if data:
            return self._lines(data), len(data) < max_bytes
        return self._at_end(), True

    def _at_end(self) -> list[Line]:
        assert self._file is not None
        position = self._offset + len(self._pending)
        if os.fstat(self._file.fileno()).st_size < position:
            log.warning("%s was truncated: reading it again from the start", self.path)
            self._file.seek(0)
            self._offset, self._gen, self._pending = 0, self._gen + 1, b""
            return []
        try:
            st = os.stat(self.path)
            moved = (st.st_dev, st.st_ino) != (self._dev, self._ino)
        except OSError:
            moved = True
        if not moved:
            self._rotated_at = None
            return []
        now = time.monotonic()
        if self._rotated_at is None:
            self._rotated_at = now
        if now - self._rotated_at < ROTATION_GRACE_S or not os.path.exists(self.path):
            return []
        rest = self._lines(b"", final=True)
        self._file.close()
        self._file = None
        if self._open(self.path, 0, 0):
            log.info("%s was rotated: following the new file", self.path)
        return rest

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class FileSources:
    """The files matching some globs, re-expanded now and then so new files are picked up."""

    def __init__(self, globs: list[str], saved: dict[str, str], *, read_from: str, rescan_s: float = 2.0) -> None:
        self._globs = globs
        self._saved = saved
        self._read_from = read_from
        self._rescan_s = rescan_s
        self._scanned_at: float | None = None
        self.tails: dict[str, FileTail] = {}

    def refresh(self) -> list[FileTail]:
        """The tails to read now; files that appeared since the first scan start at 0."""
        now = time.monotonic()
        if self._scanned_at is None or now - self._scanned_at >= self._rescan_s:
            first = self._scanned_at is None
            for pattern in self._globs:
                paths = glob.glob(pattern) if glob.has_magic(pattern) else [pattern]
                for path in paths:
                    if path not in self.tails and (os.path.isfile(path) or "file:" + path in self._saved):
                        from_start = not first or self._read_from == "beginning"
                        self.tails[path] = FileTail(path, self._saved.get("file:" + path), from_start=from_start)
            self._scanned_at = now
        return list(self.tails.values())

    def close(self) -> None:
        for tail in self.tails.values():
            tail.close()
