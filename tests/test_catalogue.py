"""The catalogues as data: complete, consistent with SPEC §6, and every rule alive."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from faultgraph.attribution.classify import classify
from faultgraph.ingest import catalogue
from faultgraph.ingest.causes import CAUSE_CATEGORY
from faultgraph.ingest.parse import parse_line
from faultgraph.service.events import service as events_service

CAT = catalogue.load()


def test_xid_catalogue_covers_the_documented_codes() -> None:
    assert len(CAT.xid) >= 60
    # NVIDIA's current catalogue (sheet "Catalog"), 1..172 without gaps, incl. Blackwell 162-172
    assert set(range(1, 173)) <= set(CAT.xid)
    for entry in CAT.xid.values():
        assert entry.cause in CAUSE_CATEGORY
        assert entry.severity in catalogue.SEVERITIES and entry.action in catalogue.ACTIONS
        assert entry.name and entry.symbol and entry.source in ("nvidia-xid", "nvidia-xid-catalog")
    assert catalogue.xid(171).cause == "gpu_hbm" and catalogue.xid(171).role == "cascade"  # type: ignore[union-attr]
    assert catalogue.xid(172).cause == "gpu_sram"  # type: ignore[union-attr]


def test_nvlink5_decode_table() -> None:
    """NVIDIA's "XID 144-150 Decode" sheet: every row's unit, patterns and severity usable."""
    assert {row.xid for row in CAT.nvlink5} == set(range(144, 151))
    for row in CAT.nvlink5:
        assert len(row.pattern_v1) == 32 and len(row.pattern_v2) == 32
        assert row.severity.split("*")[0].rstrip("?") in ("Fatal", "Link Fatal", "Non-fatal")


@pytest.mark.parametrize(("line", "severity", "sub_code", "decoded", "resolution"), [
    # leptonai/gpud components/accelerator/nvidia/xid/kmsg_test.go
    ("[171167.620236] NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 "
     "(0x021425c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
     "critical", 33, "Link Fatal", "RESET_GPU"),
    # leptonai/gpud components/accelerator/nvidia/xid/kmsg_extended_test.go
    ("NVRM: Xid (PCI:0008:01:00): 145, RLW_SRC_TRACK Nonfatal XC1 i0 Link 12 (0x040988e2 "
     "0x00000008 0x00000000 0x00000000 0x00000000 0x00000000)",
     "warning", 0, "Non-fatal", "XID_154_EVAL"),
    # NVIDIA/NVSentinel syslog-health-monitor pkg/xid/xid_handler_test.go: an R575+ driver's
    # intrinfo matches the V2 pattern of a RESET_GPU row although the line says Nonfatal
    ("NVRM: Xid (PCI:0000:00:08.0): 145, RLW_REMAP Nonfatal XC1 i0 Link 10 (0x00000004 "
     "0x00000040 0x00000000 0x00000000 0x00000000 0x00000000)",
     "critical", 0, "Fatal", "RESET_GPU"),
])
def test_nvlink5_lines_are_decoded(line: str, severity: str, sub_code: int, decoded: str,
                                   resolution: str) -> None:
    event = parse_line(line, host="node0042")
    assert event is not None and event["severity"] == severity
    attrs = event["attrs"]
    assert (attrs["sub_code"], attrs["nvlink5_severity"], attrs["resolution"]) == (
        sub_code, decoded, resolution)


def test_nvlink5_line_without_a_matching_row_keeps_its_own_word() -> None:
    # leptonai/gpud kmsg_extended_test.go: SAW_MVB with error status 0x80000000 has no row
    event = parse_line("NVRM: Xid (PCI:0000:04:00): 144, SAW_MVB Nonfatal XC0 i0 Link 00 "
                       "(0x00000003 0x80000000 0x00000000 0x00000000)", host="node0042")
    assert event is not None and event["severity"] == "warning"
    assert "resolution" not in event["attrs"] and event["attrs"]["sub_code"] == 0


@pytest.mark.parametrize(("code", "cause", "category", "interrupts", "action"), [
    (48, "gpu_hbm", "gpu", True, "evict"),
    (79, "gpu_fell_off_bus", "gpu", True, "evict"),
    (74, "nvlink", "gpu", True, "evict"),
    (149, "nvlink", "gpu", True, "evict"),
    (119, "gpu_system_processor", "gpu", True, "evict"),
    (13, "software_bug", "software", True, "restart"),
    (63, "gpu_hbm", "gpu", False, "none"),
    (54, "power_supply", "host", True, "evict"),
])
def test_key_xid_mappings(code: int, cause: str, category: str, interrupts: bool, action: str) -> None:
    entry = catalogue.xid(code)
    assert entry is not None
    assert (entry.cause, entry.category, entry.interrupts, entry.action) == (
        cause, category, interrupts, action)


# The driver's own example lines (open-gpu-kernel-modules, kern_gpu_error_cont_ga100.c at
# df1c9a3de2be4b130f4fc7680f7198193d8ac6ad, the comment of _gpuGenerateErrorLog), and its
# DRAM-located form filled in from the format string beside them ("%s: %s (0x%x, 0x%x).
# physAddr: 0x%08llx RST: %s, D-RST: %s"), marked as built from that format.
@pytest.mark.parametrize(("line", "unit", "cause"), [
    ("NVRM: Xid (PCI:0000:01:00): 95, pid=7062, Uncontained: LTC TAG (0x2, 0x1). RST: Yes, D-RST: No",
     "LTC TAG", "gpu_sram"),
    ("NVRM: Xid (PCI:0000:01:00): 94, pid=7062, Contained: CE User Channel (0x9). RST: No, D-RST: No",
     "CE User Channel", "gpu_hbm"),  # a copy engine consumed the bad data: the code's own cause
    ("NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No",
     "CE User Channel", "gpu_hbm"),  # under MIG: the GPU instance is named too
    # built from the DRAM format string:
    ("NVRM: Xid (PCI:0000:01:00): 95, pid=7062, Uncontained: FB DED (0x3, 0x1). physAddr: 0x1f2e3d4c RST: Yes, D-RST: No",
     "FB DED", "gpu_hbm"),
])
def test_containment_xids_take_the_cause_of_their_unit(line: str, unit: str, cause: str) -> None:
    """Llama 3 counts HBM and SRAM apart: Xid 94/95 say which by the unit they name."""
    event = parse_line(line, host="node0001")
    assert event is not None and event["kind"] == "gpu_xid" and event["attrs"]["pci"] == "0000:01:00"
    assert event["attrs"]["unit"] == unit and event["attrs"]["cause"] == cause
    assert classify(event | {"id": "e1"}).cause == cause  # the engine reads the unit as the parser does
    assert ("GPU-I" in line) == (event["attrs"].get("gpu_instance") == 5)
    assert catalogue.xid_cause(95, "SM") == "gpu_sram" and catalogue.xid_cause(95, "GSP") == "gpu_system_processor"
    assert catalogue.xid_cause(48, "LTC TAG") == "gpu_hbm"  # only the containment codes name a unit


# A failed Fabric Manager start, as journald printed it (data-infra/cube-studio#29), and a
# clean stop (NVIDIA/nvtrust#128), which is no fault.
@pytest.mark.parametrize(("line", "kind"), [
    ('Sep 18 03:19:01 ubuntu2404 nvidia-fabricmanager-start.sh[4753]: "/usr/bin/nv-fabricmanager -c '
     '/usr/share/nvidia/nvswitch/fabricmanager.cfg" failed! Exit code: 1', "nvswitch_error"),
    ("Sep 18 03:19:01 ubuntu2404 systemd[1]: nvidia-fabricmanager.service: Control process exited, "
     "code=exited, status=1/FAILURE", "nvswitch_error"),
    ('Jan 05 15:32:16 TENCENT64 nvidia-fabricmanager-start.sh[20411]: Stopped "Nvidia Fabric Manager"', None),
])
def test_a_failed_fabric_manager_is_a_dependency_of_the_host(line: str, kind: str | None) -> None:
    event = parse_line(line, host="node0001")
    assert (event and event["kind"]) == kind
    if event:
        assert event["attrs"]["cause"] == "dependency" and event["severity"] == "critical"


def test_consequence_xids_are_cascades() -> None:
    for code in (45, 154):
        entry = catalogue.xid(code)
        assert entry is not None and entry.role == "cascade"
    assert catalogue.xid(79).role == "root"  # type: ignore[union-attr]
    assert catalogue.xid(10_000) is None


def test_sxid_catalogue() -> None:
    for code in (12028, 20009, 24007, 26008, 28006):  # those in the shared corpus
        assert catalogue.sxid(code) is not None
    # Fabric Manager guide appendix D codes (via gpud's table): DBEs fatal, SBEs low weight
    assert catalogue.sxid(19047).severity == "critical"  # type: ignore[union-attr]
    sbe = catalogue.sxid(11012)
    assert sbe is not None and sbe.severity == "warning" and not sbe.interrupts
    assert catalogue.sxid_cause(20009) == "nvlink"
    assert catalogue.sxid_cause(26001) == "nvswitch"
    assert catalogue.sxid_cause(19999) == "nvlink"  # not listed: its unit (NVLTLC) decides
    assert catalogue.sxid_cause(99999) == "nvswitch"
    for unit in CAT.sxid_units.values():
        assert unit["cause"] in CAUSE_CATEGORY


def test_fabric_manager_return_codes() -> None:
    """fmReturn_t from the FM SDK header: every documented code 0..-10, by number or name."""
    assert set(CAT.fm_codes) == set(range(-10, 1))
    nvlink = catalogue.fm_return(-10)
    assert nvlink is not None and nvlink["name"] == "FM_ST_NVLINK_ERROR" and nvlink["cause"] == "nvlink"
    assert catalogue.fm_return("FM_ST_TIMEOUT")["code"] == "-5"  # type: ignore[index]
    assert catalogue.fm_return(-99) is None and catalogue.fm_return("FM_ST_NOPE") is None


def test_rules_are_well_formed() -> None:
    ids = [r.id for r in CAT.rules]
    assert len(ids) == len(set(ids))
    for rule in CAT.rules:
        assert rule.kind in catalogue.LOG_KINDS and rule.cause in CAUSE_CATEGORY
        assert rule.source and rule.example
        # an unanchored leading wildcard rescans the rest of the line at every position: a
        # long line with many near-misses would cost quadratic time (tests/bench/parse.py
        # measures the worst case); anchored at ^ it runs once
        pattern = rule.regex.pattern.removeprefix("(?s)")
        assert not pattern.startswith(("(?:.*", ".*", "(?:.+", ".+")), rule.id


@pytest.mark.parametrize("rule", CAT.rules, ids=lambda r: r.id)
def test_every_rule_parses_its_own_example(rule: catalogue.Rule) -> None:
    """Each rule is reachable: no earlier rule shadows it on its own example line; and what
    it makes is an event the server accepts (three Fabric Manager rules once were not)."""
    event = parse_line(rule.example, host="node0042")
    assert event is not None, f"{rule.id}: example matched nothing"
    assert event["attrs"]["rule"] == rule.id
    assert event["kind"] == rule.kind
    assert not [name for name in event["attrs"] if name.endswith("_")], event["attrs"]  # a branch's `x_` is `x`
    body = orjson.dumps([event | {"time": event["time"].isoformat()}])
    assert events_service.decode(body, content_type="application/json", max_events=1).rejected == []


def test_an_extractors_requires_is_part_of_every_match() -> None:
    """`requires` only saves time: in the message of every real line (both corpora) and
    rule example that parses to one of its kinds, an extractor whose regex matches has its
    `requires` matching too, so skipping on a miss loses nothing."""
    data = Path(__file__).parent / "data"
    lines = [rule.example for rule in CAT.rules]
    for corpus in (data / "reference" / "real-logs.jsonl", data / "long-tail.jsonl"):
        lines += [orjson.loads(row)["line"] for row in corpus.read_text().splitlines() if row.strip()]
    guarded = [x for x in CAT.extractors if x.requires is not None]
    assert guarded
    matched = 0
    for line in lines:
        event = parse_line(line, host="node0042")
        for extractor in guarded:
            if event is not None and event["kind"] in extractor.kinds and extractor.regex.search(event["message"]):
                assert extractor.requires is not None and extractor.requires.search(event["message"]), line
                matched += 1
    assert matched >= 10


def _copy(tmp_path: Path) -> Path:
    for name in ("xid.toml", "sxid.toml", "nvlink5.toml", "fabric_manager.toml", "patterns.toml"):
        shutil.copy(catalogue.CATALOGUE_DIR / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize(("name", "old", "new", "message"), [
    ("xid.toml", 'cause = "gpu_fell_off_bus"', 'cause = "cosmic_rays"', "not a SPEC §6 cause"),
    ("xid.toml", 'action = "evict"', 'action = "pray"', "action"),
    ("xid.toml", '"SM" = "gpu_sram"', '"SM" = "gpu_gremlins"', "not a SPEC §6 cause"),
    ("sxid.toml", 'cause = "nvlink"}', 'cause = "gremlins"}', "not a SPEC §6 cause"),
    ("patterns.toml", 'cause = "ssd"', 'cause = "disk"', "not a SPEC §6 cause"),
    ("patterns.toml", 'kind = "host_oom"', 'kind = "host_sadness"', "kind"),
    ("patterns.toml", 'keyword = "EDAC"', 'keyword = "EDAC MC"', "single word"),
    ("patterns.toml", 'map = "edac_type"', 'map = "nope"', "unknown map"),
])
def test_bad_catalogue_is_rejected(tmp_path: Path, name: str, old: str, new: str, message: str) -> None:
    directory = _copy(tmp_path)
    text = (directory / name).read_text()
    assert old in text
    (directory / name).write_text(text.replace(old, new, 1))
    with pytest.raises(ValueError, match=message):
        catalogue.load_dir(directory)
