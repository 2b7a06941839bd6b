"""The XID, SXid and log-pattern catalogues (`ingest/catalogue/*.toml`), loaded once.

Detection rules are data: this module only reads and checks them, so adding a pattern is
an edit to a TOML file plus a test line. Every cause named anywhere must be a SPEC §6
cause (`causes.py`, next to this module); a catalogue that names another fails loudly at import.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from faultgraph.ingest.causes import CAUSE_CATEGORY

CATALOGUE_DIR = Path(__file__).with_name("catalogue")
SEVERITIES = ("info", "warning", "error", "critical")
ACTIONS = ("evict", "restart", "replace", "rollback", "none")
ROLES = ("root", "cascade")
_WORD = re.compile(r"[A-Za-z0-9_]+")
# The SPEC §1 kinds a log line can yield (job_*, checkpoint_*, maintenance and
# host_heartbeat come from the service and its clients, not from log text; train_anomaly
# comes from both: a trainer's own NaN/Inf warnings are log lines).
LOG_KINDS = (
    "gpu_xid", "gpu_ecc", "gpu_thermal", "nvlink_error", "nvswitch_error", "nic_link",
    "nic_error", "pcie_aer", "nccl_timeout", "nccl_error", "host_mce", "host_mem_ecc",
    "host_kernel", "host_oom", "host_disk", "host_power", "train_anomaly",
    "job_fail",  # a rank's own exception: its traceback's last line
)


@dataclass(frozen=True)
class CodeEntry:
    """One XID or SXid code: what it is and what it means for a job."""

    code: int
    name: str
    symbol: str
    cause: str
    severity: str
    interrupts: bool
    action: str
    role: str
    source: str

    @property
    def category(self) -> str:
        return CAUSE_CATEGORY[self.cause]


@dataclass(frozen=True)
class Rule:
    """One log pattern: words one of which must appear in the line, then a regex."""

    id: str
    kind: str
    keywords: tuple[str, ...]
    regex: re.Pattern[str]
    severity: str
    cause: str
    role: str
    source: str
    example: str
    attrs: dict[str, Any] = field(default_factory=dict)
    codes: str | None = None  # "xid" / "sxid": severity, cause and role come from that table
    component: str | None = None  # template over host and attrs, e.g. "{host}/{device}"
    derive: dict[str, tuple[str, str]] = field(default_factory=dict)  # attr -> (map, from attr)
    severity_from: tuple[str, str] | None = None  # (map, attr): the line's own word sets severity
    # Only a line a launcher's prefix ties to a rank: an application's own message is a
    # fault of that rank when the launcher says whose it is, noise otherwise.
    needs_rank: bool = False


@dataclass(frozen=True)
class Extractor:
    """A secondary regex run on the message of events of some kinds, adding attrs.

    `requires`, when given, is a part of every match that starts with a literal: re finds
    it by scanning for that character, where a regex that starts with a class (a host
    name) is tried at every position of the line."""

    kinds: frozenset[str]
    regex: re.Pattern[str]
    requires: re.Pattern[str] | None = None

    def search(self, message: str) -> re.Match[str] | None:
        if self.requires is not None and self.requires.search(message) is None:
            return None
        return self.regex.search(message)


@dataclass(frozen=True)
class Nvlink5Row:
    """One row of NVIDIA's "XID 144-150 Decode" sheet (`catalogue/nvlink5.toml`)."""

    xid: int
    units: frozenset[str]
    pattern_v1: str
    pattern_v2: str
    error_status: int
    resolution: str
    investigatory: str
    severity: str  # NVIDIA's word: Fatal, Link Fatal, Non-fatal (footnote marks kept)
    hw_sw: str

    def matches(self, unit: str, intrinfo: int, error_status: int) -> bool:
        return (unit in self.units and error_status == self.error_status
                and (_bits_match(self.pattern_v2, intrinfo) or _bits_match(self.pattern_v1, intrinfo)))


def _bits_match(pattern: str, value: int) -> bool:
    """A 32-character pattern, most significant bit first: "1"/"0" fixed, "-" any."""
    if len(pattern) != 32:
        return False
    for i, c in enumerate(pattern):
        if c != "-" and ((value >> (31 - i)) & 1) != (c == "1"):
            return False
    return True


@dataclass(frozen=True)
class Catalogue:
    xid: dict[int, CodeEntry]
    sxid: dict[int, CodeEntry]
    sxid_units: dict[int, dict[str, str]]
    containment_units: dict[str, str]
    rules: tuple[Rule, ...]
    extractors: tuple[Extractor, ...]
    maps: dict[str, dict[str, str]]
    int_attrs: frozenset[str]
    float_attrs: frozenset[str]
    null_values: frozenset[str]
    nvlink5: tuple[Nvlink5Row, ...] = ()
    fm_codes: dict[int, dict[str, str]] = field(default_factory=dict)


def _check(value: str, allowed: tuple[str, ...], what: str, where: str) -> str:
    if value not in allowed:
        raise ValueError(f"{where}: {what} {value!r} is not one of {', '.join(allowed)}")
    return value


def _check_cause(cause: str, where: str) -> str:
    if cause not in CAUSE_CATEGORY:
        raise ValueError(f"{where}: cause {cause!r} is not a SPEC §6 cause")
    return cause


def _codes(path: Path, table: str) -> tuple[dict[int, CodeEntry], dict[str, Any]]:
    data = tomllib.loads(path.read_text())
    entries: dict[int, CodeEntry] = {}
    for key, e in data[table].items():
        where = f"{path.name} {table} {key}"
        entries[int(key)] = CodeEntry(
            code=int(key), name=e["name"], symbol=e["symbol"],
            cause=_check_cause(e["cause"], where),
            severity=_check(e["severity"], SEVERITIES, "severity", where),
            interrupts=bool(e["interrupts"]),
            action=_check(e["action"], ACTIONS, "action", where),
            role=_check(e["role"], ROLES, "role", where),
            source=e["source"],
        )
        if e["source"] not in data["sources"]:
            raise ValueError(f"{where}: source {e['source']!r} is not in [sources]")
    return entries, data


def _compile(pattern: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{where}: bad regex: {exc}") from exc


def _rules(data: dict[str, Any], maps: dict[str, dict[str, str]]) -> tuple[Rule, ...]:
    rules = []
    seen: set[str] = set()
    for r in data["rule"]:
        where = f"patterns.toml rule {r.get('id')!r}"
        if r["id"] in seen:
            raise ValueError(f"{where}: duplicate id")
        seen.add(r["id"])
        regex = _compile(r["regex"], where)
        keywords = (r["keyword"],) if isinstance(r["keyword"], str) else tuple(r["keyword"])
        for keyword in keywords:
            if not _WORD.fullmatch(keyword):
                raise ValueError(f"{where}: keyword {keyword!r} is not a single word")
        derive = {attr: (spec["map"], spec["from"]) for attr, spec in r.get("derive", {}).items()}
        severity_from = None
        if "severity_from" in r:
            severity_from = (r["severity_from"]["map"], r["severity_from"]["from"])
        for table, _ in [*derive.values(), *([severity_from] if severity_from else [])]:
            if table not in maps:
                raise ValueError(f"{where}: unknown map {table!r}")
        if severity_from:
            for sev in maps[severity_from[0]].values():
                _check(sev, SEVERITIES, "severity", f"map {severity_from[0]}")
        rules.append(Rule(
            id=r["id"], kind=_check(r["kind"], LOG_KINDS, "kind", where), keywords=keywords,
            regex=regex, severity=_check(r["severity"], SEVERITIES, "severity", where),
            cause=_check_cause(r["cause"], where), role=_check(r["role"], ROLES, "role", where),
            source=r["source"], example=r["example"], attrs=dict(r.get("attrs", {})),
            codes=r.get("codes"),
            component=r.get("component"), derive=derive, severity_from=severity_from,
            needs_rank=bool(r.get("needs_rank", False)),
        ))
    return tuple(rules)


@cache
def load() -> Catalogue:
    """The shipped catalogue, read and validated once; callers may call this freely."""
    return load_dir(CATALOGUE_DIR)


def load_dir(directory: Path) -> Catalogue:
    """Read and validate xid.toml, sxid.toml, nvlink5.toml, fabric_manager.toml and
    patterns.toml from `directory`.

    Raises ValueError naming the file and entry of the first bad value (a cause not in
    SPEC §6, an unknown kind, severity, action, map or source, a bad regex).
    """
    xid, xid_data = _codes(directory / "xid.toml", "xid")
    containment = dict(xid_data["containment_units"])
    for name, cause in containment.items():
        _check_cause(cause, f"xid.toml containment_units {name!r}")
    sxid, sxid_data = _codes(directory / "sxid.toml", "sxid")
    units = {int(k): v for k, v in sxid_data["units"].items()}
    for k, unit in units.items():
        _check_cause(unit["cause"], f"sxid.toml units {k}")
    data = tomllib.loads((directory / "patterns.toml").read_text())
    maps = {name: dict(m) for name, m in data.get("maps", {}).items()}
    extractors = tuple(
        Extractor(kinds=frozenset(x["kinds"]),
                  regex=_compile(x["regex"], f"patterns.toml extract {i}"),
                  requires=_compile(x["requires"], f"patterns.toml extract {i} requires") if "requires" in x else None)
        for i, x in enumerate(data.get("extract", []))
    )
    nvlink5 = tuple(
        Nvlink5Row(xid=r["xid"], units=frozenset({r["unit"], *r["unit"].split("/")}),
                   pattern_v1=r["pattern_v1"], pattern_v2=r["pattern_v2"],
                   error_status=r["error_status"], resolution=r["resolution"],
                   investigatory=r["investigatory"], severity=r["severity"], hw_sw=r["hw_sw"])
        for r in tomllib.loads((directory / "nvlink5.toml").read_text())["row"]
    )
    fm_codes = {int(k): dict(v) for k, v in
                tomllib.loads((directory / "fabric_manager.toml").read_text())["code"].items()}
    for k, entry in fm_codes.items():
        _check_cause(entry["cause"], f"fabric_manager.toml code {k}")
        _check(entry["severity"], SEVERITIES, "severity", f"fabric_manager.toml code {k}")
    return Catalogue(
        xid=xid, sxid=sxid, sxid_units=units, containment_units=containment, rules=_rules(data, maps), extractors=extractors,
        maps=maps, int_attrs=frozenset(data["types"]["int"]), float_attrs=frozenset(data["types"]["float"]),
        null_values=frozenset(data["types"]["null"]), nvlink5=nvlink5, fm_codes=fm_codes,
    )


# Kinds whose events name a catalogued code, and the attr that holds it.
CODED_KINDS = {"gpu_xid": "xid", "nvswitch_error": "sxid"}


def code_entry(kind: str, attrs: Mapping[str, Any]) -> CodeEntry | None:
    """The catalogue entry of the Xid or SXid an event's attrs name, or None."""
    name = CODED_KINDS.get(kind)
    code = attrs.get(name) if name else None
    if not isinstance(code, int) or isinstance(code, bool):
        return None
    return xid(code) if kind == "gpu_xid" else sxid(code)


def xid(code: int) -> CodeEntry | None:
    """The catalogue entry for an XID code, or None for a code NVIDIA has not documented."""
    return load().xid.get(code)


# The error-containment Xids, whose line names the unit the error was in.
CONTAINMENT_XIDS = frozenset({94, 95})


def xid_cause(code: int, unit: str | None = None) -> str | None:
    """The cause of an Xid: for a containment Xid its unit's, when the unit is listed, else
    the code's own; None for a code NVIDIA has not documented."""
    entry = xid(code)
    if entry is None:
        return None
    if code in CONTAINMENT_XIDS and unit:
        return load().containment_units.get(unit, entry.cause)
    return entry.cause


def nvlink5(xid: int, unit: str, intrinfo: int, error_status: int) -> Nvlink5Row | None:
    """NVIDIA's decode of an NVLink5 Xid (144-150) line, or None when no row fits."""
    for row in load().nvlink5:
        if row.xid == xid and row.matches(unit, intrinfo, error_status):
            return row
    return None


def fm_return(code: int | str) -> dict[str, str] | None:
    """A Fabric Manager return code (`-10` or `FM_ST_NVLINK_ERROR`): its name, meaning,
    cause and severity, or None for a code the table does not list."""
    codes = load().fm_codes
    if isinstance(code, str):
        return next((dict(v, code=str(k)) for k, v in codes.items() if v["name"] == code), None)
    entry = codes.get(code)
    return dict(entry, code=str(code)) if entry else None


def sxid(code: int) -> CodeEntry | None:
    """The catalogue entry for an NVSwitch SXid code, or None when it is not listed."""
    return load().sxid.get(code)


def sxid_cause(code: int) -> str:
    """The cause for any SXid: its own entry, else its unit's (the code's thousands)."""
    entry = sxid(code)
    if entry is not None:
        return entry.cause
    unit = load().sxid_units.get(code // 1000)
    return unit["cause"] if unit else "nvswitch"
