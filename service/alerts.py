"""Webhooks on incident open, root-cause change and resolve.

A background thread notices changes by reading the incidents table (after every engine
pass, and every few seconds for on-call's own PATCHes), so nothing on the ingest path ever
waits for a webhook. Each change is posted to every configured target in its format —
generic JSON, Slack-compatible text, PagerDuty Events v2 — by that target's own thread (a
hanging receiver delays nothing else), retried with exponential backoff on transport
errors, 429 and 5xx. Deliveries are deduplicated by incident id +
event (+ the new root cause, for a change), so a re-analysis that leaves an incident as it
was sends nothing. Incidents already stored when the service starts are the baseline: a
restart does not page anyone again.

Configured by environment:
- `FAULTGRAPH_WEBHOOKS`: comma-separated `format=url`, format `json` (default), `slack` or
  `pagerduty` (url optional for PagerDuty: the Events v2 endpoint);
- `FAULTGRAPH_PAGERDUTY_ROUTING_KEY`: the integration key, required with a PagerDuty target;
- `FAULTGRAPH_PUBLIC_URL`: the service's address as on-call reaches it, for links;
- `FAULTGRAPH_ALERT_ATTEMPTS` (6) and `FAULTGRAPH_ALERT_BACKOFF_SECONDS` (2; doubled per retry).
"""

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import httpx
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from faultgraph.service.config import Settings
from faultgraph.service.incidents.models import incidents
from faultgraph.service.incidents.service import row_to_incident
from faultgraph.service.loops import Loop

log = logging.getLogger(__name__)

Format = Literal["json", "slack", "pagerduty"]
FORMATS: tuple[str, ...] = ("json", "slack", "pagerduty")
PAGERDUTY_URL = "https://events.pagerduty.com/v2/enqueue"
# Engine passes commit their `updated` stamps at the end of the pass: look back this far.
RESCAN = timedelta(minutes=5)
OUTCOMES = ("sent", "retried", "failed")

@dataclass(frozen=True)
class Target:
    format: Format
    url: str

@dataclass(frozen=True)
class AlertConfig:
    targets: tuple[Target, ...] = ()
    routing_key: str | None = None
    public_url: str | None = None
    attempts: int = 6
    backoff_seconds: float = 2.0
    poll_seconds: float = 2.0

    @classmethod
    def from_settings(cls, settings: Settings) -> "AlertConfig":
        """The delivery plan the settings describe; ValueError names a malformed target."""
        targets = tuple(parse_target(item) for item in settings.webhooks.split(",") if item.strip())
        routing_key = settings.pagerduty_routing_key or None
        if any(t.format == "pagerduty" for t in targets) and not routing_key:
            raise ValueError("FAULTGRAPH_WEBHOOKS names a pagerduty target: set FAULTGRAPH_PAGERDUTY_ROUTING_KEY")
        public = (settings.public_url or "").rstrip("/") or None
        return cls(targets, routing_key, public, settings.alert_attempts, settings.alert_backoff_seconds)

def parse_target(item: str) -> Target:
    """`slack=https://…`, `pagerduty`, or a bare URL (generic JSON)."""
    item = item.strip()
    name, sep, url = item.partition("=")
    if not sep:
        name, url = ("pagerduty", PAGERDUTY_URL) if item == "pagerduty" else ("json", item)
    name, url = name.strip().lower(), url.strip()
    if name not in FORMATS:
        raise ValueError(f"webhook format {name!r}: expected one of {', '.join(FORMATS)}")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"webhook url {url!r}: expected http:// or https://")
    return Target(name, url)  # type: ignore[arg-type]

def root_key(incident: Mapping[str, Any]) -> str:
    root = incident.get("root_cause") or {}
    return f"{root.get('component')}|{root.get('cause')}"

def changes(seen: tuple[str, str] | None, incident: Mapping[str, Any]) -> list[str]:
    """What happened to an incident since it was last seen as (status, root key)."""
    found = []
    if seen is None:
        found.append("opened")
    elif seen[1] != root_key(incident):
        found.append("root_cause_changed")
    if incident["status"] == "resolved" and (seen is None or seen[0] != "resolved"):
        found.append("resolved")
    return found

def _summary(event: str, incident: Mapping[str, Any]) -> str:
    root = incident.get("root_cause") or {}
    action = incident.get("action") or {}
    where = f"job {incident['job']}" if incident.get("job") else incident.get("scope", "")
    verb = {"opened": "opened", "root_cause_changed": "root cause changed", "resolved": "resolved"}[event]
    text = (f"{incident['id']} {verb} ({where}): {root.get('cause')} on {root.get('component') or 'unknown component'}"
            f" [{root.get('category')}, confidence {float(root.get('confidence') or 0):.0%}]")
    if event != "resolved" and action.get("kind") not in (None, "none"):
        text += f"; action: {action['kind']} {action.get('target') or ''}".rstrip()
    return text

def payload(target: Target, event: str, incident: Mapping[str, Any], config: AlertConfig,
            previous: Mapping[str, Any] | None = None) -> dict:
    """The body one target gets for one change of one incident."""
    link = f"{config.public_url}/ui/incident.html?id={incident['id']}" if config.public_url else None
    summary = _summary(event, incident)
    root = incident.get("root_cause") or {}
    if target.format == "slack":
        icon = {"opened": ":rotating_light:", "root_cause_changed": ":mag:", "resolved": ":white_check_mark:"}[event]
        text = f"{icon} {summary}"
        if root.get("explanation") and event != "resolved":
            text += f"\n> {root['explanation']}"
        if link:
            text += f"\n<{link}|Open the timeline>"
        return {"text": text}
    if target.format == "pagerduty":
        body: dict[str, Any] = {
            "routing_key": config.routing_key,
            "event_action": "resolve" if event == "resolved" else "trigger",
            "dedup_key": f"faultgraph-{incident['id']}",
            "client": "faultgraph",
        }
        if event != "resolved":
            body["payload"] = {
                "summary": summary[:1024],
                "source": root.get("component") or incident.get("scope") or "faultgraph",
                "severity": "info" if incident.get("planned") else "critical",
                "timestamp": incident.get("opened"),
                "component": root.get("component"),
                "group": incident.get("job"),
                "class": root.get("cause"),
                "custom_details": {"explanation": root.get("explanation"), "action": incident.get("action"),
                                   "symptoms": incident.get("symptoms"), "hosts": incident.get("hosts")},
            }
        if link:
            body["client_url"] = link
            body["links"] = [{"href": link, "text": f"faultgraph {incident['id']}"}]
        return body
    return {"event": f"incident.{event}", "summary": summary, "incident": dict(incident),
            "previous_root_cause": dict(previous) if previous else None, "url": link,
            "sent": datetime.now(UTC).isoformat().replace("+00:00", "Z")}

@dataclass(order=True)
class Delivery:
    due: float
    seq: int
    body: dict = field(compare=False)
    attempt: int = field(default=0, compare=False)

class Courier:
    """One target's queue and thread: a slow or dead receiver delays only its own messages."""

    def __init__(self, target: Target, config: AlertConfig, count: Callable[[Target, str], None]) -> None:
        self.target = target
        self._config = config
        self._count = count
        self._queue: list[Delivery] = []
        self._seq = itertools.count()
        self._ready = threading.Condition()
        self._stop = False
        self._client = httpx.Client(timeout=10, headers={"User-Agent": "faultgraph-alerts"})
        # Back to back passes, each waiting in `_next` for a delivery that is due.
        self._loop = Loop(f"alerts-{target.format}", self._deliver_next, interval=0.0)
        self._loop.start()

    def put(self, body: dict) -> None:
        with self._ready:
            heapq.heappush(self._queue, Delivery(time.monotonic(), next(self._seq), body))
            self._ready.notify()

    def close(self) -> None:
        with self._ready:
            self._stop = True
            self._ready.notify()
        self._loop.close(timeout=10)
        self._client.close()

    def _next(self) -> Delivery | None:
        """The next delivery once it is due; None when closing."""
        with self._ready:
            while not self._stop:
                wait = self._queue[0].due - time.monotonic() if self._queue else None
                if wait is not None and wait <= 0:
                    return heapq.heappop(self._queue)
                self._ready.wait(wait)
            return None

    def _deliver_next(self) -> None:
        delivery = self._next()
        if delivery is None:
            self._loop.stop()
        else:
            self._deliver(delivery)

    def _deliver(self, delivery: Delivery) -> None:
        try:
            status = self._client.post(self.target.url, json=delivery.body).status_code
        except httpx.HTTPError as exc:
            status, reason = None, str(exc) or type(exc).__name__
        else:
            reason = f"HTTP {status}"
        if status is not None and 200 <= status < 300:
            self._count(self.target, "sent")
            return
        retryable = status is None or status == 429 or status >= 500
        delivery.attempt += 1
        if retryable and delivery.attempt < self._config.attempts:
            delivery.due = time.monotonic() + self._config.backoff_seconds * 2 ** (delivery.attempt - 1)
            with self._ready:
                heapq.heappush(self._queue, delivery)
            self._count(self.target, "retried")
            return
        self._count(self.target, "failed")
        log.warning("webhook %s (%s) gave up after %d attempt(s): %s",
                    self.target.url, self.target.format, delivery.attempt, reason)

class Dispatcher:
    """Watches incidents from a background thread and hands each change to the couriers."""

    def __init__(self, engine: Engine, config: AlertConfig, *, metrics=None,
                 leading: Callable[[], bool] = lambda: True) -> None:
        self._engine = engine
        self._leading = leading
        self.config = config
        self._metrics = metrics
        self._seen: dict[str, tuple[str, str]] = {}
        self._roots: dict[str, dict] = {}
        self._sent: set[tuple[str, str, str]] = set()
        self._couriers: list[Courier] = []
        # Every replica scans (to follow the incidents); `scan` sends only while leading.
        self._loop = Loop("alerts", self.scan, interval=config.poll_seconds)
        if config.targets:
            for target in config.targets:  # series at zero from the start, so rate() sees the first one
                for outcome in OUTCOMES:
                    self._count(target, outcome, 0)
            self._last_scan = datetime.now(UTC).replace(tzinfo=None)
            for incident in self._read(None):  # the baseline: what was there before we started
                self._remember(incident)
            self._couriers = [Courier(target, config, self._count) for target in config.targets]
            self._loop.start()

    def wake(self) -> None:
        self._loop.wake()

    def close(self) -> None:
        self._loop.close()
        for courier in self._couriers:
            courier.close()

    def _read(self, since: datetime | None) -> list[dict]:
        query = sa.select(incidents).order_by(incidents.c.number)
        if since is not None:
            query = query.where(incidents.c.updated >= since)
        with self._engine.connect() as conn:
            return [row_to_incident(row) for row in conn.execute(query)]

    def _remember(self, incident: dict) -> None:
        self._seen[incident["id"]] = (incident["status"], root_key(incident))
        self._roots[incident["id"]] = incident.get("root_cause") or {}

    def scan(self) -> None:
        """Hand every change since the last scan to each target's courier (leader only)."""
        started = datetime.now(UTC).replace(tzinfo=None)
        # Every replica follows the incidents; only the leader pages, so a takeover
        # neither repeats old alerts nor misses new ones.
        sending = self._leading()
        for incident in self._read(self._last_scan - RESCAN):
            previous = self._roots.get(incident["id"])
            for event in changes(self._seen.get(incident["id"]), incident) if sending else ():
                key = (incident["id"], event, root_key(incident) if event == "root_cause_changed" else "")
                if key in self._sent:
                    continue
                self._sent.add(key)
                for courier in self._couriers:
                    courier.put(payload(courier.target, event, incident, self.config,
                                        previous if event == "root_cause_changed" else None))
            self._remember(incident)
        self._last_scan = started

    def _count(self, target: Target, outcome: str, amount: int = 1) -> None:
        if self._metrics is not None:
            self._metrics.alerts.labels(target.format, outcome).inc(amount)
