"""The shape of a `POST /v1/logs` body (SPEC §8), for validation and the OpenAPI page."""

from typing import Annotated, NotRequired

from pydantic import Field, StringConstraints, TypeAdapter
from typing_extensions import TypedDict

from faultgraph.service.events.models import Host, Name

Line = Annotated[str, StringConstraints(max_length=65_536)]


class LogsBody(TypedDict):
    """Raw lines of one host and source; `batch` is the sender's name for this post, which
    makes a retry idempotent even for lines without a timestamp of their own."""

    host: Host
    source: NotRequired[Name | None]
    job: NotRequired[Name | None]
    batch: NotRequired[Name | None]
    lines: Annotated[list[Line], Field(max_length=1_000_000)]


LogsBodyAdapter = TypeAdapter(LogsBody)
