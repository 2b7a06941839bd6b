"""The shape of `GET /v1/hosts`: each beating host's state (the table is `hosts_seen`, written
by the event writer with the batch its heartbeat came in: service/events/models.py)."""

from pydantic import BaseModel, Field


class HostSeen(BaseModel):
    host: str
    last_seen: str = Field(description="When the service last received a heartbeat from the host (its own clock).")
    last_beat: str = Field(description="The time the host's agent put on that heartbeat.")
    clock_offset_s: float = Field(description="last_seen − last_beat: the host clock's error plus transit time.")
    silent_s: float = Field(description="Seconds from last_seen to the answer.")
    lost: bool = Field(description="Silent for longer than FAULTGRAPH_HEARTBEAT_TIMEOUT.")


class HostList(BaseModel):
    hosts: list[HostSeen]
    next: str | None = Field(description="The cursor of the following page; null at the end.")
