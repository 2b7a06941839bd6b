"""Incidents: the stored shape of one interruption and the bodies on-call sends about it."""

from typing import Literal

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field, model_validator

from faultgraph.ingest.causes import CATEGORIES, CAUSE_CATEGORY
from faultgraph.service.store import JSON, metadata

incidents = sa.Table(
    "incidents",
    metadata,
    sa.Column("id", sa.String, primary_key=True),
    sa.Column("number", sa.Integer, nullable=False, unique=True),
    sa.Column("scope", sa.String, nullable=False),  # "job:<id>" or "host:<name>"
    sa.Column("job", sa.String),
    sa.Column("status", sa.String, nullable=False),
    sa.Column("status_set_by_oncall", sa.Boolean, nullable=False, default=False),
    sa.Column("opened", sa.DateTime, nullable=False),
    sa.Column("closed", sa.DateTime),
    sa.Column("updated", sa.DateTime, nullable=False),
    # The engine's grouping span (effective times), used to match re-analysed incidents.
    sa.Column("start", sa.DateTime, nullable=False),
    sa.Column("last", sa.DateTime, nullable=False),
    sa.Column("symptoms", sa.Integer, nullable=False),
    sa.Column("hosts", sa.Integer, nullable=False),
    sa.Column("planned", sa.Boolean, nullable=False),
    # SPEC §5: `interruption` (a job stopped), `degradation` (it ran slower) or `fault`
    # (a part needs repair, no job stopped). MTBF and the ledger count interruptions only.
    sa.Column("type", sa.String, nullable=False, default="interruption", server_default="interruption"),
    # The engine's answer, and what on-call confirmed or overrode (statistics prefer it).
    sa.Column("root_cause", JSON, nullable=False),
    sa.Column("confirmed", JSON),
    sa.Column("category", sa.String, nullable=False),  # effective: confirmed, else engine's
    sa.Column("cause", sa.String, nullable=False),
    sa.Column("candidates", JSON, nullable=False),
    sa.Column("action", JSON, nullable=False),
    sa.Column("gpus", sa.Integer, nullable=False),
    sa.Column("gpu_hours_lost", sa.Float, nullable=False),
    sa.Column("failed_at", sa.DateTime, nullable=False),  # the interruption's start
    sa.Column("interruption_end", sa.DateTime),
    sa.Column("notes", JSON, nullable=False),
    # Host → seconds its clock ran ahead, as the engine estimated it (attribution/clock.py).
    sa.Column("clock_offsets", JSON),
    # The topology version the engine analysed it on (GET /v1/topology?version=N).
    sa.Column("topology_version", sa.Integer),
    # A degradation carries the fraction of speed lost (service/incidents/degradations.py).
    sa.Column("slowdown", sa.Float),
)

# Member and evidence events of each incident, for its timeline. A pair is stored once; no
# constraint says so (stores already created lack one), so an import checks it (store.table_key).
incident_events = sa.Table(
    "incident_events",
    metadata,
    sa.Column("incident_id", sa.String, nullable=False, index=True),
    sa.Column("event_id", sa.String, nullable=False),
    info={"key": ("incident_id", "event_id")},
)

# Where the engine has got to in the event stream (events.seq), so it resumes after restart.
engine_state = sa.Table(
    "engine_state",
    metadata,
    sa.Column("name", sa.String, primary_key=True),
    sa.Column("last_seq", sa.BigInteger, nullable=False),
)

STATUSES = ("open", "acknowledged", "resolved")
TYPES = ("interruption", "degradation", "fault")
Cause = Literal[tuple(CAUSE_CATEGORY)]  # type: ignore[valid-type]
Category = Literal[CATEGORIES]  # type: ignore[valid-type]


class RootCauseOverride(BaseModel):
    """On-call's word on the root cause; a cause implies its category."""

    model_config = ConfigDict(extra="forbid")

    component: str | None = Field(default=None, min_length=1, max_length=512)
    category: Category | None = None
    cause: Cause | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "RootCauseOverride":
        if self.cause and self.category and CAUSE_CATEGORY[self.cause] != self.category:
            raise ValueError(f"cause {self.cause} belongs to category {CAUSE_CATEGORY[self.cause]}, not {self.category}")
        if self.cause and not self.category:
            self.category = CAUSE_CATEGORY[self.cause]
        return self


def merged_confirmation(earlier: dict | None, patch: RootCauseOverride) -> dict:
    """On-call's confirmation after `patch`: the fields it sends over the earlier ones (a
    field not sent keeps its value, a null clears it); a category sent alone drops an
    earlier cause of another category."""
    given = patch.model_dump(exclude_unset=True)
    merged = {"component": None, "category": None, "cause": None, **(earlier or {}), **given}
    if "cause" not in given and merged["cause"] and merged["category"] \
            and CAUSE_CATEGORY[merged["cause"]] != merged["category"]:
        merged["cause"] = None
    return merged


def refuse_a_category_without_its_cause(confirmed: dict, engine_cause: dict) -> None:
    """A category confirmed alone stands on the engine's cause; one of another category would
    read (and count, in the statistics by cause) as `network` with `host_maintenance`."""
    category = confirmed["category"]
    if category and not confirmed["cause"] and CAUSE_CATEGORY.get(engine_cause["cause"]) != category:
        causes = ", ".join(cause for cause, of in CAUSE_CATEGORY.items() if of == category)
        raise ValueError(f"root_cause: category {category} without a cause, while the engine's cause "
                         f"{engine_cause['cause']} is not {category}; send the cause too ({causes})")


def effective_planned(confirmed: dict | None, engine_planned: bool) -> bool:
    """Whether an interruption was planned: a confirmed cause decides where there is one
    (SPEC §5: statistics use the confirmed cause), else the engine's reading of the
    maintenance events."""
    cause = (confirmed or {}).get("cause")
    return cause == "planned_maintenance" if cause else engine_planned


class IncidentPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    root_cause: RootCauseOverride | None = None
    status: Literal[STATUSES] | None = None  # type: ignore[valid-type]
    note: str | None = Field(default=None, max_length=10_000)
    author: str | None = Field(default=None, max_length=256)
