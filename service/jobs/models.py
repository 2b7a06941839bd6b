"""Jobs (SPEC §4): the stored table and the validated shape of a registration.

A job row keeps its placement as posted (`hosts` + `gpus_per_host`, or explicit `ranks`)
so the placement can be rebuilt at start-up; `state` and `state_time` are written through
from `job_*` events, `state_time` being the event time of the last change so a replayed
or late event never overrides a newer one.
"""

from typing import Annotated, Any, Literal

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field, model_validator

from faultgraph.service.events.models import Host, Name, Time
from faultgraph.service.store import JSON, metadata

jobs = sa.Table(
    "jobs",
    metadata,
    sa.Column("id", sa.String, primary_key=True),
    sa.Column("start", sa.DateTime, nullable=False),
    sa.Column("end", sa.DateTime),
    sa.Column("state", sa.String, nullable=False),
    sa.Column("state_time", sa.DateTime, nullable=False),
    sa.Column("registered", sa.DateTime, nullable=False),
    sa.Column("gpus_per_host", sa.Integer),
    sa.Column("hosts", JSON),
    sa.Column("ranks", JSON),
    sa.Column("parallelism", JSON),
    sa.Column("topology_version", sa.Integer),
    sa.Column("attrs", JSON),
)

JobState = Literal["running", "failed", "ended"]
JOB_STATES: tuple[str, ...] = ("running", "failed", "ended")

# What each job_* event kind does to the job's state.
STATE_AFTER: dict[str, str] = {
    "job_start": "running",
    "job_restart": "running",
    "job_fail": "failed",
    "job_end": "ended",
}


class RankSlot(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rank: Annotated[int, Field(ge=0, le=100_000_000)]
    host: Host
    gpu: Annotated[int, Field(ge=0, le=1024)]


class JobIn(BaseModel):
    """A job registration. Fields the SPEC does not name are kept in `attrs` as sent."""

    model_config = ConfigDict(extra="allow")

    id: Name
    start: Time | None = None
    end: Time | None = None
    state: JobState | None = None
    gpus_per_host: Annotated[int, Field(ge=1, le=1024)] | None = None
    hosts: Annotated[list[Host], Field(max_length=1_000_000)] | None = None
    ranks: Annotated[list[RankSlot], Field(max_length=100_000_000)] | None = None
    parallelism: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _ends_after_it_starts(self) -> "JobIn":
        if self.start is not None and self.end is not None and self.end < self.start:
            raise ValueError(f"end {self.end.isoformat()} is before start {self.start.isoformat()}")
        return self
