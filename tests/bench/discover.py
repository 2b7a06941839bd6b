"""Benchmark: `faultgraph topology discover` on a 4,096-host fabric dump + host outputs.

Run: .venv/bin/python tests/bench/discover.py [--hosts 4096] [--runs 3]

Target (issue 14): under 30 s. The dump is SYNTHESISED by replicating the structure of the
real one in tests/data/discover/ibnetdiscover-topograph.txt (NVIDIA/topograph; Quantum-2
QM9700 switch and ConnectX-7 HCA records, line for line in its format): one 64-port leaf per
32 HCA ports (rail-optimized: NIC i of 32 hosts on leaf i of their group), 32 uplinks per
leaf spread over spines, each cable written from both ends as ibnetdiscover does. Every host
folder holds the real `nvidia-smi topo -m` and `nvidia-smi -q` outputs of the H800 in
tests/data/discover (the same text for every host: parsing cost, not variety, is measured).
Baseline, same run: reading every input file without parsing (the I/O floor).
"""

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from faultgraph.ingest.discover.build import discover

DATA = Path(__file__).resolve().parents[1] / "data" / "discover"
NICS = 8
DOWN, UP = 32, 32  # a QM9700 leaf: 32 ports to HCAs, 32 to spines


def synthesise(root: Path, hosts: int) -> tuple[int, int]:
    """Write the host folders and the fabric dump; answer (switches, cables)."""
    topo, smi = (DATA / "h800-nvidia-smi-topo-m.txt").read_text(), (DATA / "h800-nvidia-smi-q.txt").read_text()
    names = [f"node{h:04d}" for h in range(hosts)]
    for name in names:
        (root / name).mkdir()
        (root / name / "nvidia-smi-topo-m.txt").write_text(topo)
        (root / name / "nvidia-smi-q.txt").write_text(smi)
    groups = -(-hosts // DOWN)
    leaves = [(g, rail) for g in range(groups) for rail in range(NICS)]
    spines = max(1, len(leaves) * UP // 64)
    leaf_guid = {leaf: f"2c5eab0300{i:06x}" for i, leaf in enumerate(leaves)}
    leaf_lid = {leaf: i + 1 for i, leaf in enumerate(leaves)}
    spine_guid = [f"2c5eab0301{j:06x}" for j in range(spines)]
    hca_guid = {(h, n): f"e09d7303{h:06x}{n:02x}" for h in range(hosts) for n in range(NICS)}
    up_of: dict[int, list[tuple[int, tuple[int, int], int]]] = {j: [] for j in range(spines)}
    lines = ["#", "# Topology file: synthesised from NVIDIA/topograph tests/output/ibnetdiscover/example.out", "#", ""]
    for i, leaf in enumerate(leaves):
        g, rail = leaf
        guid = leaf_guid[leaf]
        lines += ["vendid=0x2c9", "devid=0xd2f2", f"sysimgguid=0x{guid}", f"switchguid=0x{guid}({guid})",
                  f'Switch\t65 "S-{guid}"\t\t# "MF0;SU{g:03d}-IBLEAF-R{rail}:MQM9701/U1" enhanced port 0 lid {i + 1} lmc 0']
        for port in range(DOWN):
            h = g * DOWN + port
            if h < hosts:
                hca = hca_guid[(h, rail)]
                lines.append(f'[{port + 1}]\t"H-{hca}"[1]({hca}) \t\t# "{names[h]} mlx5_{rail}" lid {h * NICS + rail + 2000} 4xNDR')
        for k in range(UP):
            j = (i * UP + k) % spines
            spine_port = len(up_of[j]) + 1
            up_of[j].append((spine_port, leaf, DOWN + k + 1))
            lines.append(f'[{DOWN + k + 1}]\t"S-{spine_guid[j]}"[{spine_port}]\t\t# "MF0;IBSPINE-{j:03d}:MQM9701/U1" lid {60000 - j} 4xNDR')
        lines.append("")
    for j, guid in enumerate(spine_guid):
        lines += ["vendid=0x2c9", "devid=0xd2f2", f"sysimgguid=0x{guid}", f"switchguid=0x{guid}({guid})",
                  f'Switch\t65 "S-{guid}"\t\t# "MF0;IBSPINE-{j:03d}:MQM9701/U1" enhanced port 0 lid {60000 - j} lmc 0']
        for spine_port, leaf, leaf_port in up_of[j]:
            lines.append(f'[{spine_port}]\t"S-{leaf_guid[leaf]}"[{leaf_port}]\t\t# "MF0;SU{leaf[0]:03d}-IBLEAF-R{leaf[1]}:MQM9701/U1" lid {leaf_lid[leaf]} 4xNDR')
        lines.append("")
    for (h, n), hca in hca_guid.items():
        g = h // DOWN
        lines += ["vendid=0x2c9", "devid=0x1021", f"sysimgguid=0x{hca}", f"caguid=0x{hca}",
                  f'Ca\t1 "H-{hca}"\t\t# "{names[h]} mlx5_{n}"',
                  f'[1]({hca}) \t"S-{leaf_guid[(g, n)]}"[{h % DOWN + 1}]\t\t# lid {h * NICS + n + 2000} lmc 0 "MF0;SU{g:03d}-IBLEAF-R{n}:MQM9701/U1" lid 1 4xNDR', ""]
    (root / "fabric").mkdir()
    (root / "fabric" / "ibnetdiscover.txt").write_text("\n".join(lines) + "\n")
    return len(leaves) + spines, hosts * NICS + len(leaves) * UP


def read_all(root: Path) -> int:
    return sum(len(path.read_bytes()) for path in root.rglob("*") if path.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=4096)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="fg-discover-"))
    try:
        started = time.perf_counter()
        switches, cables = synthesise(root, args.hosts)
        size = read_all(root)
        print(f"synthesised {args.hosts} hosts, {switches} switches, {cables} cables, {size / 2**20:.0f} MiB "
              f"in {time.perf_counter() - started:.1f} s")
        floors, times = [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            read_all(root)
            floors.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            body, problems = discover(root)
            times.append(time.perf_counter() - t0)
        print(f"discover: {min(times):.1f}–{max(times):.1f} s (median {statistics.median(times):.1f} s) over {args.runs} runs; "
              f"{len(body['components'])} components, {len(body['links'])} links; {len(problems)} problem lines")
        print(f"baseline, reading the same files: {min(floors):.2f}–{max(floors):.2f} s; "
              f"ratio discover/read {min(times) / max(floors):.0f}–{max(times) / min(floors):.0f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
