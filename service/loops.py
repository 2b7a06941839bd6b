"""The background loops' one protocol: a thread that runs a pass when woken, or at least
every `interval`; `close()` stops and joins it.

Every piece of background work in the service (the incident engine, alert scans,
remediation, liveness, the leader lease, retention) is a `Loop` around a plain function,
so how a loop starts, wakes, skips while another replica leads, survives a failing pass
and stops is written once, here:

- `wake()` asks for a pass now; wakes that arrive during a pass or its rest are kept, so
  the next pass follows at once (one pass covers any number of them);
- `leading()`, if given, is asked before each pass: a leader-only loop skips its work
  while another replica leads (and rests nothing, so it starts the moment it leads);
- a pass that raises is logged once at ERROR with its traceback and the loop goes on
  after a rest of `interval` (1 s when 0), doubled after each further failure in a row up
  to `max(interval, MAX_BACKOFF)`: wakes wait for the rest, so a store that is down is not
  hammered;
- `rest()`, if given, is a pause after each successful pass (a floor between passes, or
  the engine's "rest as long as the pass took");
- `stop()` asks the loop to end after the current pass and may be called from the pass
  itself; `join()` waits for it; `close()` is both, and is idempotent.

`interval=0` runs passes back to back: a pass that blocks on a queue of its own (each
alert target's courier; the writer's group commit could) then is the wait. A consumer
that must finish its queue stops on a sentinel: its `close()` enqueues one and `join()`s;
the pass that dequeues it calls `stop()`, so all that was queued before is handled first.
"""

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

# The longest rest after failures in a row, unless the loop's own interval is longer.
MAX_BACKOFF = 60.0


def backoff_after(failures: int, interval: float) -> float:
    """The rest after `failures` failed passes in a row: `interval` (1 s for back-to-back
    loops) doubled per further failure, at most `max(interval, MAX_BACKOFF)`."""
    base = interval or 1.0
    return min(base * 2 ** (failures - 1), max(base, MAX_BACKOFF))


class Loop:
    """One background thread running `work` (one pass) on wake and every `interval` seconds."""

    def __init__(self, name: str, work: Callable[[], object], *, interval: float,
                 leading: Callable[[], bool] | None = None, rest: Callable[[], float] | None = None) -> None:
        self.name = name
        self._work = work
        self._interval = interval
        self._leading = leading
        self._rest = rest
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"faultgraph-{name}", daemon=True)
        self.failures = 0  # passes failed in a row

    def start(self) -> "Loop":
        self._thread.start()
        return self

    def wake(self) -> None:
        self._wake.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        """End after the current pass (or at once, when waiting); returns without waiting."""
        self._stop.set()
        self._wake.set()

    def join(self, timeout: float | None = 60.0) -> None:
        if self._thread.ident is None or self._thread is threading.current_thread():
            return  # never started, or a pass closing its own loop
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("%s loop still running %.0f s after it was asked to stop", self.name, timeout)

    def close(self, timeout: float | None = 60.0) -> None:
        """Stop and wait for the thread; a second call returns at once."""
        self.stop()
        self.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self._interval)
            self._wake.clear()
            if self._stop.is_set():
                return
            self._stop.wait(self._pass())

    def _pass(self) -> float:
        """One pass (none while another replica leads); how long to rest after it."""
        try:
            if self._leading is not None and not self._leading():
                return 0.0
            self._work()
        except Exception:
            self.failures += 1
            backoff = backoff_after(self.failures, self._interval)
            log.exception("%s pass failed (%d in a row); next in %.1f s", self.name, self.failures, backoff)
            return backoff
        self.failures = 0
        return self._rest() if self._rest is not None else 0.0
