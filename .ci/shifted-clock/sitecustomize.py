"""Loaded by every Python process of CI's shifted-clock run (this folder is put on PYTHONPATH).

That run shifts the calendar with libfaketime (`FAKETIME=+400d`) and leaves CLOCK_MONOTONIC
real (`FAKETIME_DONT_FAKE_MONOTONIC=1`): elapsed time stays elapsed time, only the date moves.
Debian 12's libfaketime 0.9.10 cannot do that for Python 3.11 on its own:

- with the monotonic clock faked (its default), Python's timed lock waits (`Event.wait`,
  `Lock.acquire(timeout=…)`, `queue.get(timeout=…)`) call `sem_clockwait(CLOCK_MONOTONIC)`,
  which 0.9.10 does not intercept: the deadline lands 400 days out and the wait never ends
  (every background loop of the service stalls; libfaketime issue #390, fixed after 0.9.10);
- with it real, `time.sleep` (`clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` since 3.11)
  fails with EINVAL, its deadline shifted by the fake offset (libfaketime issue #426, fixed
  in 0.9.11).

So where `time.sleep` fails here, it is replaced by a sleep on select()'s relative timeout.
Where it works (no libfaketime, or a fixed one) nothing is changed.
"""

import select
import time


def _sleep_is_broken() -> bool:
    try:
        time.sleep(1e-6)
    except OSError:
        return True
    return False


def _sleep(seconds: float) -> None:
    """time.sleep on select()'s relative timeout: the monotonic clock decides when to stop."""
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        select.select([], [], [], left)


if _sleep_is_broken():
    time.sleep = _sleep
