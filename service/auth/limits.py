"""Fair ingest: one caller posting in a loop is slowed down (429 + Retry-After) before it
can fill the writer's queue that every agent shares.

Each caller — an agent token from one client, told apart by the client certificate's name when
the connection has one (a token bound to a certificate is one host), else by the client
address, so one agent token shared by a fleet still gives each host its own allowance —
has a token bucket of `rate` requests a second (up to `burst` at once), where a request
costs one more unit per `unit_bytes` of body read (charged when it ends, as debt: a
chunked upload cannot hide its size), and may have at most `max_in_flight` ingest
requests open at once: its share of the writer queue. Only agent tokens are limited
(the middleware decides): admin tokens are operators, and the open loopback server's
anonymous caller is a developer's own machine.

The cost on the hot path is a dict lookup and a few float operations per request.
"""

import math
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass


@dataclass
class _Bucket:
    tokens: float
    stamp: float
    in_flight: int = 0


class IngestLimiter:
    """Admits or refuses ingest requests per caller; `admit` then `release` for each."""

    def __init__(self, *, rate: float, burst: float, max_in_flight: int, unit_bytes: int = 16 * 1024,
                 max_callers: int = 100_000, clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0 or burst < 1 or max_in_flight < 1:
            raise ValueError("ingest limits: rate must be > 0, burst >= 1, in-flight share >= 1")
        self.rate, self.burst, self.max_in_flight = rate, burst, max_in_flight
        self._unit_bytes = unit_bytes
        self._max_callers = max_callers
        self._clock = clock
        self._buckets: dict[Hashable, _Bucket] = {}
        self.refused = 0

    def admit(self, key: Hashable) -> float | None:
        """None when the request may go on (then `release` it), else the seconds to wait."""
        now = self._clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self._max_callers:
                self._forget_idle(now)
            bucket = self._buckets[key] = _Bucket(self.burst, now)
        else:
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.stamp) * self.rate)
            bucket.stamp = now
        if bucket.tokens < 1:
            self.refused += 1
            return (1 - bucket.tokens) / self.rate
        if bucket.in_flight >= self.max_in_flight:
            self.refused += 1
            return 1.0
        bucket.tokens -= 1
        bucket.in_flight += 1
        return None

    def release(self, key: Hashable, body_bytes: int) -> None:
        """The admitted request ended having read `body_bytes`: charge its size, free its slot."""
        bucket = self._buckets.get(key)
        if bucket is not None:
            bucket.in_flight -= 1
            bucket.tokens -= body_bytes / self._unit_bytes

    def _forget_idle(self, now: float) -> None:
        """Drop callers with nothing in flight whose bucket has refilled: they lose nothing."""
        full = [key for key, b in self._buckets.items()
                if not b.in_flight and b.tokens + (now - b.stamp) * self.rate >= self.burst]
        for key in full:
            del self._buckets[key]


def retry_after(seconds: float) -> str:
    """A `Retry-After` value: whole seconds, at least one."""
    return str(max(1, math.ceil(seconds)))
