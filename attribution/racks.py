"""GB200 NVL72 racks: one NVLink domain of 72 GPUs on 18 hosts, switched by the rack's 18
NVSwitch chips (SPEC §3: `rack03`, `rack03/nvswitch11` with no host).

Pure pieces, used by the engine through small hooks (and `layout` by the UI's rack lanes):
- `resolve(topology, event)`: an SXid reported by a switch tray's NVOS (host `rack03-nvsw5`,
  `nvidia-nvswitch1`) is chip `rack03/nvswitch11`; a fabric manager or IMEX error on a
  compute tray (an `nvswitch_error` without a chip) is its rack's NVLink fabric, `rack03`.
- `reach(topology, hosts)`: the racks of a job's hosts, so their chips' events are evidence
  for the job's incident.
- `nvlink_domain(items, topology)`: the evidence rule. A chip failing interrupts every job
  on the rack and makes GPUs on many trays report NVLink errors (XID 144–150, 74): the
  chip, not 18 hosts, is the root. Without a chip's own error, NVLink errors on GPUs of
  several trays of one rack point at the rack's NVLink fabric. Errors on one tray only are
  that tray's own (a compute tray's fault takes out its 4 GPUs only) and are left to the
  per-component rules.
"""

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from weakref import WeakKeyDictionary

from faultgraph.attribution.evidence import Item, Vote
from faultgraph.attribution.topology import Topology

_CHIP_DEVICE = re.compile(r"nvidia-nvswitch(\d+)")
# The only events whose message the engine reads (`resolve`); the store leaves the others'
# out of the windows it hands the engine.
MESSAGE_KINDS = ("nvswitch_error",)
_NVLINK_KINDS = frozenset({"nvlink_error"})
# The chip (or the rack's fabric) is credited with every NVLink error it explains, plus this
# much per tray that reported one: it then outranks any one GPU that merely reported it.
_PER_TRAY = 1.0
_MIN_TRAYS = 2

_chips_by_tray: "WeakKeyDictionary[Topology, dict[str, dict[int, str]]]" = WeakKeyDictionary()
_layouts: "WeakKeyDictionary[Topology, list[dict[str, Any]]]" = WeakKeyDictionary()
_NUMBER = re.compile(r"(\d+)$")


def _tray_chips(topology: Topology) -> dict[str, dict[int, str]]:
    """Switch-tray host → its chips by local index (`nvidia-nvswitch<n>`), per topology."""
    found = _chips_by_tray.get(topology)
    if found is None:
        found = defaultdict(dict)
        for chip in topology.of_type("nvswitch"):
            attrs = topology.attrs(chip)
            if topology.host_of(chip) is None and "tray_host" in attrs:
                found[attrs["tray_host"]][int(attrs.get("chip", 0))] = chip
        _chips_by_tray[topology] = found = dict(found)
    return found


def rack_of(topology: Topology, component: str) -> str | None:
    """The rack a component belongs to: a rack part by its id, a tray part by its host's `rack`."""
    head = component.split("/", 1)[0]
    if topology.type_of(head) == "rack":
        return head
    host = topology.host_of(component)
    rack = topology.attrs(host).get("rack") if host else None
    return rack if isinstance(rack, str) and topology.type_of(rack) == "rack" else None


def resolve(topology: Topology | None, event: Mapping[str, Any]) -> str | None:
    """The rack part an `nvswitch_error` names, or None when it is not about a rack."""
    if topology is None or event.get("kind") not in MESSAGE_KINDS:
        return None
    attrs = event.get("attrs") or {}
    host = str(event.get("host", ""))
    chips = _tray_chips(topology).get(host)
    if chips:
        index = attrs.get("nvswitch")
        if index is None and (match := _CHIP_DEVICE.search(str(event.get("message", "")))):
            index = match.group(1)
        try:
            return chips.get(int(index)) if index is not None else None
        except (TypeError, ValueError):
            return None
    if topology.type_of(host) == "host" and attrs.get("sxid") is None:
        return rack_of(topology, host)  # fabric manager / IMEX on a compute tray: the rack's fabric
    return None


def reach(topology: Topology | None, hosts: Iterable[str]) -> set[str]:
    """The racks the hosts sit in."""
    if topology is None:
        return set()
    return {rack for host in hosts if (rack := rack_of(topology, host))}


def _is_nvlink(item: Item) -> bool:
    return item.event["kind"] in _NVLINK_KINDS or (item.event["kind"] == "gpu_xid" and item.signal.cause == "nvlink")


def nvlink_domain(items: Sequence[Item], topology: Topology | None) -> list[Vote]:
    """Blame a failing NVSwitch chip (or, lacking its error, the rack's NVLink fabric) for
    NVLink errors on GPUs of several compute trays of its rack."""
    if topology is None:
        return []
    chip_items: dict[str, list[Item]] = defaultdict(list)
    rack_faults: dict[str, list[Item]] = defaultdict(list)
    trays: dict[str, dict[str, list[Item]]] = defaultdict(lambda: defaultdict(list))
    for item in items:
        component = item.component or ""
        rack = rack_of(topology, component) if component else None
        if rack is None or item.signal.weight <= 0:
            continue
        if topology.type_of(component) == "nvswitch":
            chip_items[component].append(item)
        elif component == rack:
            rack_faults[rack].append(item)
        elif _is_nvlink(item):
            trays[rack][topology.host_of(component) or item.event["host"]].append(item)
    votes = []
    for chip, own in chip_items.items():
        rack = rack_of(topology, chip)
        reporters = trays.get(rack, {}) if rack is not None else {}
        explained = sum(i.signal.weight for tray in reporters.values() for i in tray)  # every NVLink error it explains
        score = max(i.signal.weight for i in own) + explained + _PER_TRAY * len(reporters)
        evidence = [i.id for i in own] + [i.id for tray in reporters.values() for i in tray][:48]
        votes.append(Vote(chip, score, "nvlink_domain", "nvswitch", evidence))
    for rack, reporters in trays.items():
        blamed = any(rack_of(topology, chip) == rack for chip in chip_items)
        if blamed or (len(reporters) < _MIN_TRAYS and rack not in rack_faults):
            continue
        evidence = [i.id for i in rack_faults.get(rack, [])] + [i.id for tray in reporters.values() for i in tray][:48]
        explained = sum(i.signal.weight for tray in reporters.values() for i in tray)
        votes.append(Vote(rack, 0.8 * (explained + _PER_TRAY * len(reporters)), "nvlink_domain", "nvswitch", evidence))
    return votes


def _number(component: str) -> int:
    """The trailing number of an id (`rack00/nvswitch13` → 13), for natural order."""
    match = _NUMBER.search(component)
    return int(match.group(1)) if match else 0


def layout(topology: Topology | None) -> list[dict[str, Any]]:
    """Every rack's parts as a person reads them, for the UI's rack lanes: compute trays by
    tray number (in host-name order when the topology numbers none, as discovery does),
    switch trays with their chips and the host their NVOS logs under (None when unknown),
    and the power parts."""
    if topology is None:
        return []
    found = _layouts.get(topology)
    if found is not None:
        return found
    racks = sorted(topology.of_type("rack"), key=lambda r: (_number(r), r))
    computes: dict[str, list[str]] = {rack: [] for rack in racks}
    switches: dict[str, dict[int, dict[str, Any]]] = {rack: {} for rack in racks}
    power: dict[str, list[str]] = {rack: [] for rack in racks}
    for host in topology.of_type("host"):
        if (rack := topology.attrs(host).get("rack")) in computes:
            computes[rack].append(host)
    for chip in sorted(topology.of_type("nvswitch"), key=_number):
        if topology.host_of(chip) is None and (rack := rack_of(topology, chip)) in switches:
            attrs = topology.attrs(chip)
            tray = int(attrs.get("tray", _number(chip) // 2))
            entry = switches[rack].setdefault(tray, {"tray": tray, "host": attrs.get("tray_host"), "chips": []})
            entry["chips"].append(chip)
    for part in topology.of_type("power"):
        if (rack := rack_of(topology, part)) in power:
            power[rack].append(part)

    def tray_of(host: str) -> int | None:
        tray = topology.attrs(host).get("tray")
        return tray if isinstance(tray, int) else None

    found = []
    for rack in racks:
        hosts = sorted(computes[rack], key=lambda h: (tray_of(h) is None, tray_of(h) or 0, _number(h), h))
        found.append({"id": rack,
                      "compute_trays": [{"tray": t if (t := tray_of(h)) is not None else n, "host": h}
                                        for n, h in enumerate(hosts)],
                      "switch_trays": [switches[rack][t] for t in sorted(switches[rack])],
                      "power": power[rack]})
    _layouts[topology] = found
    return found
