"""GPU and PCIe link health for fail-slow detection (SPEC §1 `gpu_perf`, `pcie_link`, …).

Where `dcgm-exporter` runs, the agent scrapes its `/metrics` (Prometheus text, read with
prometheus-client's parser); where it does not, it runs `nvidia-smi --query-gpu … --format=csv`
and reads `lspci -vv` for each GPU's and NIC's link (LnkSta against LnkCap). A sample
becomes an event only when something changed or crossed a threshold — a throttle reason
appeared or cleared, the SM clock fell below a fraction of its maximum, a link trained
below its capability, an error counter grew — never every sample. The thresholds are data:
`health.toml` beside this module, or a file of the same shape (`health_thresholds`).
"""

import csv
import io
import logging
import re
import subprocess
import tomllib
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

log = logging.getLogger("faultgraph.agent.health")
THRESHOLDS = Path(__file__).with_name("health.toml")

# NVML clock event (throttle) reason bits (nvmlClocksThrottleReasons); the ones that are not
# a slowdown (idle, application clocks, sync boost, display) are left out on purpose.
THROTTLE_BITS = {0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x20: "sw_thermal", 0x40: "hw_thermal", 0x80: "hw_power_brake"}
# dcgm-exporter's DCGM_EXP_CLOCK_EVENTS_COUNT label values → SPEC names
CLOCK_EVENTS = {"power_cap": "sw_power_cap", "hw_slowdown": "hw_slowdown", "sw_thermal": "sw_thermal",
                "hw_thermal": "hw_thermal", "hw_power_brake": "hw_power_brake"}
# DCGM field → sample attribute
DCGM_FIELDS = {
    "DCGM_FI_DEV_SM_CLOCK": "sm_clock_mhz", "DCGM_FI_DEV_MAX_SM_CLOCK": "max_sm_clock_mhz",
    "DCGM_FI_DEV_POWER_USAGE": "power_w", "DCGM_FI_DEV_GPU_TEMP": "temp_c", "DCGM_FI_DEV_GPU_UTIL": "util",
    "DCGM_FI_DEV_XID_ERRORS": "xid", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "pcie_replay",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": "ecc_sbe", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": "ecc_dbe",
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": "nvlink_crc", "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": "nvlink_replay",
    "DCGM_FI_DEV_PCIE_LINK_GEN": "pcie_gen", "DCGM_FI_DEV_PCIE_LINK_WIDTH": "width",
}
THROTTLE_FIELDS = ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS")
# PCIe generation → GT/s per lane
GEN_SPEED = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
NVIDIA_SMI_QUERY = ("index,pci.bus_id,clocks.sm,clocks.max.sm,power.draw,temperature.gpu,utilization.gpu,"
                    "clocks_throttle_reasons.active,pcie.link.gen.current,pcie.link.gen.max,"
                    "pcie.link.width.current,pcie.link.width.max")


@dataclass
class GpuSample:
    """One GPU's readings at one moment; what a source does not give stays None."""

    gpu: str  # local index
    pci: str | None = None
    values: dict[str, float] = field(default_factory=dict)
    throttle: set[str] = field(default_factory=set)


def _pci(value: str | None) -> str | None:
    """`00000000:1A:00.0` (NVML's 8-digit domain) → `0000:1a:00.0`."""
    if not value:
        return None
    match = re.search(r"([0-9A-Fa-f]{4,8}):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})\.([0-7])", value)
    return f"{int(match.group(1), 16):04x}:{match.group(2).lower()}:{match.group(3).lower()}.{match.group(4)}" if match else None


def _bits(mask: int) -> set[str]:
    return {name for bit, name in THROTTLE_BITS.items() if mask & bit}


def parse_dcgm(text: str) -> dict[str, GpuSample]:
    """dcgm-exporter's exposition → a sample per GPU (MIG instances of one GPU fold into it)."""
    found: dict[str, GpuSample] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            gpu = sample.labels.get("gpu")
            if gpu is None:
                continue
            entry = found.setdefault(gpu, GpuSample(gpu))
            entry.pci = entry.pci or _pci(sample.labels.get("pci_bus_id"))
            name = sample.name.removesuffix("_total") if sample.name not in DCGM_FIELDS else sample.name
            if name in DCGM_FIELDS and sample.value < 2 ** 62:  # DCGM's blank values are huge sentinels
                entry.values[DCGM_FIELDS[name]] = float(sample.value)
            elif name in THROTTLE_FIELDS:
                entry.throttle |= _bits(int(sample.value))
            elif name == "DCGM_EXP_CLOCK_EVENTS_COUNT" and sample.value > 0:
                reason = CLOCK_EVENTS.get(sample.labels.get("clock_event", ""))
                if reason:
                    entry.throttle.add(reason)
    return found


def _number(text: str) -> float | None:
    match = re.match(r"\s*([-+]?\d+(?:\.\d+)?)", text)
    return float(match.group(1)) if match else None


def parse_nvidia_smi(text: str) -> dict[str, GpuSample]:
    """`nvidia-smi --query-gpu=<NVIDIA_SMI_QUERY> --format=csv` (header row with units) → samples."""
    rows = list(csv.reader(io.StringIO(text), skipinitialspace=True))
    if not rows:
        return {}
    names = [re.sub(r"\s*\[.*\]$", "", h.strip()) for h in rows[0]]
    found: dict[str, GpuSample] = {}
    for row in rows[1:]:
        if len(row) != len(names):
            continue
        cells = dict(zip(names, (c.strip() for c in row), strict=True))
        sample = GpuSample(cells.get("index", str(len(found))), _pci(cells.get("pci.bus_id")))
        for column, attr in (("clocks.current.sm", "sm_clock_mhz"), ("clocks.sm", "sm_clock_mhz"),
                             ("clocks.max.sm", "max_sm_clock_mhz"), ("power.draw", "power_w"),
                             ("temperature.gpu", "temp_c"), ("utilization.gpu", "util"),
                             ("pcie.link.gen.current", "pcie_gen"), ("pcie.link.gen.max", "pcie_gen_max"),
                             ("pcie.link.width.current", "width"), ("pcie.link.width.max", "max_width")):
            value = _number(cells.get(column, ""))
            if value is not None:
                sample.values[attr] = value
        mask = cells.get("clocks_throttle_reasons.active") or cells.get("clocks_event_reasons.active")
        if mask and mask.lower().startswith("0x"):
            sample.throttle = _bits(int(mask, 16))
        found[sample.gpu] = sample
    return found


@dataclass(frozen=True)
class Link:
    """A PCIe device's negotiated link against its capability (from `lspci -vv`)."""

    bdf: str
    device: str
    speed_gts: float
    width: int
    max_speed_gts: float
    max_width: int

    @property
    def degraded(self) -> bool:
        return self.width < self.max_width or self.speed_gts < self.max_speed_gts


_DEVICE = re.compile(r"^((?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) (.+)$")
_LINK = re.compile(r"Speed ([\d.]+)GT/s[^,]*, Width x(\d+)")
# Device classes whose links carry training traffic (bridges may run below their cap by design).
_CLASSES = ("3D controller", "VGA compatible controller", "Infiniband controller", "Ethernet controller")


def parse_lspci(text: str) -> list[Link]:
    """Links of the GPUs and NICs in `lspci -vv` (or `-D -vv`) output."""
    links, current = [], None
    cap: tuple[float, int] | None = None
    for line in text.splitlines():
        header = _DEVICE.match(line)
        if header:
            current = header.groups() if any(c in header.group(2) for c in _CLASSES) else None
            cap = None
            continue
        if current is None:
            continue
        stripped = line.strip()
        match = _LINK.search(stripped)
        if stripped.startswith("LnkCap:") and match:
            cap = (float(match.group(1)), int(match.group(2)))
        elif stripped.startswith("LnkSta:") and match and cap:
            bdf = current[0] if current[0].count(":") == 2 else f"0000:{current[0]}"
            links.append(Link(bdf.lower(), current[1], float(match.group(1)), int(match.group(2)), *cap))
            current = None
    return links


def load_thresholds(path: Path | None = None) -> dict[str, Any]:
    """The thresholds file (TOML); ValueError names a problem."""
    source = path or THRESHOLDS
    try:
        return tomllib.loads(source.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"health thresholds {source}: {exc}") from None


class HealthWatch:
    """Turns successive samples into events: changes and threshold crossings only."""

    def __init__(self, host: str, thresholds: dict[str, Any]) -> None:
        self.host = host
        self.gpu = thresholds.get("gpu", {})
        self.counters = thresholds.get("counters", {})
        self._state: dict[str, tuple] = {}  # gpu → last reported (throttle, slow clock, hot)
        self._links: dict[str, bool] = {}
        self._counts: dict[tuple[str, str], float] = {}  # last reported counter values

    def gpus(self, samples: dict[str, GpuSample], at: datetime) -> list[dict]:
        events = []
        for gpu, sample in sorted(samples.items()):
            v = sample.values
            clock, peak = v.get("sm_clock_mhz"), v.get("max_sm_clock_mhz")
            slow = bool(clock and peak and clock < (1 - self.gpu.get("clock_drop", 0.15)) * peak and sample.throttle)
            hot = v.get("temp_c", 0) >= self.gpu.get("temp_c", 87)
            state = (tuple(sorted(sample.throttle)), slow, hot)
            if self._state.get(gpu, ((), False, False)) != state:
                attrs: dict[str, Any] = {"throttle": sorted(sample.throttle), "gpu": int(gpu) if gpu.isdigit() else gpu,
                         **{k: v[k] for k in ("sm_clock_mhz", "max_sm_clock_mhz", "power_w", "util", "temp_c") if k in v}}
                if sample.pci:
                    attrs["pci"] = sample.pci
                events.append(self._event(at, "gpu_perf", attrs, "warning" if sample.throttle - {"sw_power_cap"} else "info"))
                self._state[gpu] = state
            if "width" in v and "max_width" in v and "pcie_gen" in v and "pcie_gen_max" in v:
                events += self.links([Link(sample.pci or f"gpu{gpu}", "gpu", GEN_SPEED.get(int(v["pcie_gen"]), 0.0),
                                           int(v["width"]), GEN_SPEED.get(int(v["pcie_gen_max"]), 0.0), int(v["max_width"]))], at)
            events += self._grown(gpu, sample, at)
        return events

    def links(self, links: list[Link], at: datetime) -> list[dict]:
        events = []
        for link in links:
            if self._links.get(link.bdf, False) != link.degraded:
                self._links[link.bdf] = link.degraded
                events.append(self._event(at, "pcie_link", {
                    "bdf": link.bdf, "width": link.width, "max_width": link.max_width, "speed_gts": link.speed_gts,
                    "max_speed_gts": link.max_speed_gts}, "warning" if link.degraded else "info"))
        return events

    def _grown(self, gpu: str, sample: GpuSample, at: datetime) -> list[dict]:
        """Error counters that grew by at least their threshold since last reported."""
        events = []
        for name, step in self.counters.items():
            value = sample.values.get(name)
            if value is None:
                continue
            key = (gpu, name)
            last = self._counts.setdefault(key, value)  # the first reading is the baseline
            if value - last >= step:
                self._counts[key] = value
                counter: tuple[str, dict[str, Any]] = {
                    "ecc_sbe": ("gpu_ecc", {"type": "sbe"}), "ecc_dbe": ("gpu_ecc", {"type": "dbe"}),
                    "nvlink_crc": ("nvlink_error", {"counter": "crc_flit"}), "nvlink_replay": ("nvlink_error", {"counter": "replay"}),
                    "pcie_replay": ("pcie_aer", {"severity": "corrected", "text": "PCIe replay counter grew"}),
                }[name]
                kind, attrs = counter
                attrs |= {"count": int(value - last)} if kind != "pcie_aer" else {"bdf": sample.pci or ""}
                events.append(self._event(at, kind, {**attrs, "gpu": int(gpu) if gpu.isdigit() else gpu},
                                          "error" if name == "ecc_dbe" else "warning"))
            elif value < last:  # reset (reboot, driver reload): new baseline
                self._counts[key] = value
        return events

    def _event(self, at: datetime, kind: str, attrs: dict, severity: str) -> dict:
        return {"time": at, "host": self.host, "kind": kind, "severity": severity, "attrs": {**attrs, "source": "health"}}


class HealthCollector:
    """Reads dcgm-exporter, else nvidia-smi and lspci; hands samples to a `HealthWatch`."""

    def __init__(self, watch: HealthWatch, *, dcgm_url: str | None, timeout_s: float = 5.0) -> None:
        if dcgm_url and not dcgm_url.startswith(("http://", "https://")):
            raise ValueError(f"dcgm-exporter URL {dcgm_url!r}: expected http:// or https://")
        self.watch, self.dcgm_url, self.timeout_s = watch, dcgm_url, timeout_s

    def poll(self, at: datetime | None = None) -> list[dict]:
        """One round; a source that fails is skipped (logged), never raised."""
        at = at or datetime.now(UTC)
        samples = self._dcgm()
        if samples is None:
            samples = self._run(["nvidia-smi", f"--query-gpu={NVIDIA_SMI_QUERY}", "--format=csv"], parse_nvidia_smi) or {}
        events = self.watch.gpus(samples, at)
        links = self._run(["lspci", "-D", "-vv"], parse_lspci)
        return events + self.watch.links(links or [], at)

    def _dcgm(self) -> dict[str, GpuSample] | None:
        if not self.dcgm_url:
            return None
        try:
            # the scheme is http(s), checked in __init__ (bandit B310)
            with urllib.request.urlopen(self.dcgm_url, timeout=self.timeout_s) as answer:  # nosec B310
                return parse_dcgm(answer.read().decode("utf-8", "replace"))
        except (OSError, ValueError) as exc:
            log.debug("dcgm-exporter at %s: %s; falling back to nvidia-smi", self.dcgm_url, exc)
            return None

    def _run(self, command: list[str], parse: Any) -> Any:
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=self.timeout_s, check=True)
        except (OSError, subprocess.SubprocessError) as exc:
            log.debug("%s: %s", command[0], exc)
            return None
        return parse(done.stdout)
