"""The body of `POST /v1/flight-recorder`."""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from faultgraph.service.events.models import Host, Name


class FlightRecorderPost(BaseModel):
    """Per-rank dumps of one job, in the JSON form the flight recorder writes."""

    model_config = ConfigDict(extra="forbid")

    job: Name
    host: Host | None = Field(default=None, description="Host for ranks the job's placement does not name.")
    dumps: list[dict[str, Any]] = Field(min_length=1, max_length=100_000)
