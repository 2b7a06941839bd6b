"""The shape of a `POST /v1/diagnose` body (SPEC §5 "Diagnosing pasted logs")."""

from typing import Annotated, NotRequired

from pydantic import Field, StringConstraints, TypeAdapter
from typing_extensions import TypedDict

from faultgraph.service.events.models import Host, Name

Text = Annotated[str, StringConstraints(max_length=65_536)]


class PastedLine(TypedDict):
    """A line with the host (and source) it came from, for pastes that mix hosts."""

    line: Text
    host: NotRequired[Host | None]
    source: NotRequired[Name | None]


class PastedJob(TypedDict):
    """Where the job's ranks ran (SPEC §4 placement), so a rank can be named as a GPU."""

    hosts: Annotated[list[Host], Field(min_length=1, max_length=32_768)]
    gpus_per_host: NotRequired[Annotated[int, Field(ge=1, le=64)]]
    id: NotRequired[Name]
    parallelism: NotRequired[dict[str, int | str]]


class DiagnoseBody(TypedDict):
    """Pasted lines (strings, or objects naming their host), a default host, the job."""

    lines: Annotated[list[Text | PastedLine], Field(max_length=1_000_000)]
    host: NotRequired[Host | None]
    job: NotRequired[PastedJob | None]


DiagnoseBodyAdapter = TypeAdapter(DiagnoseBody)
