"""Request plumbing shared by every route: bounded body reads, JSON-or-text bodies, their
validation errors, and time query parameters."""

import logging
from datetime import UTC, datetime

from fastapi import HTTPException, Request
from pydantic import ValidationError
from starlette.requests import ClientDisconnect

log = logging.getLogger(__name__)


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refusing (413) anything over `limit` bytes before reading it all."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"body of {declared} bytes exceeds the limit of {limit} bytes")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise HTTPException(413, f"body exceeds the limit of {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        # Nobody is left to answer, and nothing was stored: one line, not a traceback.
        client = request.client.host if request.client else "?"
        log.info("%s %s: client %s disconnected after %d bytes of the body", request.method, request.url.path, client, size)
        raise HTTPException(400, "client disconnected before the body was complete") from None
    return b"".join(chunks)


def is_json(body: bytes, content_type: str) -> bool:
    """Whether a lines route's body is JSON: it says so, or it opens an object without
    saying it is text (curl -d sends form-urlencoded)."""
    return "json" in content_type or ("text/" not in content_type and body.lstrip()[:1] == b"{")


def text_lines(body: bytes) -> list[str]:
    """A text body's lines, a final newline ignored; cut at "\n" only (str.splitlines would
    also cut at form feeds and U+2028 inside a line)."""
    lines = body.decode("utf-8", errors="replace").split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def first_error(exc: ValidationError) -> tuple[str, str]:
    """(where, what) of a validation error's first problem, `where` a dotted path ("body"
    for the whole)."""
    first = exc.errors()[0]
    return ".".join(str(part) for part in first["loc"]) or "body", first["msg"]


def parse_time(value: str | None, name: str) -> datetime | None:
    """A query parameter in RFC 3339 with a zone, or epoch seconds → aware UTC datetime."""
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except ValueError:
        pass
    else:
        try:
            return datetime.fromtimestamp(number, UTC)
        except (OverflowError, OSError, ValueError):
            raise HTTPException(400, f"{name}: epoch seconds out of range") from None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace(" ", "+"))
    except ValueError:
        raise HTTPException(400, f"{name}: expected RFC 3339 with a zone or epoch seconds, got {value!r}") from None
    if parsed.tzinfo is None:
        raise HTTPException(400, f"{name}: time needs a zone (e.g. 'Z' or '+00:00')")
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+14:00 is before year 1 in UTC
        raise HTTPException(400, f"{name}: {value!r} is out of range in UTC") from None


def split_list(values: list[str] | None) -> tuple[str, ...]:
    """Repeated or comma-separated query values → one tuple."""
    return tuple(part for value in values or () for part in value.split(",") if part)


def request_body(json_schema: dict, *, other: str) -> dict:
    """OpenAPI for a route that reads its body itself (to bound and stream it): a JSON
    body of `json_schema`, or the `other` media type as text."""
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": json_schema}, other: {"schema": {"type": "string"}}},
        }
    }
