"""faultgraph.train: the training-side hook that reports per-rank step time (SPEC §1 `train_step`).

Standard library only, so any training environment can import it. The training loop
calls `step()` (or uses `timed_step()`/`waiting()`); samples go into a bounded queue and a
daemon thread posts them in batches to `POST /v1/events`. Nothing here blocks or raises
into the training loop: a full queue drops the oldest samples, a dead service costs a
failed post every `interval` seconds in the background thread, and `close()` gives the
thread a bounded time to flush.

    from faultgraph.train import Reporter
    reporter = Reporter.from_env(job="llama-405b-r7")   # FAULTGRAPH_URL, FAULTGRAPH_TOKEN, RANK
    for step in range(start, steps):
        with reporter.timed_step(step):
            loss = forward_backward()
            with reporter.waiting():          # time blocked in a collective, if you can bracket it
                all_reduce(grads)
"""

import json
import logging
import os
import queue
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)

__all__ = ["Reporter"]


class Reporter:
    """Batches `train_step` samples of one rank and posts them from a background thread."""

    def __init__(self, url: str, *, job: str, rank: int | None = None, host: str | None = None,
                 token: str | None = None, every: int = 1, interval: float = 10.0, batch: int = 500,
                 max_queue: int = 10_000, timeout: float = 5.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"faultgraph URL {url!r}: expected http:// or https://")
        self.url = url.rstrip("/") + "/v1/events"
        self.job, self.rank, self.every = job, rank, max(1, every)
        self.host = host or socket.gethostname()
        self._headers = {"content-type": "application/json", **({"authorization": f"Bearer {token}"} if token else {})}
        self._interval, self._batch, self._timeout = interval, batch, timeout
        self._queue: queue.Queue[dict] = queue.Queue(maxsize=max_queue)
        self._wait_ms = 0.0
        self._stop = threading.Event()
        self.dropped = self.posted = self.failures = 0
        self._thread = threading.Thread(target=self._loop, name="faultgraph-train", daemon=True)
        self._thread.start()

    @classmethod
    def from_env(cls, *, job: str | None = None, **options) -> "Reporter":
        """Settings from the environment torchrun and the launchers set."""
        rank = os.environ.get("RANK")
        return cls(os.environ.get("FAULTGRAPH_URL", "http://127.0.0.1:8080"),
                   job=job or os.environ.get("FAULTGRAPH_JOB") or os.environ.get("SLURM_JOB_ID", "unknown"),
                   rank=int(rank) if rank and rank.isdigit() else None, token=os.environ.get("FAULTGRAPH_TOKEN"),
                   **options)

    # ----------------------------------------------------------------- the training side

    def step(self, step: int, duration_ms: float, *, compute_ms: float | None = None, wait_ms: float | None = None,
             tokens: int | None = None) -> None:
        """Record one step; never blocks, never raises."""
        try:
            if step % self.every:
                return
            attrs = {"step": int(step), "duration_ms": round(float(duration_ms), 3)}
            for name, value in (("compute_ms", compute_ms), ("wait_ms", wait_ms)):
                if value is not None:
                    attrs[name] = round(float(value), 3)
            if tokens is not None:
                attrs["tokens"] = int(tokens)
            event = {"time": time.time(), "host": self.host, "kind": "train_step", "job": self.job, "attrs": attrs,
                     "id": f"train_step:{self.job}:{self.rank}:{step}:{os.getpid()}"}
            if self.rank is not None:
                event["rank"] = self.rank
            self._put(event)
        except Exception:  # the hook must never cost the job anything
            log.debug("faultgraph: sample dropped", exc_info=True)

    @contextmanager
    def timed_step(self, step: int, *, tokens: int | None = None) -> Iterator[None]:
        """Time the enclosed step; `waiting()` blocks inside it count as wait, the rest as compute."""
        self._wait_ms = 0.0
        started = time.perf_counter()
        try:
            yield
        finally:
            duration = (time.perf_counter() - started) * 1000
            waited = self._wait_ms
            self.step(step, duration, compute_ms=duration - waited if waited else None,
                      wait_ms=waited if waited else None, tokens=tokens)

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """Bracket time blocked in a collective (call `torch.cuda.synchronize()` inside for GPU time)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self._wait_ms += (time.perf_counter() - started) * 1000

    def close(self, timeout: float = 5.0) -> None:
        """Flush what is queued, waiting at most `timeout` seconds."""
        self._stop.set()
        self._thread.join(timeout)

    # ------------------------------------------------------------------ the posting side

    def _put(self, event: dict) -> None:
        while True:
            try:
                self._queue.put_nowait(event)
                return
            except queue.Full:
                try:  # keep the newest samples: they say how the job runs now
                    self._queue.get_nowait()
                    self.dropped += 1
                except queue.Empty:
                    pass

    def _drain(self) -> list[dict]:
        taken: list[dict] = []
        while len(taken) < self._batch:
            try:
                taken.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return taken

    def _post(self, events: list[dict]) -> bool:
        request = urllib.request.Request(self.url, data=json.dumps(events).encode(), headers=self._headers, method="POST")
        try:
            # the scheme is http(s), checked in __init__ (bandit B310)
            with urllib.request.urlopen(request, timeout=self._timeout) as answer:  # nosec B310
                return 200 <= answer.status < 300
        except urllib.error.HTTPError as exc:
            if 400 <= exc.code < 500:  # refused as bad: retrying will not help
                log.warning("faultgraph: %d samples refused: HTTP %d", len(events), exc.code)
                self.dropped += len(events)
                return True
            return False
        except (OSError, ValueError):
            return False

    def _loop(self) -> None:
        pending: list[dict] = []
        while True:
            stopping = self._stop.wait(self._interval)
            pending += self._drain()
            while pending:
                if self._post(pending):
                    self.posted += len(pending)
                    pending = self._drain()
                else:
                    self.failures += 1
                    # Keep what failed for the next round, bounded like the queue.
                    overflow = len(pending) - self._queue.maxsize
                    if overflow > 0:
                        del pending[:overflow]
                        self.dropped += overflow
                    break
            if stopping:
                return
