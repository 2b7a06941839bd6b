"""The background loops' protocol (`service/loops.py`): wake, failures, leadership, close.

Every wait here is on an event with a generous timeout, and the loops' own intervals are
far longer than any test, so a pass that happens can only have been asked for; nothing
asserts on how long something took.
"""

import logging
import queue
import threading

import pytest

from faultgraph.service.loops import Loop, backoff_after

LONG = 3600.0  # an interval no test waits out
PATIENCE = 30.0  # how long a test waits for what must happen


class Passes:
    """A pass function that records each call and lets the test wait for the n-th one."""

    def __init__(self, fail_first: int = 0) -> None:
        self.count = 0
        self.fail_first = fail_first
        self._changed = threading.Condition()

    def __call__(self) -> None:
        with self._changed:
            self.count += 1
            self._changed.notify_all()
            if self.count <= self.fail_first:
                raise RuntimeError(f"pass {self.count} broke")

    def wait_for(self, n: int) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self.count >= n, timeout=PATIENCE)


def test_wake_runs_a_pass_promptly_and_none_without_it() -> None:
    passes = Passes()
    loop = Loop("test", passes, interval=LONG).start()
    try:
        assert passes.count == 0  # the interval has not passed: nothing runs unasked
        loop.wake()
        assert passes.wait_for(1)
        loop.wake()
        assert passes.wait_for(2)
    finally:
        loop.close()
    assert passes.count == 2


def test_a_raising_pass_is_logged_once_with_its_traceback_and_the_loop_goes_on(caplog) -> None:
    passes = Passes(fail_first=1)
    # interval 0: the backoff after one failure is 1 s, which wake() does not cut short
    loop = Loop("flaky", passes, interval=0.0, rest=lambda: LONG).start()
    try:
        with caplog.at_level(logging.ERROR, logger="faultgraph.service.loops"):
            assert passes.wait_for(2)  # the failure did not end the thread
    finally:
        loop.close()
    failed = [r for r in caplog.records if r.name == "faultgraph.service.loops"]
    assert len(failed) == 1
    assert failed[0].levelno == logging.ERROR
    assert "flaky pass failed (1 in a row)" in failed[0].getMessage()
    assert failed[0].exc_info is not None and "pass 1 broke" in str(failed[0].exc_info[1])
    assert loop.failures == 0  # the second pass succeeded


def test_failures_in_a_row_are_counted_and_back_off_doubling_up_to_a_cap() -> None:
    passes = Passes(fail_first=2)
    loop = Loop("down", passes, interval=0.0).start()
    try:
        assert passes.wait_for(2)
    finally:
        loop.close()
    assert loop.failures == 2  # close came during the 2 s rest after the second failure
    assert [backoff_after(n, 2.0) for n in (1, 2, 3, 5, 6, 20)] == [2.0, 4.0, 8.0, 32.0, 60.0, 60.0]
    assert [backoff_after(n, 0.0) for n in (1, 2)] == [1.0, 2.0]
    assert backoff_after(3, 3600.0) == 3600.0  # an hourly loop retries hourly, not less


def test_a_leader_only_loop_does_nothing_while_not_leading() -> None:
    leading = threading.Event()
    asked = queue.Queue[bool]()

    def is_leader() -> bool:
        asked.put(leading.is_set())
        return leading.is_set()

    passes = Passes()
    loop = Loop("leader-only", passes, interval=LONG, leading=is_leader).start()
    try:
        for _ in range(3):
            loop.wake()
            assert asked.get(timeout=PATIENCE) is False  # each wake asked, and was told no
        assert passes.count == 0
        leading.set()
        loop.wake()
        assert asked.get(timeout=PATIENCE) is True
        assert passes.wait_for(1)
    finally:
        loop.close()


def test_close_joins_the_thread_and_is_idempotent() -> None:
    inside, release = threading.Event(), threading.Event()

    def slow_pass() -> None:
        inside.set()
        release.wait(PATIENCE)

    loop = Loop("closing", slow_pass, interval=LONG).start()
    loop.wake()
    assert inside.wait(PATIENCE)
    closer = threading.Thread(target=loop.close)
    closer.start()
    # close() waits for the pass in progress: it has not returned while the pass runs
    closer.join(timeout=0.2)
    assert closer.is_alive()
    release.set()
    closer.join(PATIENCE)
    assert not closer.is_alive()
    assert not any(t.name == "faultgraph-closing" for t in threading.enumerate())
    loop.close()  # again: returns at once, no error
    loop.wake()  # a wake after close starts nothing
    assert loop.stopping


def test_close_of_a_loop_never_started_returns() -> None:
    Loop("unused", Passes(), interval=LONG).close()


def test_a_queue_consumer_handles_all_queued_before_its_sentinel() -> None:
    """The writer's shape: interval 0, the pass blocks on its own queue, a sentinel stops it."""
    items: queue.Queue[int | None] = queue.Queue()
    seen: list[int] = []
    loop: Loop

    def take_one() -> None:
        item = items.get()
        if item is None:
            loop.stop()
            return
        seen.append(item)

    loop = Loop("consumer", take_one, interval=0.0).start()
    for n in range(100):
        items.put(n)
    items.put(None)
    loop.join(PATIENCE)
    assert seen == list(range(100))
    assert loop.stopping


@pytest.mark.parametrize("interval", [0.0, LONG])
def test_close_ends_a_waiting_loop(interval: float) -> None:
    passes = Passes()
    loop = Loop("idle", passes, interval=interval, rest=lambda: LONG).start()
    loop.close(timeout=PATIENCE)
    assert not any(t.name == "faultgraph-idle" for t in threading.enumerate())
