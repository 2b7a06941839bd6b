"""Deliver the spool to `POST /v1/events`, oldest first, exactly as the service wants.

- 2xx: the batch is stored (its events' ids make a resend harmless); events the service
  rejected one by one go to the dead-letter file with the reason.
- 429 / 503: wait what `Retry-After` says (else back off), then resend.
- connection failures, timeouts, other 5xx: exponential backoff with jitter, resend.
- 401 / 403 / 404: the agent's configuration is wrong, not the batch: log loudly, back off,
  keep the batch (dropping it would lose data over a typo in a token).
- 413: halve the batch; other 4xx: the batch itself is unusable, so it goes to the
  dead-letter file and the queue moves on.

Between batches it posts a `host_heartbeat` (state `ok`) every `heartbeat_s`, straight,
not through the spool: the service marks a host lost when its agent falls silent, and an
old heartbeat replayed after an outage would say nothing about now.
"""

import email.utils
import logging
import random
import ssl
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import orjson

from faultgraph.ingest.agent.spool import Spool

log = logging.getLogger("faultgraph.agent")

CONFIG_ERRORS = frozenset({401, 403, 404})
RETRY_LATER = frozenset({429, 503})
MAX_RETRY_AFTER_S = 600.0  # a misconfigured proxy asking for a day must not silence a host that long


def tls_context(*, ca_file: Path | None = None, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    """A client TLS context: the system's CAs or `ca_file`'s, and a client certificate for
    mutual TLS (`key` may be left out when `cert` holds it). OSError names a missing file."""
    if key is not None and cert is None:
        raise ValueError("a client key needs its certificate (cert)")
    try:
        context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
    except (OSError, ssl.SSLError) as exc:
        raise OSError(f"CA file {ca_file}: {exc.strerror or exc}") from None
    if cert is not None:
        try:
            context.load_cert_chain(cert, key)
        except (OSError, ssl.SSLError) as exc:
            raise OSError(f"client certificate {cert}{f' with key {key}' if key else ''}: {exc.strerror or exc}") from None
    return context


def retry_after(value: str | None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), MAX_RETRY_AFTER_S)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return min(MAX_RETRY_AFTER_S, max(0.0, (when - datetime.now(UTC)).total_seconds()))


class Backoff:
    """Exponential backoff with jitter: each wait is half the current step plus up to another half."""

    def __init__(self, *, base_s: float = 0.5, cap_s: float = 30.0, rng: random.Random | None = None) -> None:
        self._base, self._cap = base_s, cap_s
        self._failures = 0
        self._rng = rng or random.Random()

    def next(self) -> float:
        step = min(self._cap, self._base * 2 ** self._failures)
        self._failures = min(self._failures + 1, 32)  # past the cap anyway; 2**n stays a float
        return step / 2 + self._rng.uniform(0, step / 2)

    def reset(self) -> None:
        self._failures = 0


class Sender:
    """Posts the spool's oldest events in batches; `run` loops until `stop` is set."""

    def __init__(self, *, url: str, token: str | None, spool: Spool, dead_letter: Path,
                 batch_size: int = 500, timeout_s: float = 10.0, host: str | None = None,
                 heartbeat_s: float = 0.0, transport: httpx.BaseTransport | None = None,
                 tls: ssl.SSLContext | None = None) -> None:
        headers = {"content-type": "application/json", "user-agent": "faultgraph-agent"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        self._client = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout_s,
                                    transport=transport, verify=tls if tls is not None else True)
        self._spool = spool
        self._dead_letter = dead_letter
        self._batch_size = self._max_batch = batch_size
        self._backoff = Backoff()
        self.wake = threading.Event()
        self.delivered = 0
        self._host, self._heartbeat_s = host, heartbeat_s
        self._beat_at = 0.0  # monotonic time of the last heartbeat the service took

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.heartbeat()
            wait = self.send_once()
            if wait is None:
                self.wake.wait(min(1.0, self._heartbeat_s) if self._heartbeat_s else 1.0)
                self.wake.clear()
            elif wait > 0:
                stop.wait(wait)

    def close(self) -> None:
        self._client.close()

    def heartbeat(self) -> None:
        """Post `host_heartbeat` ok if one is due; a failure is left to the next turn."""
        if not (self._host and self._heartbeat_s) or time.monotonic() - self._beat_at < self._heartbeat_s:
            return
        beat = {"time": datetime.now(UTC), "host": self._host, "kind": "host_heartbeat", "severity": "info",
                "attrs": {"state": "ok", "source": "faultgraph-agent"}}
        try:
            response = self._client.post("/v1/events", content=orjson.dumps({"events": [beat]}))
        except httpx.HTTPError:
            return  # the batches' own retries say the service is away
        if response.is_success:
            self._beat_at = time.monotonic()
        else:
            log.warning("heartbeat refused: %d %s", response.status_code, response.text[:200])
            self._beat_at = time.monotonic()  # do not hammer a service that says no

    def send_once(self) -> float | None:
        """Post one batch: None when the spool is empty, else the seconds to wait before the next."""
        batch = self._spool.peek(self._batch_size)
        if not batch:
            return None
        body = b'{"events":[' + b",".join(event for _, event in batch) + b"]}"
        last = batch[-1][0]
        try:
            response = self._client.post("/v1/events", content=body)
        except httpx.HTTPError as exc:
            wait = self._backoff.next()
            log.warning("posting %d events failed (%s): retrying in %.1f s", len(batch), exc.__class__.__name__, wait)
            return wait
        status = response.status_code
        if 200 <= status < 300:
            self._delivered(batch, response)
            return 0.0
        if status in RETRY_LATER:
            after = retry_after(response.headers.get("retry-after"))
            wait = self._backoff.next() if after is None else after
            log.info("service answered %d: retrying %d events in %.1f s", status, len(batch), wait)
            return wait
        if status >= 500 or status in CONFIG_ERRORS:
            wait = self._backoff.next()
            level = logging.ERROR if status in CONFIG_ERRORS else logging.WARNING
            log.log(level, "service answered %d (%s): retrying in %.1f s", status, response.text[:200], wait)
            return wait
        if status == 413 and len(batch) > 1:
            self._batch_size = max(1, len(batch) // 2)
            log.warning("batch of %d events too large: sending %d at a time", len(batch), self._batch_size)
            return 0.0
        self._dead(batch, f"HTTP {status}: {response.text[:1000]}")
        self._spool.remove_through(last)
        return 0.0

    def _delivered(self, batch: list[tuple[int, bytes]], response: httpx.Response) -> None:
        try:
            answer = response.json()
        except ValueError:
            answer = None
        rejected = (answer.get("rejected") or []) if isinstance(answer, dict) else []
        for entry in rejected:
            index = entry.get("index") if isinstance(entry, dict) else None
            if isinstance(index, int) and 0 <= index < len(batch):
                self._dead([batch[index]], str(entry.get("error")))
        self._spool.remove_through(batch[-1][0])
        self.delivered += len(batch) - len(rejected)
        self._backoff.reset()
        self._batch_size = min(self._max_batch, self._batch_size * 2)

    def _dead(self, batch: list[tuple[int, bytes]], reason: str) -> None:
        log.error("dropping %d events the service refused (%s) to %s", len(batch), reason[:200], self._dead_letter)
        with self._dead_letter.open("ab") as out:
            for _, event in batch:
                out.write(orjson.dumps({"error": reason, "event": orjson.loads(event)}) + b"\n")
