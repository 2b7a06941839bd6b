"""Raw log lines → events: group multi-line records and parse them with the agent's rules,
give each event a stable id.

A line's id must survive a retried post and still tell two real occurrences apart. It is
derived from the host, the source, the line's text, the time the event got (the line's
own timestamp where it has one) and which occurrence of that exact text in the post it is;
with a sender-chosen `batch` name it is the batch and the line's index instead, which is
also stable for lines without a timestamp (whose time is the receive time).
"""

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from pydantic import ValidationError
from pydantic_core import from_json

from faultgraph.ingest.records import group_lines
from faultgraph.service.events.service import BodyError
from faultgraph.service.http import first_error, is_json, text_lines
from faultgraph.service.logs.models import LogsBody, LogsBodyAdapter


@dataclass
class ParsedLogs:
    """Events made from a post's lines; `line_of[i]` is the index of the line event i came
    from; `refused` the lines that could not be read, as rejections."""

    lines: int
    unmatched: int
    events: list[dict[str, Any]] = field(default_factory=list)
    line_of: list[int] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Logs:
    """A decoded post: its body, and line index → why that line was refused (too long, not a
    string); a refused line is read as an empty one, so the others keep their indices."""

    body: LogsBody
    refused: dict[int, str] = field(default_factory=dict)


def decode(body: bytes, *, content_type: str, query: dict[str, str | None], max_lines: int) -> Logs:
    """The JSON body `{"host", "source", "lines", "job"?, "batch"?}`, or newline-delimited
    text with `host`/`source`/`job`/`batch` as query parameters; BodyError when unusable.
    A line that cannot be read is refused alone: the post's other lines are still parsed."""
    if is_json(body, content_type):
        try:
            logs = Logs(LogsBodyAdapter.validate_json(body))
        except ValidationError as exc:
            logs = _without_refused(exc, lambda: from_json(body),  # the parser validate_json used: it read the body
                                    '{where}: {what} (expected {{"host": ..., "source": ..., "lines": [...]}})')
    else:
        fields: dict[str, Any] = {name: value for name, value in query.items() if value}
        fields["lines"] = text_lines(body)
        try:
            logs = Logs(LogsBodyAdapter.validate_python(fields))
        except ValidationError as exc:
            logs = _without_refused(exc, lambda: fields,
                                    "query parameter {where}: {what} (text bodies name host and source in the query)")
    if len(logs.body["lines"]) > max_lines:
        raise BodyError(f"{len(logs.body['lines'])} lines exceed the limit of {max_lines} per post; split it", 413)
    return logs


def _without_refused(exc: ValidationError, raw: Callable[[], Any], problem: str) -> Logs:
    """The body again with each line `exc` names read as empty; BodyError (`problem`, with
    `where` and `what` filled) when `exc` is about anything but single lines (a bad host,
    `lines` not a list). `raw` gives the body's fields and is called only then: a body that
    is no JSON at all is that BodyError, where parsing it first would raise."""
    refused: dict[int, str] = {}
    for error in exc.errors():
        where = error["loc"]
        if len(where) < 2 or where[0] != "lines" or not isinstance(where[1], int):
            place, what = first_error(exc)
            raise BodyError(problem.format(where=place, what=what), 422) from None
        refused.setdefault(where[1], error["msg"])
    fields = raw()
    fields["lines"] = ["" if index in refused else line for index, line in enumerate(fields["lines"])]
    return Logs(LogsBodyAdapter.validate_python(fields), refused)


def line_id(*, host: str, source: str, line: str, time: datetime, occurrence: int) -> str:
    """The id of the event parsed from `line`: the same for a retried post, distinct for the
    second of two identical lines in one post."""
    key = "\x1f".join((host, source, time.isoformat(), str(occurrence), line))
    return "l-" + hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def batch_line_id(*, host: str, source: str, batch: str, index: int) -> str:
    """The id of the event from line `index` of the sender's named batch."""
    key = "\x1f".join((host, source, batch, str(index)))
    return "l-" + hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def parse(decoded: Logs, *, received: datetime, max_record_lines: int = 200) -> ParsedLogs:
    """The lines grouped into records (a traceback, a call trace: `ingest.records`) and
    through the parsers; each record's event gets an id from its first line (and `job`).
    `unmatched` counts the lines of records that gave no event, refused lines apart."""
    logs, refused = decoded.body, decoded.refused
    host, source = logs["host"], logs.get("source") or ""
    job, batch = logs.get("job"), logs.get("batch")
    parsed = ParsedLogs(lines=len(logs["lines"]), unmatched=0,
                        refused=[{"index": index, "error": f"line {index + 1}: {what}"} for index, what in sorted(refused.items())])
    seen: dict[str, int] = {}
    for record in group_lines(logs["lines"], host=host, source=source or None, received=received,
                              max_lines=max_record_lines):
        event = record.event
        if event is None:
            parsed.unmatched += sum(1 for index in record.tags if index not in refused) if refused else len(record.lines)
            continue
        index, line = record.tags[0], record.lines[0]
        occurrence = seen[line] = seen.get(line, -1) + 1
        if batch:
            event["id"] = batch_line_id(host=host, source=source, batch=batch, index=index)
        else:
            event["id"] = line_id(host=event["host"], source=source, line=line, time=event["time"],
                                  occurrence=occurrence)
        if job:
            event["job"] = job
        parsed.events.append(event)
        parsed.line_of.append(index)
    return parsed


def encode(parsed: ParsedLogs) -> tuple[bytes, list[int], list[dict]]:
    """The events as a JSON array for the events ingest path, the line index of each, and
    the lines whose event cannot be JSON at all (a number past 64 bits) as rejections."""
    encoded: list[bytes] = []
    line_of: list[int] = []
    rejected: list[dict] = []
    for event, index in zip(parsed.events, parsed.line_of):
        try:
            encoded.append(orjson.dumps(event))
            line_of.append(index)
        except orjson.JSONEncodeError as exc:
            rejected.append({"index": index, "error": f"the event parsed from this line is not representable: {exc}"})
    return b"[" + b",".join(encoded) + b"]", line_of, rejected
