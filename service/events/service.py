"""Events: decode and validate posted batches, turn them into Arrow rows, and query them."""

import base64
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pyarrow as pa
import sqlalchemy as sa
from pydantic import ValidationError
from pydantic_core import from_json
from sqlalchemy.engine import Connection

from faultgraph.ingest import catalogue
from faultgraph.service import store
from faultgraph.service.batches import Decoded
from faultgraph.service.events.models import KINDS, SERVICE_KINDS, EventList, OneEvent, events, hosts_seen

DEFAULT_SEVERITY = {kind: severity for kind, (_, severity) in KINDS.items()}

def default_severity(event: dict) -> str:
    """The severity of an event posted without one: by kind (SPEC §1), refined by the code
    for an Xid or SXid the catalogue lists, as the agent's parse of the same line sets it:
    an Xid 79 is critical (the GPU needs repair, a `fault` even when no job was running),
    a video engine's Xid 82 a warning."""
    entry = catalogue.code_entry(event["kind"], event.get("attrs") or {})
    return entry.severity if entry is not None else DEFAULT_SEVERITY[event["kind"]]


# Mutates a validated event in place: fills `component`/`job` from the topology and jobs.
Enricher = Callable[[dict], None]

ARROW_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("time", pa.timestamp("us")),
        ("received", pa.timestamp("us")),
        ("host", pa.string()),
        ("kind", pa.string()),
        ("component", pa.string()),
        ("severity", pa.string()),
        ("job", pa.string()),
        ("rank", pa.int32()),
        ("message", pa.string()),
        ("attrs", pa.string()),
    ]
)


class BodyError(ValueError):
    """The body as a whole is unusable (not JSON, wrong shape): the answer is a 4xx."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _describe(errors: list[dict]) -> dict[int, str]:
    """pydantic errors of a list → one readable message per list index."""
    by_index: dict[int, list[str]] = {}
    for error in errors:
        loc = error["loc"]
        index = loc[0] if loc and isinstance(loc[0], int) else 0
        path = [str(part) for part in loc[1:]]
        if path and path[0].endswith("_event") or (path and path[0] in KINDS):
            path = path[1:]  # the discriminator's tag says nothing to the sender
        if error["type"] == "union_tag_invalid" and error["ctx"]["tag"] in SERVICE_KINDS:
            text = f"kind: {error['ctx']['tag']} events are written by the service itself and cannot be posted"
        elif error["type"] == "union_tag_invalid":
            postable = (kind for kind in KINDS if kind not in SERVICE_KINDS)
            text = f"kind: unknown kind {error['ctx']['tag']}; known kinds: {', '.join(postable)}"
        elif error["type"] == "union_tag_not_found":
            text = "kind: field required"
        elif error["type"] in ("dict_type", "model_type", "typed_dict_type", "model_attributes_type") and not path:
            text = "an event must be a JSON object"
        else:
            text = f"{'.'.join(path) or 'event'}: {error['msg']}"
        by_index.setdefault(index, []).append(text)
    return {index: "; ".join(texts) for index, texts in by_index.items()}


def _validate_items(items: list, decoded: Decoded, offset: int = 0) -> None:
    """Slow path, one event at a time, so good events survive next to bad ones."""
    for index, item in enumerate(items):
        try:
            decoded.valid.append(OneEvent.validate_python(item))
        except ValidationError as exc:
            message = _describe([{**e, "loc": (0, *e["loc"])} for e in exc.errors()])[0]
            decoded.rejected.append({"index": index + offset, "error": message})


def decode(body: bytes, *, content_type: str = "", max_events: int) -> Decoded:
    """Parse a JSON array, `{"events": [...]}` or NDJSON into validated event dicts."""
    stripped = body.lstrip()
    if not stripped:
        raise BodyError("empty body: expected a JSON array of events, {\"events\": [...]}, or NDJSON")
    decoded = Decoded()
    ndjson = "ndjson" in content_type or "jsonlines" in content_type
    if stripped[:1] == b"[" and not ndjson:
        try:
            decoded.valid = EventList.validate_json(body)
            _check_count(len(decoded.valid), max_events)
            return decoded
        except ValidationError as exc:
            invalid = [e["msg"] for e in exc.errors() if e["type"] == "json_invalid"]
            if invalid and "recursion limit" not in invalid[0]:  # too deep for jiter: `_parse` reads it
                raise BodyError(f"body is not valid JSON: {invalid[0]}") from None
        items = _loads(body)
        _check_count(len(items), max_events)
        _validate_items(items, decoded)
        return decoded
    if not ndjson:
        try:
            whole = _parse(body)
        except ValueError:
            whole = None  # several lines: NDJSON
        if isinstance(whole, dict) and "events" in whole:
            items = whole["events"]
            if not isinstance(items, list):
                raise BodyError('"events" must be a JSON array of events')
            _check_count(len(items), max_events)
            _validate_items(items, decoded)
            return decoded
        if whole is not None and not isinstance(whole, dict):
            raise BodyError("expected a JSON array of events, {\"events\": [...]}, or NDJSON")
        if whole is None and b"\n" not in stripped.rstrip():
            raise BodyError("body is not valid JSON" if stripped.rstrip() != b"null" else
                            "expected a JSON array of events, {\"events\": [...]}, or NDJSON, not null")
    lines = [line for line in body.splitlines() if line.strip()]
    _check_count(len(lines), max_events)
    items = []
    for index, line in enumerate(lines):
        try:
            items.append(_parse(line))
        except ValueError as exc:
            items.append(None)
            decoded.rejected.append({"index": index, "error": f"line {index + 1} is not valid JSON: {exc}"})
    bad = {r["index"] for r in decoded.rejected}
    for index, item in enumerate(items):
        if index not in bad:
            _validate_items([item], decoded, offset=index)
    decoded.rejected.sort(key=lambda rejection: rejection["index"])  # unreadable lines were named first
    return decoded


def _parse(data: bytes) -> Any:
    """The slow path's parse: pydantic's own (jiter), as the fast path's `validate_json`
    reads the body, so an integer past 64 bits or an infinity reaches validation intact and
    is refused there for its event alone (orjson would make the integer a float). A body
    nested deeper than jiter reads (about 200) is read by orjson (to 1024), so one deep
    event is refused alone rather than the batch with it."""
    try:
        return from_json(data, allow_inf_nan=False)
    except ValueError as exc:
        if "recursion limit" not in str(exc):
            raise
        return orjson.loads(data)


def _loads(body: bytes) -> Any:
    """`_parse`, with a body it cannot read as a 400."""
    try:
        return _parse(body)
    except ValueError as exc:
        raise BodyError(f"body is not valid JSON: {exc}") from None


def validate_all(items: list[dict]) -> list[dict]:
    """Validate events built inside the service; any error is a bug, so it raises."""
    return EventList.validate_python(items)


def _check_count(count: int, max_events: int) -> None:
    if count > max_events:
        raise BodyError(f"batch of {count} events exceeds the limit of {max_events}; split it", 413)


def content_id(event: dict) -> str:
    """A stable id from the event's content, so a retried batch without ids is stored once;
    the time counts as the instant it names, however its offset was written (a UTC time
    hashes as it always has, so ids stored by earlier releases stay the same)."""
    if event["time"].utcoffset():
        event = {**event, "time": event["time"].astimezone(UTC)}
    digest = hashlib.blake2b(orjson.dumps(event, option=orjson.OPT_SORT_KEYS), digest_size=16)
    return "e-" + digest.hexdigest()


@dataclass(frozen=True)
class Pending:
    """One request's validated events waiting for the writer, which converts a whole group
    of them at once (`rows_of_group`)."""

    events: list[dict]
    received: datetime
    beats: list[dict] = field(default_factory=list)  # `ok` heartbeats: host state, not rows

    def __len__(self) -> int:
        return len(self.events)


def is_beat(event: dict) -> bool:
    """An agent's `ok` heartbeat (kept as its host's state rather than stored as an event)."""
    return event["kind"] == "host_heartbeat" and (event.get("attrs") or {}).get("state") == "ok"


def record_beats(conn: Connection, group: list[Pending]) -> None:
    """Each beating host's latest heartbeat in `hosts_seen`, in the writer's transaction."""
    latest: dict[str, tuple[datetime, datetime]] = {}
    for pending in group:
        for beat in pending.beats:
            seen = latest.get(beat["host"])
            if seen is None or beat["time"] >= seen[1]:
                latest[beat["host"]] = (pending.received, beat["time"])
    if not latest:
        return
    rows = pa.table({
        "host": list(latest),
        "last_seen": pa.array([(seen - _EPOCH) // _MICROSECOND for seen, _ in latest.values()], pa.int64()).view(pa.timestamp("us")),
        "last_beat": pa.array([(at - _EPOCH) // _MICROSECOND for _, at in latest.values()], pa.int64()).view(pa.timestamp("us")),
        "clock_offset_s": [(seen - at).total_seconds() for seen, at in latest.values()],
    })
    store.upsert(conn, hosts_seen, rows, newer="last_seen")


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def to_rows(valid: list[dict], *, received: datetime, enrich: Enricher | None = None) -> pa.Table:
    """Validated events → an Arrow table in ARROW_SCHEMA (without `seq`, the writer's)."""
    return rows_of_group([Pending(valid, received)], enrich=enrich)


def rows_of_group(group: list[Pending], *, enrich: Enricher | None = None) -> pa.Table:
    """Several requests' events → one Arrow table in ARROW_SCHEMA, in order.

    One pass over the events building plain lists: this loop is the per-event cost of
    ingest, so it does nothing but fill columns; times become integer microseconds here
    (Arrow's own conversion of zoned datetimes is three times slower). Attrs are kept as
    `str`: a kept orjson `bytes` costs ten times its encoding (each one a fresh `malloc`
    and a shrinking `realloc`, where a `str` copy of it reuses the freed buffer).
    """
    n = sum(len(pending) for pending in group)
    ids, times, received, hosts, kinds, components, severities, jobs, ranks, messages, attrs = (
        [None] * n for _ in range(11))
    dumps = orjson.dumps
    i = 0
    for pending in group:
        at = (pending.received - _EPOCH) // _MICROSECOND
        for event in pending.events:
            ids[i] = event.get("id") or content_id(event)
            if enrich is not None:
                enrich(event)
            host = hosts[i] = event["host"]
            kind = kinds[i] = event["kind"]
            times[i] = (event["time"] - _EPOCH) // _MICROSECOND
            received[i] = at
            components[i] = event.get("component") or host
            severities[i] = event.get("severity") or (DEFAULT_SEVERITY[kind] if kind not in catalogue.CODED_KINDS
                                                          else default_severity(event))
            jobs[i] = event.get("job")
            ranks[i] = event.get("rank")
            messages[i] = event.get("message")
            attrs[i] = dumps(event.get("attrs") or {}).decode()
            i += 1
    columns = [
        ids,
        pa.array(times, pa.int64()).view(pa.timestamp("us")),
        pa.array(received, pa.int64()).view(pa.timestamp("us")),
        hosts,
        kinds,
        components,
        severities,
        jobs,
        ranks,
        messages,
        pa.array(attrs, pa.string()),
    ]
    return pa.table(columns, schema=ARROW_SCHEMA)


@dataclass(frozen=True)
class EventFilter:
    since: datetime | None = None
    until: datetime | None = None
    hosts: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    component: str | None = None
    job: str | None = None


def _naive_utc(value: datetime) -> datetime:
    return value.astimezone(UTC).replace(tzinfo=None)


def where_clauses(flt: EventFilter) -> list:
    """The SQL conditions of a filter; a component also matches everything inside it."""
    clauses = []
    if flt.since is not None:
        clauses.append(events.c.time >= _naive_utc(flt.since))
    if flt.until is not None:
        clauses.append(events.c.time < _naive_utc(flt.until))
    if flt.hosts:
        clauses.append(events.c.host.in_(flt.hosts))
    if flt.kinds:
        clauses.append(events.c.kind.in_(flt.kinds))
    if flt.component:
        # A `%` or `_` in a name is itself, not a wildcard; escaping only then keeps DuckDB's
        # fast prefix match for the usual names (its LIKE … ESCAPE is a slower generic match).
        inside = flt.component + "/"
        clauses.append(sa.or_(events.c.component == flt.component,
                              events.c.component.startswith(inside, autoescape="%" in inside or "_" in inside)))
    if flt.job:
        clauses.append(events.c.job == flt.job)
    return clauses


def encode_cursor(time: datetime, event_id: str) -> str:
    return base64.urlsafe_b64encode(orjson.dumps([time.isoformat(), event_id])).decode()


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The (time, id) a page ended at; ValueError for anything not made by `encode_cursor`."""
    try:
        time_text, event_id = orjson.loads(base64.urlsafe_b64decode(cursor.encode()))
        return datetime.fromisoformat(time_text), str(event_id)
    except Exception:
        raise ValueError("cursor is not one this server returned") from None


def format_time(value: datetime | None) -> str | None:
    """A time as every answer writes it: RFC 3339, UTC, microseconds, `Z` (a naive value is
    a stored one, already UTC). `isoformat`, not `strftime`: glibc's `%Y` drops the zero
    padding of years before 1000, which RFC 3339 requires."""
    if value is None:
        return None
    utc = value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
    return utc.isoformat(timespec="microseconds") + "Z"


def row_to_event(row: sa.Row) -> dict:
    """A stored row → the envelope as posted, plus `id`, `component` and `received`."""
    attrs = row.attrs
    return {
        "id": row.id,
        "time": format_time(row.time),
        "host": row.host,
        "kind": row.kind,
        "component": row.component,
        "severity": row.severity,
        "attrs": store.json_value(attrs) or {},
        "message": row.message,
        "job": row.job,
        "rank": row.rank,
        "received": format_time(row.received),
    }


def get_all(conn: Connection, *, flt: EventFilter, limit: int, cursor: str | None = None) -> tuple[list[dict], str | None]:
    """One page of events in time order and the cursor of the next page (None at the end)."""
    query = sa.select(events).where(*where_clauses(flt))
    if cursor:
        after_time, after_id = decode_cursor(cursor)
        query = query.where(sa.tuple_(events.c.time, events.c.id) > sa.tuple_(sa.literal(after_time), sa.literal(after_id)))
    rows = conn.execute(query.order_by(events.c.time, events.c.id).limit(limit + 1)).fetchall()
    page = rows[:limit]
    following = encode_cursor(page[-1].time, page[-1].id) if len(rows) > limit else None
    return [row_to_event(row) for row in page], following

