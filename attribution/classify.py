"""What one event means to the engine: a symptom of an interruption, a fault that can be
its root, weaker evidence, or job lifecycle.

The parsers already tag each line with its catalogue `cause` and `role` (attrs.cause,
attrs.role); events posted as JSON without them are looked up here the same way: XID and
SXid codes in the catalogue, the other kinds by `KIND_DEFAULTS` below.
"""

from dataclasses import dataclass
from typing import Any, Literal

from faultgraph.ingest import catalogue

Role = Literal["symptom", "fault", "evidence", "lifecycle", "maintenance", "ignore"]

# How much a hardware event weighs as evidence, by severity.
SEVERITY_WEIGHT = {"critical": 1.0, "error": 0.6, "warning": 0.15, "info": 0.02, "debug": 0.0}

SYMPTOM_KINDS = frozenset({"nccl_timeout", "nccl_error", "job_fail"})
LIFECYCLE_KINDS = frozenset({"job_start", "job_end", "job_restart", "checkpoint_save", "checkpoint_load"})

# kind → cause for posted events that carry no catalogue hint. The cause of a PCIe AER
# depends on the device behind the BDF and is refined by the engine once resolved.
KIND_DEFAULTS: dict[str, str] = {
    "gpu_ecc": "gpu_hbm",
    "gpu_thermal": "gpu_thermal",
    "nvlink_error": "nvlink",
    "nvswitch_error": "nvswitch",
    "nic_link": "nic",
    "nic_error": "nic",
    "pcie_aer": "io_expansion_board",
    "host_mce": "cpu",
    "host_mem_ecc": "system_memory",
    "host_kernel": "unknown",
    "host_oom": "software_bug",
    "host_disk": "ssd",
    "host_power": "power_supply",
    "host_heartbeat": "unknown",
    "train_anomaly": "silent_data_corruption",
}


@dataclass(frozen=True, slots=True)
class Signal:
    """The engine's reading of one event (slots: one for every event of a window)."""

    role: Role
    cause: str
    weight: float  # evidence weight, from severity
    interrupts: bool  # does this event alone end a running job


_WAITING = Signal("symptom", "nccl_watchdog", 0.0, False)
_FAILED = Signal("symptom", "nccl_watchdog", 0.0, True)
_LIFECYCLE = Signal("lifecycle", "unknown", 0.0, False)


def _severity(event: dict[str, Any]) -> str:
    return event.get("severity") or "error"


def classify(event: dict[str, Any]) -> Signal:
    """Classify one event (a stored envelope dict)."""
    kind = event["kind"]
    attrs = event.get("attrs") or {}
    if kind in SYMPTOM_KINDS:
        # A rank's own exception (a traceback's last line, SPEC §8 training-process lines)
        # is a symptom that names its root: the cause the catalogue gave it.
        cause = attrs.get("cause") if kind == "job_fail" and attrs.get("role") == "root" else None
        if attrs.get("event") == "watchdog_cuda_error":  # the rank's own GPU work failed, not a wait
            cause = _cuda_error_cause(str(attrs.get("text") or ""))
        if cause is None:  # the common case, thousands per storm: one shared reading
            return _FAILED if kind == "job_fail" else _WAITING
        return Signal("symptom", cause, 0.0, kind == "job_fail")
    if kind in LIFECYCLE_KINDS:
        return _LIFECYCLE
    if kind == "maintenance":
        planned = bool(attrs.get("planned"))
        return Signal("maintenance", "planned_maintenance" if planned else "host_maintenance", 1.0, True)
    if kind == "host_heartbeat":
        # An agent gone quiet is silence, evidence against its host when a job stopped; on
        # its own it is no interruption (agents restart, and come back).
        lost = attrs.get("state") == "lost"
        return Signal("evidence" if lost else "ignore", "unknown", 0.5 if lost else 0.0, False)
    if kind == "train_anomaly":
        return Signal("fault", "silent_data_corruption", 0.8, True)
    if kind == "flight_recorder":  # a rank out of step: weighed as sequence lag is (evidence.sequence_lag)
        return Signal("evidence", "software_bug", 0.9 * float(attrs.get("share") or 1.0), False)
    if kind == "train_step":
        return Signal("ignore", "unknown", 0.0, False)

    entry = catalogue.code_entry(kind, attrs)
    severity = _severity(event)
    if entry is not None:
        cause, interrupts, role = entry.cause, entry.interrupts, entry.role
        if kind == "gpu_xid":  # a containment Xid's unit says HBM, SRAM or the GPU's processor
            cause = catalogue.xid_cause(attrs["xid"], attrs.get("unit")) or cause
        severity = event.get("severity") or entry.severity
    else:
        cause = attrs.get("cause") or KIND_DEFAULTS.get(kind, "unknown")
        if kind == "nic_error" and not attrs.get("cause") and attrs.get("counter") in PHYSICAL_LAYER_COUNTERS:
            cause = "network_switch_cable"
        role = attrs.get("role") or "root"
        interrupts = severity in ("critical",) or (severity == "error" and kind in _FATAL_AT_ERROR)
    if kind == "nic_link":
        interrupts = attrs.get("state") == "down"
        if attrs.get("state") == "up":
            return Signal("evidence", cause, 0.05, False)
    if kind == "pcie_aer":
        interrupts = attrs.get("severity") == "fatal"
    if kind == "gpu_ecc" and attrs.get("type") in ("sbe", "row_remap", "page_retire"):
        interrupts = False  # corrected, or a remap the GPU applies at its next reset
    if cause in APPLICATION_CAUSES:
        # XID 13/31/43 and friends are what the application did to the GPU: they point at
        # the rank's software, and open nothing by themselves (engine: unless repeated).
        return Signal("evidence", cause, SEVERITY_WEIGHT.get(severity, 0.6), False)
    weight = SEVERITY_WEIGHT.get(severity, 0.6)
    if role == "cascade":
        weight *= 0.3
    is_fault = interrupts and role == "root"
    return Signal("fault" if is_fault else "evidence", cause, weight, is_fault)


def _cuda_error_cause(text: str) -> str:
    """The cause a CUDA error a rank's NCCL watchdog reports points at."""
    lowered = text.lower()
    if "ecc" in lowered:
        return "gpu_hbm"
    if "nvlink" in lowered:
        return "nvlink"
    return "software_bug"  # an illegal address or instruction, a device-side assert: the code


# Causes that are the application's, not the hardware's, when a GPU event names them.
APPLICATION_CAUSES = frozenset({"software_bug", "dependency"})

# InfiniBand port counters of the physical layer (IBTA PortCounters: SymbolErrorCounter,
# LinkErrorRecoveryCounter, LinkDownedCounter, as sysfs names them): errors of the cable or
# transceiver between the port and its switch, not of the adapter.
PHYSICAL_LAYER_COUNTERS = frozenset({"symbol_error", "link_error_recovery", "link_downed"})

# Kinds whose error-severity events end a job even without a `critical` tag.
_FATAL_AT_ERROR = frozenset({"gpu_ecc", "nvswitch_error", "host_kernel", "host_power"})
