"""Parsers for the outputs of the tools operators already run, one pure function per tool.

Each takes the text (or JSON) a command printed and answers plain data; each raises
ValueError, naming what it expected, on text that is not that command's output, so the
caller can say which file was unreadable and go on with the rest. Formats as real
machines print them (tests/data/discover/ holds the outputs these were written against):

- `nvidia-smi topo -m`: header of `GPU<n>` and NIC columns (`NIC<n>` with a `NIC Legend:`
  on drivers since ~520, the device names `mlx5_0` themselves before), then `CPU Affinity`,
  `NUMA Affinity`, `GPU NUMA ID` where the driver prints them; cells `X`, `NV<n>`, `PIX`,
  `PXB`, `PHB`, `NODE`, `SYS`; tabs or spaces.
- `nvidia-smi -q` (text) and `nvidia-smi -q -x` (XML): per GPU its bus id, serial, UUID,
  and on NVLink-fabric systems (GB200) the fabric's `ClusterUUID` and `CliqueId` — kept only
  when its `State` is `Completed` and `Status` `Success` (NVML: the ids are valid only then)
  and the cluster UUID is not all zeros (H100, GH200 outside a fabric).
- `ibdev2netdev`, `ibstat`, `ip -j addr`, `lspci -D`, `lspci -tv`.
"""

import re
from dataclasses import dataclass, field
from typing import Any

import orjson
from defusedxml import ElementTree as ET  # inventory XML comes from hosts: no entity expansion

# --- nvidia-smi topo -m ---------------------------------------------------------------

_AFFINITY_HEADERS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_CELL = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC|N/A)$")


@dataclass
class TopoMatrix:
    """What `nvidia-smi topo -m` says: GPU indexes, NIC device names, and the path
    between every pair (`NV18`, `PIX`, …); NUMA node per GPU where printed."""

    gpus: list[int] = field(default_factory=list)
    nics: list[str] = field(default_factory=list)  # device names, in column order
    paths: dict[tuple[str, str], str] = field(default_factory=dict)  # ("GPU0", "NIC1") -> "PIX"
    numa: dict[int, int] = field(default_factory=dict)  # GPU index -> NUMA node


def parse_topo_matrix(text: str) -> TopoMatrix:
    lines = [line.rstrip() for line in text.splitlines()]
    header_at = next((i for i, line in enumerate(lines) if re.match(r"^\s+GPU0\b", line)), None)
    if header_at is None:
        raise ValueError("no header row starting with GPU0: not `nvidia-smi topo -m` output")
    header = lines[header_at]
    for name in _AFFINITY_HEADERS:  # multi-word headers: one token each
        header = header.replace(name, name.replace(" ", "_"))
    columns = header.split()
    devices = [c for c in columns if c.replace("_", " ") not in _AFFINITY_HEADERS]
    legend = dict(re.findall(r"^\s*(NIC\d+):\s*(\S+)", text, flags=re.MULTILINE))
    topo = TopoMatrix()
    for name in devices:
        if re.fullmatch(r"GPU\d+", name):
            topo.gpus.append(int(name[3:]))
        else:
            topo.nics.append(legend.get(name, name))
    label = {name: (name if name.startswith("GPU") else legend.get(name, name)) for name in devices}
    numa_column = columns.index("NUMA_Affinity") if "NUMA_Affinity" in columns else None
    for line in lines[header_at + 1:]:
        cells = line.split()
        if cells and cells[0] == "Legend:":
            break
        if cells and cells[0] not in label and (re.fullmatch(r"NIC\d+", cells[0]) or cells[0].startswith("mlx")):
            label[cells[0]] = legend.get(cells[0], cells[0])  # a NIC row whose column the header lost
            topo.nics.append(label[cells[0]])
        if not cells or cells[0] not in label:
            continue
        row = label[cells[0]]
        values = cells[1:]
        for column, value in zip(devices, values, strict=False):
            if _CELL.match(value) and value != "X":
                topo.paths[(row, label[column])] = value
        if numa_column is not None and row.startswith("GPU") and len(values) > numa_column:
            numa = values[numa_column].split(",")[0]
            if numa.isdigit():
                topo.numa[int(row[3:])] = int(numa)
    if not topo.gpus:
        raise ValueError("no GPU columns in the matrix")
    return topo


# --- nvidia-smi -q (text or XML) --------------------------------------------------------


def _short_pci(bus_id: str) -> str:
    """`00000000:18:00.0` → `0000:18:00` (SPEC §3 `attrs.pci`: domain:bus:device)."""
    parts = bus_id.strip().lower().split(":")
    if len(parts) != 3:
        raise ValueError(f"bus id {bus_id!r} is not domain:bus:device.function")
    return f"{parts[0][-4:]}:{parts[1]}:{parts[2].split('.')[0]}"


_ZERO_UUID = "00000000-0000-0000-0000-000000000000"


def _known(value: str | None) -> str | None:
    """The value, or None for what nvidia-smi prints when it has none; an all-zero cluster
    UUID is what a GPU outside any multi-node NVLink fabric (H100) reports with state
    Completed, and must not group unrelated hosts into one NVLink domain."""
    value = (value or "").strip()
    return None if value in ("", "N/A", "[N/A]", "Not Supported", _ZERO_UUID) else value


def parse_smi_query(text: str) -> list[dict[str, Any]]:
    """GPUs in the order nvidia-smi lists them (its index order): `pci`, `serial`, `uuid`,
    `name`, and `cluster_uuid`/`clique` when the GPU sits in an NVLink fabric."""
    stripped = text.lstrip()
    return _smi_xml(stripped) if stripped.startswith("<") else _smi_text(text)


def _smi_xml(text: str) -> list[dict[str, Any]]:
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ValueError(f"not well-formed XML: {exc}") from None
    gpus = []
    for gpu in root.iter("gpu"):
        bus_id = gpu.get("id") or gpu.findtext("pci/pci_bus_id") or ""
        gpus.append(_fabric_checked(_drop_none({
            "pci": _short_pci(bus_id), "serial": _known(gpu.findtext("serial")), "uuid": _known(gpu.findtext("uuid")),
            "name": _known(gpu.findtext("product_name")),
            "cluster_uuid": _known(gpu.findtext("fabric/cluster_uuid")), "clique": _known(gpu.findtext("fabric/clique_id")),
            "fabric_state": _known(gpu.findtext("fabric/state")), "fabric_status": _known(gpu.findtext("fabric/status")),
        })))
    if not gpus:
        raise ValueError("no <gpu> element: not `nvidia-smi -q -x` output")
    return gpus


_TEXT_FIELDS = {"Serial Number": "serial", "GPU UUID": "uuid", "Product Name": "name",
                "ClusterUUID": "cluster_uuid", "CliqueId": "clique"}


_GPU_SECTION = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")


_FABRIC_FIELDS = {"State": "fabric_state", "Status": "fabric_status"}


def _smi_text(text: str) -> list[dict[str, Any]]:
    gpus: list[dict[str, Any]] = []
    fabric_indent: int | None = None  # inside a GPU's `Fabric` section: its indentation
    for line in text.splitlines():
        if line.startswith("GPU ") and (match := _GPU_SECTION.match(line)):
            gpus.append({"pci": _short_pci(match.group(1))})
            fabric_indent = None
            continue
        indent = len(line) - len(line.lstrip())
        if fabric_indent is not None and line.strip() and indent <= fabric_indent:
            fabric_indent = None
        if line.strip() == "Fabric":
            fabric_indent = indent
            continue
        key, sep, value = line.partition(" : ")  # nvidia-smi pads keys and writes " : "
        fields = _FABRIC_FIELDS if fabric_indent is not None and key.strip() in _FABRIC_FIELDS else _TEXT_FIELDS
        name = fields.get(key.strip()) if sep else None
        if gpus and name and name not in gpus[-1] and (known := _known(value)) is not None:
            gpus[-1][name] = known
    if not gpus:
        raise ValueError("no 'GPU 0000xxxx:bb:dd.f' section: not `nvidia-smi -q` output")
    return [_fabric_checked(gpu) for gpu in gpus]


def _fabric_checked(gpu: dict[str, Any]) -> dict[str, Any]:
    """The GPU without its fabric state, and without its cluster UUID and clique unless the
    fabric registration completed successfully with a real (non-zero) cluster UUID."""
    state, status = gpu.pop("fabric_state", None), gpu.pop("fabric_status", None)
    if "cluster_uuid" not in gpu or state not in (None, "Completed") or status not in (None, "Success"):
        gpu.pop("cluster_uuid", None)
        gpu.pop("clique", None)
    return gpu


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


# --- RDMA devices -------------------------------------------------------------------------


def parse_ibdev2netdev(text: str) -> dict[str, dict[str, Any]]:
    """`mlx5_0 port 1 ==> ibp26s0 (Down)` → {"mlx5_0": {"port": 1, "netdev": "ibp26s0", "up": False}}."""
    found = {}
    for line in text.splitlines():
        if match := re.match(r"^\s*(\S+)\s+port\s+(\d+)\s+==>\s+(\S+)\s+\((\w+)\)", line):
            found[match.group(1)] = {"port": int(match.group(2)), "netdev": match.group(3),
                                     "up": match.group(4).lower() == "up"}
    if not found and text.strip():
        raise ValueError("no 'DEV port N ==> NETDEV (State)' line: not ibdev2netdev output")
    return found


def parse_ibstat(text: str) -> dict[str, dict[str, Any]]:
    """`ibstat` → per CA: `node_guid` and per port `state`, `port_guid`, `link_layer`, `rate`."""
    cas: dict[str, dict[str, Any]] = {}
    ca: dict[str, Any] | None = None
    port: dict[str, Any] | None = None
    for line in text.splitlines():
        if match := re.match(r"^CA '([^']+)'", line):
            ca = cas.setdefault(match.group(1), {"ports": {}})
            port = None
        elif ca is not None and (match := re.match(r"^\s+Port (\d+):\s*$", line)):
            port = ca["ports"].setdefault(int(match.group(1)), {})
        elif ca is not None and ":" in line:
            key, _, value = (part.strip() for part in line.partition(":"))
            if port is not None and key in ("State", "Port GUID", "Link layer", "Rate"):
                port[key.lower().replace(" ", "_")] = value
            elif port is None and key == "Node GUID":
                ca["node_guid"] = value
    if not cas and text.strip():
        raise ValueError("no \"CA '<name>'\" line: not ibstat output")
    return cas


def guid(value: str) -> str:
    """GUIDs as ibstat (`0x58a2…`) and ibnetdiscover (`58a2…`, `S-58a2…`) write them → 16 hex digits."""
    value = value.strip().lower().removeprefix("0x")
    value = value.split("-", 1)[1] if value[:2] in ("s-", "h-") else value
    return value.zfill(16)


def parse_ip_addr(text: str) -> dict[str, list[str]]:
    """`ip -j addr` → interface name → its global addresses (IPv4 first)."""
    try:
        interfaces = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc}): expected `ip -j addr` output") from None
    if not isinstance(interfaces, list):
        raise ValueError("expected the JSON array `ip -j addr` prints")  # noqa: TRY004  (a bad file, reported like any other)
    found = {}
    for interface in interfaces:
        if not isinstance(interface, dict) or "ifname" not in interface:
            continue
        infos = [a for a in interface.get("addr_info", []) if a.get("scope", "global") == "global" and "local" in a]
        infos.sort(key=lambda a: a.get("family") != "inet")
        found[interface["ifname"]] = [a["local"] for a in infos]
    return found


# --- lspci ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PciDevice:
    """One PCI function: its address, what lspci calls it, and the bridges above it
    (closest last) as far as the output shows them."""

    bdf: str  # 0000:18:00.0
    description: str
    bridges: tuple[str, ...] = ()


_TREE_DEVICE = re.compile(r"([0-9a-f]{2}\.[0-9a-f])(?:-\[([0-9a-f]{2})(?:-[0-9a-f]{2})?\])?")


def parse_lspci(text: str) -> list[PciDevice]:
    """`lspci -D` (one function a line) or `lspci -tv` (the tree)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if lines and re.match(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f] ", lines[0]):
        # `0000:18:00.0 3D controller: NVIDIA Corporation …`: the class goes, the device stays
        return [PciDevice(line[:12], line[13:].split(": ", 1)[-1].strip()) for line in lines if re.match(r"^[0-9a-f]{4}:", line)]
    if not lines or not re.match(r"^[-\\+| ]*\[[0-9a-f]{4}:[0-9a-f]{2}\]", lines[0]):
        raise ValueError("neither `lspci -D` lines nor an `lspci -tv` tree")
    return _lspci_tree(lines)


def _lspci_tree(lines: list[str]) -> list[PciDevice]:
    """Each device token's column tells which bus it sits on: a bridge `-[bus]--+-` opens
    that bus for the tokens that start below it, on this line and the following ones."""
    devices = []
    open_bus: dict[int, tuple[str, str, tuple[str, ...]]] = {}  # column -> (domain, bus, bridges)
    for line in lines:
        for root in re.finditer(r"\[([0-9a-f]{4}):([0-9a-f]{2})\]-[+\\-]-", line):
            open_bus[root.end()] = (root.group(1), root.group(2), ())
        for match in _TREE_DEVICE.finditer(line):
            where = open_bus.get(match.start())
            if where is None or line[match.start() - 1] not in "-":
                continue
            domain, bus, bridges = where
            bdf = f"{domain}:{bus}:{match.group(1)}"
            rest = line[match.end():]
            if match.group(2):  # a bridge: what follows it sits on its secondary bus
                child = match.end() + len(rest) - len(rest.lstrip("-+\\"))
                open_bus[child] = (domain, match.group(2), (*bridges, bdf))
                continue
            devices.append(PciDevice(bdf, rest.strip(), bridges))
    return devices
