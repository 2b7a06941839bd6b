"""The event envelope (SPEC §1): the stored table and the validated shape of every kind.

Shapes are TypedDicts rather than BaseModels so that validation hands back plain dicts:
the bulk path turns them into Arrow columns without a `model_dump` per event.
"""

import math
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, NotRequired, Union

import orjson
import sqlalchemy as sa
from pydantic import (
    AfterValidator,
    AwareDatetime,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
)
from typing_extensions import TypedDict

from faultgraph.attribution.engine import LONGEST_WAIT_MS
from faultgraph.ingest.causes import CAUSES
from faultgraph.service.store import DUCKDB_COMPRESSION, JSON, metadata

events = sa.Table(
    "events",
    metadata,
    sa.Column("id", sa.String, nullable=False),  # unique by store.UNIQUE_KEYS, not a primary key
    sa.Column("seq", sa.BigInteger, nullable=False),
    sa.Column("time", sa.DateTime, nullable=False),
    sa.Column("received", sa.DateTime, nullable=False),
    sa.Column("host", sa.String, nullable=False),
    sa.Column("kind", sa.String, nullable=False),
    # Uncompressed on DuckDB: its dictionary compression of a cluster's ~30,000 component
    # names is decoded whole whenever the column is filtered or a row of it read, so one
    # component's events cost more as the store fills (service/PERFORMANCE.md).
    sa.Column("component", sa.String, info={DUCKDB_COMPRESSION: "uncompressed"}),
    sa.Column("severity", sa.String),
    sa.Column("job", sa.String),
    sa.Column("rank", sa.Integer),
    sa.Column("message", sa.String),
    sa.Column("attrs", JSON),
)

# Heartbeats are state, not rows: an agent's `ok` heartbeat updates its host's row here (in
# the same commit as the batch it came in) and is not stored as an event; the timeline keeps
# the transitions (`lost`, and `ok` with `back` when a lost host beats again). One row per
# host, so a year of heartbeats costs what a day does. `clock_offset_s` is when the service
# received the beat minus the time the agent put on it (its clock's error plus transit).
hosts_seen = sa.Table(
    "hosts_seen",
    metadata,
    sa.Column("host", sa.String, primary_key=True),
    sa.Column("last_seen", sa.DateTime, nullable=False),  # received, the service's clock
    sa.Column("last_beat", sa.DateTime, nullable=False),  # the heartbeat's own time
    sa.Column("clock_offset_s", sa.Float, nullable=False),
)

# Hourly counts of the raw events retention removed (service/events/flows.py): what the
# statistics of low-severity noise need once its rows are gone.
event_rollups = sa.Table(
    "event_rollups",
    metadata,
    sa.Column("hour", sa.DateTime, primary_key=True),
    sa.Column("host", sa.String, primary_key=True),
    sa.Column("kind", sa.String, primary_key=True),
    sa.Column("severity", sa.String, primary_key=True),
    sa.Column("count", sa.BigInteger, nullable=False),
    sa.Column("first", sa.DateTime, nullable=False),  # the earliest and latest removed event's
    sa.Column("last", sa.DateTime, nullable=False),   # time: the stream's span survives pruning
)

# The Parquet files retention archived (service/events/archive.py), recorded in the
# transaction that removed their rows: readers of the archive read these and no other file.
archive_files = sa.Table(
    "archive_files",
    metadata,
    sa.Column("path", sa.String, primary_key=True),  # relative to the archive's root
    sa.Column("day", sa.Date, nullable=False),
    sa.Column("first_seq", sa.BigInteger, nullable=False),
    sa.Column("last_seq", sa.BigInteger, nullable=False),
    sa.Column("rows", sa.BigInteger, nullable=False),
)

EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, tzinfo=UTC)


# Refuse times no real log can carry (clock garbage, overflow); checked natively by
# pydantic-core, no Python call per event. Conversion to UTC happens in the Arrow column.
Time = Annotated[AwareDatetime, Field(ge=EARLIEST, lt=LATEST)]
Name = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f]+$")]
Host = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,252}$")]
Text = Annotated[str, StringConstraints(max_length=65_536)]
Count = Annotated[int, Field(ge=0, le=2**63 - 1)]
WaitMs = Annotated[int, Field(ge=0, le=LONGEST_WAIT_MS)]  # a watchdog's timeout or wait
Severity = Literal["debug", "info", "warning", "error", "critical"]

SEVERITIES: tuple[str, ...] = ("debug", "info", "warning", "error", "critical")


class _Attrs(TypedDict, total=False):
    """Attrs a kind documents are type-checked; any others are kept as sent."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]


class GpuXidAttrs(_Attrs):
    xid: Annotated[int, Field(ge=0, le=1_000_000)]
    pci: NotRequired[Name | None]
    pid: NotRequired[int | None]
    process: NotRequired[Text | None]
    text: NotRequired[Text | None]


class GpuEccAttrs(_Attrs):
    type: Literal["sbe", "dbe", "row_remap", "page_retire"]
    count: NotRequired[Count]


class GpuThermalAttrs(_Attrs):
    temp_c: NotRequired[float]
    throttle: NotRequired[bool | str]


class NvlinkErrorAttrs(_Attrs):
    link: NotRequired[Annotated[int, Field(ge=0, le=1024)]]
    peer: NotRequired[Name]
    counter: NotRequired[Name]
    count: NotRequired[Count]


class NvswitchErrorAttrs(_Attrs):
    # Fabric Manager's errors (a topology it cannot match, a switch it cannot query, its own
    # exit) concern the NVSwitch fabric and carry no SXid: without one the event still stands.
    sxid: NotRequired[Annotated[int, Field(ge=0, le=1_000_000)]]
    text: NotRequired[Text]


class NicLinkAttrs(_Attrs):
    device: NotRequired[Name]
    port: NotRequired[Annotated[int, Field(ge=0, le=1024)]]
    state: Literal["down", "up"]


class NicErrorAttrs(_Attrs):
    device: NotRequired[Name]
    port: NotRequired[Annotated[int, Field(ge=0, le=1024)]]
    counter: NotRequired[Name]
    count: NotRequired[Count]


class PcieAerAttrs(_Attrs):
    bdf: NotRequired[Name]
    severity: Literal["corrected", "nonfatal", "fatal"]
    text: NotRequired[Text]


class NcclTimeoutAttrs(_Attrs):
    rank: NotRequired[Count]
    op: NotRequired[Name]
    seq: NotRequired[Count]
    timeout_ms: NotRequired[WaitMs]
    elapsed_ms: NotRequired[WaitMs]
    pg: NotRequired[Name]


class NcclErrorAttrs(_Attrs):
    rank: NotRequired[Count]
    peer: NotRequired[Name]
    code: NotRequired[Name]
    transport: NotRequired[Name]
    text: NotRequired[Text]


class HostAttrs(_Attrs):
    text: NotRequired[Text]


class HeartbeatAttrs(_Attrs):
    state: Literal["lost", "ok"]


class JobAttrs(_Attrs):
    reason: NotRequired[Text]


class CheckpointAttrs(_Attrs):
    step: NotRequired[Count]
    duration_s: NotRequired[Annotated[float, Field(ge=0, allow_inf_nan=False)]]


class MaintenanceAttrs(_Attrs):
    planned: NotRequired[bool]
    scope: NotRequired[Name]
    text: NotRequired[Text]


class TrainAnomalyAttrs(_Attrs):
    type: Literal["loss_spike", "nan", "grad_norm"]
    step: NotRequired[Count]
    value: NotRequired[float | None]
    baseline: NotRequired[float | None]


class TrainStepAttrs(_Attrs):
    step: Count
    duration_ms: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    compute_ms: NotRequired[Annotated[float, Field(ge=0, allow_inf_nan=False)] | None]
    wait_ms: NotRequired[Annotated[float, Field(ge=0, allow_inf_nan=False)] | None]
    tokens: NotRequired[Count | None]


Throttle = Literal["hw_slowdown", "hw_thermal", "hw_power_brake", "sw_thermal", "sw_power_cap"]


class GpuPerfAttrs(_Attrs):
    sm_clock_mhz: NotRequired[Annotated[float, Field(ge=0, allow_inf_nan=False)] | None]
    max_sm_clock_mhz: NotRequired[Annotated[float, Field(ge=0, allow_inf_nan=False)] | None]
    power_w: NotRequired[Annotated[float, Field(ge=0, allow_inf_nan=False)] | None]
    throttle: NotRequired[list[Throttle]]
    util: NotRequired[Annotated[float, Field(ge=0, allow_inf_nan=False)] | None]


class PcieLinkAttrs(_Attrs):
    bdf: NotRequired[Name]
    device: NotRequired[Name]
    width: NotRequired[Annotated[int, Field(ge=0, le=64)]]
    max_width: NotRequired[Annotated[int, Field(ge=0, le=64)]]
    speed_gts: NotRequired[Annotated[float, Field(ge=0, le=1024, allow_inf_nan=False)]]
    max_speed_gts: NotRequired[Annotated[float, Field(ge=0, le=1024, allow_inf_nan=False)]]


class FlightRecorderAttrs(_Attrs):
    """A rank the NCCL flight recorder shows out of step (POST /v1/flight-recorder writes these)."""

    pg: Name
    seq: Count
    op: Name
    reason: Literal["never_entered", "op_mismatch", "size_mismatch"]
    missing_ranks: NotRequired[list[Annotated[int, Field(ge=0)]]]
    share: NotRequired[Annotated[float, Field(gt=0, le=1)]]


ComponentStateName = Literal["healthy", "suspect", "faulty", "drained", "in_repair", "retired"]
COMPONENT_STATES: tuple[str, ...] = ComponentStateName.__args__


class ComponentStateAttrs(_Attrs):
    state: ComponentStateName
    cause: NotRequired[Literal[CAUSES] | None]  # type: ignore[valid-type]
    reason: NotRequired[Text | None]
    ticket: NotRequired[Name | None]


class AuditAttrs(_Attrs):
    actor: Name
    action: Name
    target: NotRequired[Text | None]
    detail: NotRequired[Any]


# kind → (attrs shape, severity when the sender gives none)
KINDS: dict[str, tuple[type, str]] = {
    "gpu_xid": (GpuXidAttrs, "error"),
    "gpu_ecc": (GpuEccAttrs, "warning"),
    "gpu_thermal": (GpuThermalAttrs, "warning"),
    "nvlink_error": (NvlinkErrorAttrs, "error"),
    "nvswitch_error": (NvswitchErrorAttrs, "error"),
    "nic_link": (NicLinkAttrs, "error"),
    "nic_error": (NicErrorAttrs, "warning"),
    "pcie_aer": (PcieAerAttrs, "warning"),
    "nccl_timeout": (NcclTimeoutAttrs, "error"),
    "nccl_error": (NcclErrorAttrs, "error"),
    "host_mce": (HostAttrs, "error"),
    "host_mem_ecc": (HostAttrs, "warning"),
    "host_kernel": (HostAttrs, "error"),
    "host_oom": (HostAttrs, "error"),
    "host_disk": (HostAttrs, "error"),
    "host_power": (HostAttrs, "error"),
    "host_heartbeat": (HeartbeatAttrs, "warning"),
    "job_start": (JobAttrs, "info"),
    "job_end": (JobAttrs, "info"),
    "job_fail": (JobAttrs, "error"),
    "job_restart": (JobAttrs, "warning"),
    "checkpoint_save": (CheckpointAttrs, "info"),
    "checkpoint_load": (CheckpointAttrs, "info"),
    "maintenance": (MaintenanceAttrs, "info"),
    "train_anomaly": (TrainAnomalyAttrs, "error"),
    "train_step": (TrainStepAttrs, "info"),
    "gpu_perf": (GpuPerfAttrs, "info"),
    "pcie_link": (PcieLinkAttrs, "warning"),
    "component_state": (ComponentStateAttrs, "info"),
    "flight_recorder": (FlightRecorderAttrs, "error"),
    "audit": (AuditAttrs, "info"),
}

# Kinds only the service writes (SPEC §1 `audit`): no post from outside may carry them.
SERVICE_KINDS: frozenset[str] = frozenset({"audit"})


class _Envelope(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    time: Time
    host: Host
    component: NotRequired[Name | None]
    severity: NotRequired[Severity | None]
    message: NotRequired[Text | None]
    job: NotRequired[Name | None]
    rank: NotRequired[Annotated[int, Field(ge=0, le=100_000_000)] | None]
    id: NotRequired[Name | None]
    # A stored event read back (an export) may be posted again; the server sets its own.
    received: NotRequired[Any]


# Unknown attrs are kept as sent, so they are bounded here: one event cannot carry a
# megabyte, a structure deep enough to exhaust a parser, or a number the store cannot hold.
MAX_ATTRS_BYTES = 128 * 1024
MAX_ATTRS_DEPTH = 8
MAX_KEY_CHARS = 256
MAX_STRING_CHARS = 65_536


def _problem(value: Any, depth: int) -> tuple[list[str], str] | None:
    """The first limit `value` breaks, as (path below it, what), or None. Paths are built
    only on the way out of a failure: this runs for every event ingested."""
    if isinstance(value, str):
        return ([], f"is longer than {MAX_STRING_CHARS} characters") if len(value) > MAX_STRING_CHARS else None
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return None if -(2**63) <= value < 2**64 else ([], "is an integer outside 64 bits")
    if isinstance(value, float):
        return None if math.isfinite(value) else ([], "is not a finite number (send null for a missing value)")
    if isinstance(value, dict | list):
        if depth > MAX_ATTRS_DEPTH:
            return [], f"nests deeper than {MAX_ATTRS_DEPTH} levels"
        pairs = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in pairs:
            if isinstance(key, str) and len(key) > MAX_KEY_CHARS:
                return [], f"has a key longer than {MAX_KEY_CHARS} characters"
            found = _problem(item, depth + 1)
            if found is not None:
                step = f".{key}" if isinstance(key, str) else f"[{key}]"
                return [step, *found[0]], found[1]
    return None


def _bounded_attrs(attrs: dict) -> dict:
    """Refuse attrs past the size, depth, string-length and number limits above.

    Most attrs are a few short fields: when their JSON is shorter than a key may be, holds
    fewer brackets than the depth allowed and no `null` (orjson writes NaN and infinities as
    null, and refuses integers past 64 bits), no limit can be broken, and the walk that
    names the broken one is skipped. This runs for every event ingested."""
    try:
        encoded = orjson.dumps(attrs)
    except orjson.JSONEncodeError:
        encoded = None
    if (encoded is not None and len(encoded) <= MAX_KEY_CHARS and b"null" not in encoded
            and encoded.count(b"{") + encoded.count(b"[") <= MAX_ATTRS_DEPTH):
        return attrs
    found = _problem(attrs, 1)
    if found is not None:
        raise ValueError(f"attrs{''.join(found[0])} {found[1]}")
    size = len(orjson.dumps(attrs))
    if size > MAX_ATTRS_BYTES:
        raise ValueError(f"attrs of {size} bytes exceed the limit of {MAX_ATTRS_BYTES} bytes")
    return attrs


def _envelope_for(kind: str, attrs_shape: type) -> type:
    """The envelope specialised to one kind, so errors name `attrs.<field>` of that kind."""
    bounded = Annotated[attrs_shape, AfterValidator(_bounded_attrs)]
    attrs = bounded if attrs_shape.__required_keys__ else NotRequired[bounded]
    annotations = {"kind": Literal[kind], "attrs": attrs}
    return type(_Envelope)(f"{kind}_event", (_Envelope,), {"__annotations__": annotations})


AnyEvent = Annotated[
    Union[tuple(_envelope_for(kind, shape) for kind, (shape, _) in KINDS.items() if kind not in SERVICE_KINDS)],  # type: ignore[misc]  # noqa: UP007 (a union built from a tuple)
    Field(discriminator="kind"),
]

EventList = TypeAdapter(list[AnyEvent])
OneEvent = TypeAdapter(AnyEvent)


class EventsBody(TypedDict):
    events: list[AnyEvent]


EventsObject = TypeAdapter(EventsBody)
