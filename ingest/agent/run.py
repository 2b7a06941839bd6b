"""The agent's main loop: read every source, parse at the edge, coalesce, spool, send.

Reading and sending run in two threads around the spool, so a slow or absent service
never stalls reading (until the spool is full, when reading pauses and positions hold).
A source's saved position only moves to a quiet point, a line after which none of its
storm groups is still open: a restart re-reads from there and rebuilds the same groups,
whose ids (from their first line's place) the service already has.
"""

import logging
import signal
import socket
import threading
import time
import tomllib
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from faultgraph.ingest.agent.client import Sender, tls_context
from faultgraph.ingest.agent.coalesce import VOLATILE_ATTRS, Coalescer
from faultgraph.ingest.agent.health import HealthCollector, HealthWatch, load_thresholds
from faultgraph.ingest.agent.kmsg import open_kernel_log
from faultgraph.ingest.agent.lines import Line, Source, event_id
from faultgraph.ingest.agent.spool import Spool
from faultgraph.ingest.agent.tail import FileSources
from faultgraph.ingest.progress import LossWatch
from faultgraph.ingest.records import Record, RecordGrouper

log = logging.getLogger("faultgraph.agent")


def short_hostname(name: str) -> str:
    """`node0042.cluster.local` → `node0042`, as syslog headers and topologies name hosts."""
    return name if name.replace(".", "").isdigit() else name.split(".", 1)[0]


@dataclass
class AgentConfig:
    """Every setting, from flags or a TOML file with the same names."""

    url: str
    token: str | None = None
    ca_file: Path | None = None  # CA to verify an https:// service with (default: the system's)
    cert: Path | None = None  # client certificate for mutual TLS
    key: Path | None = None  # its key, unless in the cert file
    host: str = field(default_factory=lambda: short_hostname(socket.gethostname()))
    files: list[str] = field(default_factory=list)
    kmsg: bool = False
    state_dir: Path = Path("/var/lib/faultgraph-agent")
    read_from: str = "end"  # files present at the very first start: "end" (like tail) or "beginning"
    zone: str = "UTC"  # of log timestamps that carry none
    poll_interval_s: float = 0.25
    batch_size: int = 500
    max_spool_events: int = 1_000_000
    coalesce_window_s: float = 1.0
    max_hold_s: float = 5.0  # longest a storm group may keep a source's position from moving
    record_max_lines: int = 200  # a multi-line record (traceback, call trace) closes at this many lines
    record_max_wait_s: float = 2.0  # ... or once open this long, so it cannot hold the stream
    checkpoint_interval_s: float = 2.0  # how often positions are saved when only noise was read
    read_chunk_bytes: int = 1 << 20
    heartbeat_interval_s: float = 15.0  # host_heartbeat ok this often (0: none); the service's timeout is 60 s
    report_interval_s: float = 60.0  # how often a line of counts is logged (when anything moved)
    health_interval_s: float = 0.0  # GPU/link health every this often (0: off); ingest/agent/health.py
    dcgm_url: str | None = "http://127.0.0.1:9400/metrics"  # dcgm-exporter; nvidia-smi and lspci without it
    health_thresholds: Path | None = None  # default: ingest/agent/health.toml

    def __post_init__(self) -> None:
        self.state_dir = Path(self.state_dir)
        for name in ("ca_file", "cert", "key"):
            if getattr(self, name) is not None:
                setattr(self, name, Path(getattr(self, name)))
        if self.read_from not in ("end", "beginning"):
            raise ValueError(f"read_from must be 'end' or 'beginning', not {self.read_from!r}")
        if not self.files and not self.kmsg and not self.health_interval_s:
            raise ValueError("nothing to follow: give --file GLOB and/or --kmsg (or health_interval_s)")
        try:
            ZoneInfo(self.zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {self.zone!r}") from None


def load_config(path: Path | None, **overrides: Any) -> AgentConfig:
    """Settings from a TOML file, then the flags given (None means 'not given')."""
    values: dict[str, Any] = {}
    if path is not None:
        try:
            values = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ValueError(f"config {path}: {exc}") from None
        known = {f.name for f in fields(AgentConfig)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"config {path}: unknown settings {', '.join(sorted(unknown))}")
    values.update({name: value for name, value in overrides.items() if value not in (None, [], ())})
    if "url" not in values:
        raise ValueError("the service URL is required (--url or url = ... in the config)")
    return AgentConfig(**values)


class Agent:
    """One agent: its sources, their coalescers and quiet points, the spool and the sender."""

    def __init__(self, config: AgentConfig, *, journal_command: tuple[str, ...] = ("journalctl",)) -> None:
        self.config = config
        tls = None  # before anything opens: a TLS file that will not load fails fast
        if config.ca_file or config.cert or config.key:
            tls = tls_context(ca_file=config.ca_file, cert=config.cert, key=config.key)
        config.state_dir.mkdir(parents=True, exist_ok=True)
        self.spool = Spool(config.state_dir / "spool.sqlite", max_events=config.max_spool_events)
        saved = self.spool.positions()
        self.committed = dict(saved)
        self.files = FileSources(config.files, saved, read_from=config.read_from)
        self.kernel: Source | None = None
        if config.kmsg:
            self.kernel = open_kernel_log(saved, from_start=config.read_from == "beginning",
                                          journal_command=journal_command)
        self.sender = Sender(url=config.url, token=config.token, spool=self.spool,
                             dead_letter=config.state_dir / "dead-letter.ndjson", batch_size=config.batch_size,
                             host=config.host, heartbeat_s=config.heartbeat_interval_s, tls=tls)
        self._zone = ZoneInfo(config.zone)
        self._coalescers: dict[str, Coalescer] = {}
        self._groupers: dict[str, RecordGrouper] = {}
        self._last: dict[str, str] = {}  # source → state after its last line read
        self._safe: dict[str, str] = dict(saved)  # source → state at its last quiet point
        self._held_since: dict[str, float] = {}
        self._committed_at = time.monotonic()
        self._paused = False
        self._counts = {"lines": 0, "events": 0}
        self._reported = (time.monotonic(), 0)  # when, and the sender's delivered count then
        self.health: HealthCollector | None = None
        if config.health_interval_s > 0:
            thresholds = load_thresholds(Path(config.health_thresholds) if config.health_thresholds else None)
            self.health = HealthCollector(HealthWatch(config.host, thresholds), dcgm_url=config.dcgm_url)
        self._health_at = 0.0
        self._losses: dict[str, LossWatch] = {}  # source → its job's recent losses

    def sources(self) -> list[Source]:
        found: list[Source] = list(self.files.refresh())
        if self.kernel is not None:
            found.append(self.kernel)
        return found

    def step(self) -> bool:
        """One pass over the sources; True when some source has more to read right away."""
        if self.spool.full:
            if not self._paused:
                log.warning("spool holds %d events (its limit): reading pauses until the service takes them", len(self.spool))
            self._paused = True
            return False
        if self._paused:
            log.info("spool has room again: reading resumes")
            self._paused = False
        now = time.monotonic()
        emitted: list[dict] = []
        more = False
        for source in self.sources():
            lines, at_end = source.read(self.config.read_chunk_bytes)
            more |= not at_end
            emitted += self._take(source, lines, at_end, now)
        if self.health is not None and now - self._health_at >= self.config.health_interval_s:
            self._health_at = now
            emitted += self.health.poll()  # changes and threshold crossings only
        if emitted or (self._safe != self.committed and now - self._committed_at >= self.config.checkpoint_interval_s):
            self._commit(emitted)
        return more

    def _take(self, source: Source, lines: list[Line], at_end: bool, now: float) -> list[dict]:
        name = source.name
        coalescer = self._coalescers.setdefault(name, Coalescer(window_s=self.config.coalesce_window_s,
                                                                volatile=VOLATILE_ATTRS))
        grouper = self._groupers.get(name)
        if grouper is None:
            grouper = self._groupers[name] = RecordGrouper(
                host=self.config.host, source=source.label, zone=self._zone,
                max_lines=self.config.record_max_lines, max_wait_s=self.config.record_max_wait_s)
        received = datetime.now(UTC)
        emitted: list[dict] = []
        self._counts["lines"] += len(lines)
        for line in lines:
            for record in grouper.feed(line.text, tag=line, received=line.time or received,
                                       boot_time=line.boot_time, now=now):
                emitted += self._coalesce(name, coalescer, record, now)
            self._last[name] = line.resume
            if not coalescer and not grouper:
                self._safe[name] = line.resume
        # Wall-clock closing only once caught up: while catching up, groups go by event time
        # alone, the same way they will if these lines are ever read again.
        if at_end:
            for record in grouper.expire(now=now):
                emitted += self._coalesce(name, coalescer, record, now)
            emitted += coalescer.expire(now=now)
            if coalescer and now - self._held_since.get(name, now) >= self.config.max_hold_s:
                emitted += coalescer.drain()
        if not coalescer and not grouper:
            self._held_since.pop(name, None)
            if name in self._last:
                self._safe[name] = self._last[name]
        return emitted

    def _coalesce(self, name: str, coalescer: Coalescer, record: Record, now: float) -> list[dict]:
        """A record's event, if any, into its source's storm groups; its id from its first line."""
        if record.event is None:
            return []
        event = record.event
        event["id"] = event_id(host=self.config.host, line=record.tags[0])
        self._held_since.setdefault(name, now)
        emitted = coalescer.add(event, now=now)
        spike = self._losses.setdefault(name, LossWatch()).add(event)  # ingest/progress.py
        if spike is not None:
            emitted += coalescer.add({**spike, "id": event["id"] + ":loss_spike"}, now=now)
        return emitted

    def _commit(self, emitted: list[dict]) -> None:
        changed = {name: state for name, state in self._safe.items() if self.committed.get(name) != state}
        for event in self.spool.commit(emitted, changed):
            log.warning("skipped an event that cannot be sent as JSON: %s", str(event.get("message"))[:200])
        self.committed.update(changed)
        self._committed_at = time.monotonic()
        self._counts["events"] += len(emitted)
        if emitted:
            log.debug("queued %d events (%d waiting)", len(emitted), len(self.spool))
            self.sender.wake.set()

    def flush(self) -> None:
        """Close every storm group and save every position (a clean shutdown)."""
        emitted: list[dict] = []
        for name, grouper in self._groupers.items():
            for record in grouper.flush():
                emitted += self._coalesce(name, self._coalescers[name], record, time.monotonic())
        emitted += [event for coalescer in self._coalescers.values() for event in coalescer.drain()]
        self._safe.update(self._last)
        self._held_since.clear()
        self._commit(emitted)

    def _report(self) -> None:
        """Now and then, one line of what moved: an operator's check that the agent works."""
        now = time.monotonic()
        since, delivered_then = self._reported
        if now - since < self.config.report_interval_s:
            return
        delivered = self.sender.delivered - delivered_then
        if self._counts["lines"] or delivered or len(self.spool):
            log.info("last %.0f s: read %d lines, queued %d events, delivered %d; %d waiting in the spool",
                     now - since, self._counts["lines"], self._counts["events"], delivered, len(self.spool))
        self._counts = {"lines": 0, "events": 0}
        self._reported = (now, self.sender.delivered)

    def run(self, stop: threading.Event) -> None:
        sender = threading.Thread(target=self.sender.run, args=(stop,), name="faultgraph-sender", daemon=True)
        sender.start()
        log.info("agent for host %s: following %s%s, posting to %s, state in %s", self.config.host,
                 ", ".join(self.config.files) or "no files", " and the kernel log" if self.kernel else "",
                 self.config.url, self.config.state_dir)
        try:
            while not stop.is_set():
                if not self.step():
                    stop.wait(self.config.poll_interval_s)
                self._report()
        finally:
            self.flush()
            stop.set()
            self.sender.wake.set()
            sender.join(timeout=15)
            self.close()
            log.info("agent stopped; %d events wait in the spool", len(self.spool))

    def close(self) -> None:
        """Release files, the kernel log, the HTTP client and the spool (no flush: see `flush`)."""
        self.files.close()
        if self.kernel is not None:
            self.kernel.close()
        self.sender.close()
        self.spool.close()


def run_until_signalled(agent: Agent) -> None:
    """Run until SIGTERM or SIGINT, then flush and exit."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    agent.run(stop)
