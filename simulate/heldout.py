"""Held-out fault families: mechanisms the engine was never tuned on, to measure how it
does on faults it has not seen.

Written on 2026-12-01 from the rows of Llama 3 405B's interruption table ("The Llama 3
Herd of Models", 2024, Table 5) that no other family models — GPU system processor, GPU
SRAM, host memory, SSD, power supply, silent data corruption — without reading the
engine (`attribution/`), the parsers and their catalogue (`ingest/`) or the incident code.
Every raw line format below is that of a real line in a public source, cited next to it;
only its fields (addresses, pids, counts, times) vary, the way they vary in the real ones.
Where no real line was found, a family sends only SPEC §1 events and says so.

Round 2 (`ROUND_2`, `--families heldout2`), written on 2026-12-01 under the same rules,
adds mechanisms from published failure reports outside that table's rows: an InfiniBand
link whose queue pairs exhaust their retries, a GPU's PCIe link lost to a fatal AER, the
NVSwitch Fabric Manager service dying under a job, and a kernel soft lockup.

Round 3 (`ROUND_3`, `--families heldout3`), written on 2026-12-01 under the same rules,
takes the rows of that table that name no single part of a GPU — the IO expansion board
and the software bug — and a GPU that does not come back after its host reboots: a PCIe
switch failing under a GPU and its NIC, the kernel's OOM killer ending a rank whose host
memory a data loader leaked, and a GPU that fails to initialise after a reboot.

Round 4 (`ROUND_4`, `--families heldout4`), written on 2026-12-04 under the same rules,
takes parts of the fabric and the services around the GPUs that no earlier family breaks:
an HCA whose firmware asserts (the health poll's syndrome dump, every queue pair on it
lost, the driver's recovery flow), a failed optic reported by the NIC as a port module
event with the link going down, one NVLink of one GPU failing (Xid 74 without any NVSwitch
error, the ranks' "uncorrectable NVLink error"), and a host whose NFS client hangs while
the job writes a checkpoint to the shared filesystem.

The scenarios run like `postmortems.hard_set`: skewed clocks, a month from 1 to 9,
benign events around the faults, and weak decoys on other hosts of the job near every
fault. `expect` on a line is what a correct parser should make of it under the SPEC's
event kinds, not what ours does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from faultgraph.attribution.topology import link_id
from faultgraph.ingest.causes import category_of
from faultgraph.simulate import postmortems as pm
from faultgraph.simulate import scenarios as sim

# Family → (SPEC §6 cause, SPEC §5 action kind). SDC's action is `rollback` (a numerical
# anomaly); evicting the GPU needs the re-run that found it, after the incident.
#
# Round 2's causes, the closest SPEC rows:
# - ib_retry_exceeded → `network_switch_cable`: symbol errors and link error recovery are
#   physical-layer counters, which on a link that still trains point at the cable or its
#   transceiver more than at the HCA's silicon; the root stays the NIC end, where the
#   counters are read (the repair is `replace`, the cable or optic on that port).
# - gpu_pcie_aer_fatal → `gpu_fell_off_bus`: the GPU's own PCIe link is what failed, the
#   driver loses it (Xid 79 where it notices); not the memory or the compute of the GPU.
# - fabric_manager_down → `dependency`: a host service the job needs (nv-fabricmanager)
#   died; the NVSwitch hardware is sound (`nvswitch` would send it to repair) and the job's
#   own code is not at fault (`software_bug`). The host is evicted until the service is back.
# - kernel_soft_lockup → `software_bug`: a soft lockup is kernel code holding a CPU for
#   tens of seconds without scheduling — a kernel or driver bug far more often than a CPU
#   fault, which would show as a machine check (`cpu`). The host needs a reboot: `evict`.
#
# Round 3's:
# - pcie_switch_failure → `io_expansion_board`, Llama 3's own row for the board that carries
#   the PCIe switches; the root is the topology's `pciesw` part above the GPU (`evict` until
#   the board is replaced: the host runs without those GPUs and NICs).
# - host_oom_killer → `software_bug`: the job's own data loader leaked the memory; no part is
#   faulty. The root is the host, not the killed rank's GPU: the OOM killer acts on the host's
#   memory (`global_oom`), its lines come from the host's kernel, and the GPU did nothing —
#   naming it would send a sound GPU away. The fix is in the code and the job's restart
#   (`restart`); evicting the host would not help the next run.
# - gpu_missing_after_reboot → `faulty_gpu`: the GPU is (or is found) on the bus but does not
#   initialise, a fault of the GPU itself rather than of its link at runtime
#   (`gpu_fell_off_bus`); the host runs without it until it is replaced: `evict`.
#
# Round 4's:
# - nic_firmware_fatal → `nic`: the HCA's own firmware failed (a health syndrome from the device, not a link
#   counter); root the NIC. `evict`: the host runs without that rail until the HCA is reflashed or replaced —
#   the driver's recovery, when it works, comes after the job has already broken.
# - transceiver_fault → `network_switch_cable`: the optic or active cable is the cable side of the link, the row
#   the Llama 3 table puts cables and optics in; root the NIC's link to its leaf (the classic flapping cable's
#   root), though the NIC is the one that reports it. `replace`: the module is swapped.
# - nvlink_failure → `nvlink`: one GPU's NVLink failed with no NVSwitch error; root the GPU that logged Xid 74 (the
#   link is in the GPU baseboard, the field unit is that GPU's tray). `evict` until it is repaired.
# - shared_fs_hang → `dependency`: a service the job needs (the shared filesystem) stopped answering; nothing on the
#   host is faulty. The topology has no part for the filer, so the root is the host whose client hung — where the
#   stall is and where an operator starts. `restart`: the job resumes from its last checkpoint once the filer
#   answers; evicting a sound host would not help.
OUTCOMES: dict[str, tuple[str, str]] = {
    "gsp_timeout": ("gpu_system_processor", "evict"),
    "sram_ecc": ("gpu_sram", "evict"),
    "system_memory_ue": ("system_memory", "evict"),
    "ssd_failure": ("ssd", "evict"),
    "psu_or_host_power_loss": ("power_supply", "evict"),
    "silent_data_corruption": ("silent_data_corruption", "rollback"),
    "ib_retry_exceeded": ("network_switch_cable", "replace"),
    "gpu_pcie_aer_fatal": ("gpu_fell_off_bus", "evict"),
    "fabric_manager_down": ("dependency", "evict"),
    "kernel_soft_lockup": ("software_bug", "evict"),
    "pcie_switch_failure": ("io_expansion_board", "evict"),
    "host_oom_killer": ("software_bug", "restart"),
    "gpu_missing_after_reboot": ("faulty_gpu", "evict"),
    "nic_firmware_fatal": ("nic", "evict"),
    "transceiver_fault": ("network_switch_cable", "replace"),
    "nvlink_failure": ("nvlink", "evict"),
    "shared_fs_hang": ("dependency", "restart"),
}
ROUND_1: tuple[str, ...] = ("gsp_timeout", "sram_ecc", "system_memory_ue", "ssd_failure", "psu_or_host_power_loss",
                            "silent_data_corruption")
ROUND_2: tuple[str, ...] = ("ib_retry_exceeded", "gpu_pcie_aer_fatal", "fabric_manager_down", "kernel_soft_lockup")
ROUND_3: tuple[str, ...] = ("pcie_switch_failure", "host_oom_killer", "gpu_missing_after_reboot")
ROUND_4: tuple[str, ...] = ("nic_firmware_fatal", "transceiver_fault", "nvlink_failure", "shared_fs_hang")
FAMILIES: tuple[str, ...] = ROUND_1  # round 1, as `--families heldout` has always meant

# Xid 119 lines from a real `dmesg` of an H100 host, quoted in leptonai/gpud pull request
# #500 (https://github.com/leptonai/gpud/pull/500): the process that waited and the RM
# control call (function 76, GSP_RM_CONTROL, with its command and size) vary.
_GSP_CALLS = ((0x20801702, 0x4), (0x20810108, 0x3E0), (0x20803039, 0x20), (0x2080012C, 0x14))
_GSP_WAITERS = ("python", "cache_mgr_main", "gpu-feature-dis")


def _gsp_timeout(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """The GPU's system processor stops answering the driver: Xid 119 (an RPC to the GSP
    timed out) a few times, or Xid 120 (the GSP firmware faulted). The rank's CUDA calls
    hang inside the driver and it never reaches the next collective: no line from the
    training process, only the other ranks' watchdog timeouts."""
    rank, host, gpu = sim._victim(b, job)
    pci = b.hosts[host].gpu_pci[gpu]
    if b.rng.random() < 0.7:
        at = t
        for _ in range(b.rng.randint(1, 4)):
            name = b.rng.choice(_GSP_WAITERS)
            pid = job.pid_base + gpu if name == "python" else b.rng.randint(2000, 4_000_000)
            cmd, size = b.rng.choice(_GSP_CALLS)
            # https://github.com/leptonai/gpud/pull/500 (dmesg of a host with Xid 119):
            # "NVRM: Xid (PCI:0000:9b:00): 119, pid=4071838, name=python, Timeout after 45s of waiting for RPC
            # response from GPU4 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801702 0x4)."
            line = (f"NVRM: Xid (PCI:{pci}): 119, pid={pid}, name={name}, Timeout after 45s of waiting for RPC "
                    f"response from GPU{gpu} GSP! Expected function 76 (GSP_RM_CONTROL) (0x{cmd:x} 0x{size:x}).")
            b.kernel(at, host, line, sim._expect("gpu_xid", xid=119, pci=pci))
            at = b.after(at, 45, 120)
    else:
        uuid = "-".join(f"{b.rng.randrange(16 ** n):0{n}x}" for n in (8, 4, 4, 4, 12))
        # https://github.com/NVIDIA/open-gpu-kernel-modules/issues/829 (Xid 120 in dmesg):
        # "NVRM: GPU at PCI:0000:06:00: GPU-604d3abb-43d5-088f-f873-9dc453a081a5"
        b.kernel(t, host, f"NVRM: GPU at PCI:{pci}: GPU-{uuid}", None)
        # same source: "NVRM: Xid (PCI:0000:06:00): 120, GSP task exception: store access page fault (cause:0xf)
        # @ pc:0x13ebd80, partition:2#0, task:3"; the load form (RISC-V cause 0xd) is the one in
        # https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1214's title.
        access, cause = b.rng.choice((("store", 0xF), ("load", 0xD)))
        line = (f"NVRM: Xid (PCI:{pci}): 120, GSP task exception: {access} access page fault (cause:0x{cause:x}) "
                f"@ pc:0x{b.rng.randrange(0x1300000, 0x1400000):x}, partition:2#0, task:{b.rng.randint(1, 6)}")
        b.kernel(b.after(t, 0, 0.001), host, line, sim._expect("gpu_xid", xid=120, pci=pci))
    end = sim._timeouts(b, job, sim._hang_start(b, t), skip={rank})
    return sim._Hit(f"{host}/gpu{gpu}", end)


def _sram_ecc(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """An uncorrectable ECC error in the GPU's on-chip SRAM. Contained (Xid 94, SM poison):
    the driver tears down only the channels of the process that consumed it, so the rank
    dies but the GPU needs no reset. Uncontained (Xid 95, an L2 tag or compression-bit
    store): the GPU must be reset. Either way the rank exits on the CUDA error and the
    others time out."""
    rank, host, gpu = sim._victim(b, job)
    pci = b.hosts[host].gpu_pci[gpu]
    pid = job.pid_base + gpu
    # The text is the driver's own (_gpuGenerateErrorLog_GA100, with the error-id names of
    # NV_ERROR_CONT_ERR_ID_STRING_PUBLIC and the state table's RST flags):
    # https://github.com/NVIDIA/open-gpu-kernel-modules/blob/448d5cc65624d3aa69015efa0d3fb50fd9729f41/src/nvidia/src/kernel/gpu/arch/ampere/kern_gpu_ga100.c
    # "%s: %s (0x%x). RST: %s, D-RST: %s" (engine) and "%s: %s (0x%x,0x%x). RST: %s, D-RST: %s" (LTC);
    # its own example: "NVRM: Xid (PCI:0000:01:00): 95, pid=7062, Uncontained: LTC TAG (0x2,0x1). RST: Yes, D-RST: No".
    if b.rng.random() < 0.5:
        b.kernel(t, host, *sim._xid(pci, 94, "Contained: SM (0x1). RST: No, D-RST: No", pid))
    else:
        where = b.rng.choice(("LTC TAG", "LTC CBC"))
        text = f"Uncontained: {where} (0x{b.rng.randrange(12):x},0x{b.rng.randrange(4):x}). RST: Yes, D-RST: No"
        b.kernel(t, host, *sim._xid(pci, 95, text, pid))
    # https://github.com/vllm-project/vllm/issues/5222: "RuntimeError: CUDA error: uncorrectable ECC error
    # encountered", behind torchrun's [rankN]: prefix.
    b.log(b.after(t, 0.1, 1.0), host, "train", f"[rank{rank}]: RuntimeError: CUDA error: uncorrectable ECC error "
          "encountered", sim._expect("gpu_ecc", rank, type="dbe"))
    end = sim._timeouts(b, job, sim._hang_start(b, t), skip={rank})
    return sim._Hit(f"{host}/gpu{gpu}", end)


def _edac_ue(b: sim._Builder, socket: int, mc: int, page: int, offset: int) -> str:
    """The memory controller's report of one uncorrected error, as skx/i10nm EDAC print it
    (Tony Luck's dmesg on lkml, 2021-08-12,
    https://lore.kernel.org/lkml/20210812152548.GA1579021@agluck-desk2.amr.corp.intel.com/):
    "EDAC MC3: 1 UE memory read error on CPU_SrcID#0_MC#3_Chan#0_DIMM#0 (channel:0 slot:0 page:0x7e025e
    offset:0x400 grain:32 -  err_code:0x00a0:0x0090  SystemAddress:0x7e025e400 ProcessorSocketId:0x0
    MemoryControllerId:0x3 ChannelAddress:0xec04bc00 ChannelId:0x0 RankAddress:0x76025c00 PhysicalRankId:0x1
    DimmSlotId:0x0 Row:0x3b01 Column:0x380 Bank:0x0 BankGroup:0x2 ChipSelect:0x1 ChipId:0x0)"."""
    r = b.rng
    chan = r.randrange(2)
    return (f"EDAC MC{mc}: 1 UE memory read error on CPU_SrcID#{socket}_MC#{mc}_Chan#{chan}_DIMM#0 (channel:{chan} "
            f"slot:0 page:0x{page:x} offset:0x{offset:x} grain:32 -  err_code:0x00a0:0x0090  "
            f"SystemAddress:0x{page << 12 | offset:x} ProcessorSocketId:0x{socket:x} MemoryControllerId:0x{mc:x} "
            f"ChannelAddress:0x{r.randrange(1 << 32):x} ChannelId:0x{chan:x} RankAddress:0x{r.randrange(1 << 31):x} "
            f"PhysicalRankId:0x{r.randrange(2):x} DimmSlotId:0x0 Row:0x{r.randrange(1 << 14):x} "
            f"Column:0x{r.randrange(1 << 10):x} Bank:0x{r.randrange(4):x} BankGroup:0x{r.randrange(8):x} "
            f"ChipSelect:0x{r.randrange(2):x} ChipId:0x0)")


def _reboots(b: sim._Builder, host: str, t: datetime, *, within: tuple[float, float]) -> datetime:
    """A host that goes down at `t`: the liveness tracker reports it lost, it reboots
    `within` seconds and is quiet until then, and its agent comes back. Returns the reboot."""
    b.event(b.after(t, 60, 180), host, "host_heartbeat", {"state": "lost", "source": "faultgraph"},
            severity="error", component=host, message=f"no heartbeat from {host}'s agent for 60 s")
    reboot = b.after(t, *within)
    b.hosts[host].boots.append(reboot)
    b.quiet.setdefault(host, []).append((t, reboot + timedelta(seconds=60)))
    b.event(b.after(reboot, 60, 120), host, "host_heartbeat", {"state": "ok"}, severity="info", component=host)
    return reboot


def _system_memory_ue(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """An uncorrectable error in the host's DRAM. If a training process consumed it, the
    kernel sends that process SIGBUS and its rank dies (the others time out); if the
    kernel itself did, the host panics and reboots, and all its ranks fall silent."""
    rank, host, gpu = sim._victim(b, job)
    socket, mc = b.rng.randrange(2), b.rng.randrange(4)
    page, offset = b.rng.randrange(1 << 20, 1 << 26), b.rng.randrange(0, 4096, 64)
    if b.rng.random() < 0.6:
        # Tony Luck's dmesg on lkml (link in _edac_ue): "mce: [Hardware Error]: Machine check events logged",
        # "mce: Uncorrected hardware memory error in user-access at 7e025e400", the EDAC line, and
        # "Memory failure: 0x7e025e: Sending SIGBUS to einj_mem_uc:12283 due to hardware memory corruption".
        lines: tuple[tuple[str, dict[str, Any] | None], ...] = (
            ("mce: [Hardware Error]: Machine check events logged", sim._expect("host_mce")),
            (f"mce: Uncorrected hardware memory error in user-access at {page << 12 | offset:x}",
             sim._expect("host_mem_ecc", type="ue")),
            (_edac_ue(b, socket, mc, page, offset), sim._expect("host_mem_ecc", type="ue", count=1)),
            (f"Memory failure: 0x{page:x}: Sending SIGBUS to pt_main_thread:{job.pid_base + gpu} due to hardware "
             "memory corruption", sim._expect("host_mem_ecc", type="ue")),
        )
        for i, (text, expect) in enumerate(lines):
            b.kernel(t + timedelta(milliseconds=5 * i), host, text, expect)
        end = sim._timeouts(b, job, sim._hang_start(b, t), skip={rank})
        return sim._Hit(host, end)
    # tip-bot2 on lkml, 2024-01-29, "x86/lib: Revert to _ASM_EXTABLE_UA() for {get,put}_user() fixups"
    # (https://lore.kernel.org/r/20240129063842.61584-1-qiuxu.zhuo@intel.com): "mce: [Hardware Error]: CPU 296:
    # Machine Check Exception: f Bank 1: bd80000000100134", "mce: [Hardware Error]: TSC 411a93533ed ADDR
    # 346a8730040 MISC 86", "mce: [Hardware Error]: Machine check: Data load in unrecoverable area of kernel",
    # "Kernel panic - not syncing: Fatal local machine check".
    cpu = b.rng.randrange(112)
    lines = (
        (f"mce: [Hardware Error]: CPU {cpu}: Machine Check Exception: f Bank 1: bd80000000100134",
         sim._expect("host_mce")),
        (f"mce: [Hardware Error]: TSC {b.rng.randrange(1 << 44):x} ADDR {page << 12 | offset:x} MISC 86", None),
        ("mce: [Hardware Error]: Machine check: Data load in unrecoverable area of kernel", sim._expect("host_mce")),
        ("Kernel panic - not syncing: Fatal local machine check", sim._expect("host_kernel")),
    )
    for i, (text, expect) in enumerate(lines):
        b.kernel(t - timedelta(microseconds=(len(lines) - i) * 40), host, text, expect)
    reboot = _reboots(b, host, t, within=(240, 600))
    end = sim._timeouts(b, job, sim._hang_start(b, t), skip=set(job.placement.host_ranks(host)))
    return sim._Hit(host, end, ready=reboot + timedelta(seconds=120))


def _ssd_failure(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """The host's local NVMe drive stops answering while the job writes a checkpoint or
    reads its data there: commands time out, the controller is reset or drops off, the
    block layer and ext4 report I/O errors, and the rank doing the I/O raises EIO; the
    others time out in the next collective."""
    rank, host, _ = sim._victim(b, job)
    write = b.rng.random() < 0.5
    qid, cid = b.rng.randint(1, 32), b.rng.randint(0, 1000)
    at = t
    if b.rng.random() < 0.6:
        # https://github.com/clearlinux/distribution/issues/2121: "nvme nvme0: I/O 14 QID 2 timeout, aborting",
        # "nvme nvme0: Abort status: 0x0"; https://github.com/oxidecomputer/propolis/pull/1156:
        # "nvme nvme0: I/O 900 QID 2 timeout, reset controller".
        for i in range(b.rng.randint(1, 4)):
            b.kernel(at, host, f"nvme nvme0: I/O {cid + i} QID {qid} timeout, aborting", sim._expect("host_disk"))
            b.kernel(b.after(at, 0.05, 0.4), host, "nvme nvme0: Abort status: 0x0", None)
            at = b.after(at, 0, 0.1)
        at = b.after(at, 30, 31)
        b.kernel(at, host, f"nvme nvme0: I/O {cid} QID {qid} timeout, reset controller", sim._expect("host_disk"))
    else:
        # https://github.com/Joshua-Riek/ubuntu-rockchip/issues/155: "nvme nvme0: controller is down; will
        # reset: CSTS=0xffffffff, PCI_STATUS read failed (134)", "nvme nvme0: Removing after probe failure
        # status: -19".
        b.kernel(at, host, "nvme nvme0: controller is down; will reset: CSTS=0xffffffff, PCI_STATUS read failed (134)",
                 sim._expect("host_disk"))
        at = b.after(at, 2, 4)
        b.kernel(at, host, "nvme nvme0: Removing after probe failure status: -19", sim._expect("host_disk"))
    sector = b.rng.randrange(1 << 20, 1 << 32)
    op = "0x1:(WRITE) flags 0x4000 phys_seg 128" if write else "0x0:(READ) flags 0x80700 phys_seg 1"
    # https://github.com/Joshua-Riek/ubuntu-rockchip/issues/155 (kernel 5.x): "blk_update_request: I/O error, dev
    # nvme0n1, sector 500118016 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 0"; from 5.19 on without the
    # prefix, as https://github.com/oxidecomputer/crucible/issues/1844: "I/O error, dev nvme0n1, sector 167431176
    # op 0x1:(WRITE) flags 0x4000 phys_seg 128 prio class 0".
    prefix = "blk_update_request: " if b.rng.random() < 0.5 else ""
    at = b.after(at, 0.01, 0.1)
    b.kernel(at, host, f"{prefix}I/O error, dev nvme0n1, sector {sector} op {op} prio class 0",
             sim._expect("host_disk"))
    # https://github.com/Joshua-Riek/ubuntu-rockchip/issues/970: "Buffer I/O error on dev nvme0n1p1, logical block
    # 121667584, lost sync page write", "EXT4-fs error (device nvme0n1p1): ext4_journal_check_start:83: comm
    # kworker/u16:3: Detected aborted journal", "EXT4-fs (nvme0n1p1): Remounting filesystem read-only".
    how = "lost sync page write" if write else "async page read"
    b.kernel(b.after(at, 0, 0.01), host, f"Buffer I/O error on dev nvme0n1p1, logical block {sector // 8}, {how}",
             sim._expect("host_disk"))
    if write:
        b.kernel(b.after(at, 0.01, 0.02), host, "EXT4-fs error (device nvme0n1p1): ext4_journal_check_start:83: "
                 f"comm kworker/u{b.rng.choice((16, 32, 64))}:{b.rng.randint(0, 9)}: Detected aborted journal",
                 sim._expect("host_disk"))
        b.kernel(b.after(at, 0.02, 0.03), host, "EXT4-fs (nvme0n1p1): Remounting filesystem read-only",
                 sim._expect("host_disk"))
    step = job.run_step + int((t - job.run_start).total_seconds() / job.step_s)
    path = f"/raid/checkpoints/{job.id}/iter_{step:07d}" if write else f"/raid/data/shard_{b.rng.randrange(4096):05d}.bin"
    # https://github.com/Mikubill/naifu/issues/35: "[rank3]: OSError: [Errno 5] Input/output error: '/app/naifu555'"
    died = b.after(at, 0.05, 2)
    b.log(died, host, "train", f"[rank{rank}]: OSError: [Errno 5] Input/output error: '{path}'",
          sim._expect("job_fail", rank))
    end = sim._timeouts(b, job, sim._hang_start(b, died), skip={rank})
    return sim._Hit(host, end, onset=t)


def _psu_or_host_power_loss(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """A host loses power: nothing more comes from it, peers time out or name its IPs
    (postmortems' vanishing host, reused as is). Where the BMC kept standby power, an
    out-of-band collector posts its System Event Log record as `host_power`; without it
    the fault looks exactly like any vanished host and only the repair ticket names the
    supply."""
    hit = pm._dead_agent(b, job, t)
    host = hit.root
    if b.rng.random() < 0.6:
        stamp = t + b.skew.get(host, timedelta(0))
        if b.rng.random() < 0.5:
            # `ipmitool sel elist`, https://github.com/sosreport/sos/issues/2015:
            # "  30 | 11/15/2019 | 18:50:40 | Power Unit Pwr Unit Status | Power off/down | Asserted"
            sel = (f"{b.rng.randrange(1, 4096):4x} | {stamp:%m/%d/%Y} | {stamp:%H:%M:%S} | Power Unit Pwr Unit Status "
                   "| Power off/down | Asserted")
        else:
            # FreeIPMI `ipmi-sel`, https://github.com/thomas-krenn/check_ipmi_sensor_v3/issues/66:
            # "3    | Dec-09-2024 | 21:12:29 | Power Supply 2 PS2 Status                         | Power Supply      |
            # Critical | Power Supply Failure detected"
            k = b.rng.randint(1, 2)
            sel = (f"{b.rng.randrange(1, 4096):<4d} | {stamp:%b-%d-%Y} | {stamp:%H:%M:%S} | "
                   f"{f'Power Supply {k} PS{k} Status':<49} | Power Supply      | Critical | "
                   "Power Supply Failure detected")
        b.event(b.after(t, 0, 2), host, "host_power", {"text": sel, "source": "ipmi_sel"}, severity="critical",
                component=host, message=sel)
    return hit


def _silent_data_corruption(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """A GPU computes wrong numbers without any error: the loss spikes or goes NaN, the
    trainer reports the anomaly (SPEC `train_anomaly`, job-wide, no rank), and an operator
    stops the job minutes later to roll back. Nothing names the GPU — it is found later
    by re-running the steps — so the engine has no way to know it, and a miss is the
    honest score. No raw line: only the trainer's events."""
    rank, host, gpu = sim._victim(b, job)
    last = job.placement.world_size - 1
    logger = job.placement.slots[last].host  # the last rank logs the loss (as _run_records)
    step = job.run_step + int((t - job.run_start).total_seconds() / job.step_s)
    baseline = round(1.7 + 9.0 / (1 + step / 400), 4)  # _run_records' loss curve
    at = b.after(t, job.step_s, 3 * job.step_s)
    for _ in range(b.rng.randint(0, 2)):
        value = round(baseline * b.rng.uniform(1.5, 8), 4)
        b.event(at, logger, "train_anomaly", {"type": "loss_spike", "step": step, "value": value,
                                              "baseline": baseline}, severity="warning", job=job.id)
        step += b.rng.randint(1, 20)
        at += timedelta(seconds=job.step_s * b.rng.randint(1, 20))
    b.event(at, logger, "train_anomaly", {"type": "nan", "step": step, "baseline": baseline},
            severity="error", job=job.id, message=f"loss is NaN at step {step}")
    end = b.after(at, 300, 1800)  # the operator stops the job
    return sim._Hit(f"{host}/gpu{gpu}", end, onset=t)


# ---------------------------------------------------------------------------- round 2

# IB port counters as the sysfs files name them (/sys/class/infiniband/mlx5_N/ports/1/counters/…),
# posted by a monitoring agent as SPEC §1 `nic_error` events.
_IB_COUNTERS = ("symbol_error", "link_error_recovery", "port_rcv_errors")


def _ib_retry_exceeded(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """A host's InfiniBand link degrades (the cable or optic of one NIC): for minutes its
    error counters climb, then a send's retries run out — the rank on that NIC gets
    completion status 12 (IBV_WC_RETRY_EXC_ERR, vendor err 129) on its own sends, its ring
    peers on their receives from it, and the job hangs. Accounts: Llama 3 405B's
    interruption table (network switch/cable, 8.4 % of unplanned interruptions) and NVIDIA/nccl
    issues #1405 and #1814 (status 12, vendor err 129 on links with connectivity problems).
    No real kernel line of an mlx5 link degrading was found: the counters come only as
    SPEC §1 `nic_error` events from an agent reading them."""
    rank, host, nic = sim._victim(b, job)
    h = b.hosts[host]
    first = t - timedelta(seconds=b.rng.uniform(120, 900))
    totals = dict.fromkeys(_IB_COUNTERS, 0)
    polls = b.rng.randint(2, 5)
    for i in range(polls):
        at = first + (t - first) * i / polls
        for counter in b.rng.sample(_IB_COUNTERS, b.rng.randint(1, 3)):
            totals[counter] += b.rng.randint(1, 40) if counter == "link_error_recovery" else b.rng.randint(20, 5000)
            b.event(b.after(at, 0, 5), host, "nic_error", {"device": f"mlx5_{nic}", "port": 1, "counter": counter,
                                                          "count": totals[counter]},
                    severity="warning", component=f"{host}/nic{nic}")
    local = h.nic_ip[nic]
    for peer in sim._ring_peers(job.placement, rank)[:2]:
        slot = job.placement.slots[peer]
        remote = b.hosts[slot.host].nic_ip[slot.gpu]
        # https://github.com/NVIDIA/nccl/issues/1814 (title): "NCCL WARN NET/IB : Got completion from peer
        # xxx.xxx.xxx.xxx<55921> with status=12 opcode=1 len=0 vendor err 129 (Send) localGid ::ffff:29.87.4.221
        # remoteGids::ffff:29.87.88.182"; the opcode of a failed completion is undefined (issue #1664:
        # "status=12 opcode=32698 len=32696 vendor err 129 (Send)").
        opcode = b.rng.choice((0, 1, b.rng.randrange(32600, 32700)))
        text = (f"NET/IB : Got completion from peer {remote}<{b.rng.randint(32768, 60999)}> with status=12 "
                f"opcode={opcode} len=0 vendor err 129 (Send) localGid ::ffff:{local} remoteGids::ffff:{remote}")
        b.nccl(b.after(t, 0, 2), job, rank, "transport/net_ib.cc:1696", text,
               sim._expect("nccl_error", rank, peer=remote, transport="ib"))
    end = sim._network_break(b, job, rank, t)  # the peers' (Recv) side, the aborts and the timeouts
    return sim._Hit(f"{host}/nic{nic}", end, onset=first)


def _gpu_pcie_aer_fatal(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """A GPU's PCIe link fails: the switch port above it reports an uncorrectable fatal
    error from the GPU (a completion timeout), the nvidia driver has no AER recovery, the
    port gives up; often the driver then finds the GPU gone (Xid 79). The rank hangs in
    its CUDA calls, the others time out. Account: rwth-i6/returnn issue #1500 (a training
    hang traced to this dmesg, "just a hardware issue"); the classic `_fell_off_bus` lines
    follow as the driver reports them."""
    rank, host, gpu = sim._victim(b, job)
    h = b.hosts[host]
    port = f"{h.pciesw_pci[gpu * len(h.pciesw_pci) // len(h.gpu_pci)]}.0"
    dev = f"{h.gpu_pci[gpu]}.0"
    fatal = sim._expect("pcie_aer", severity="fatal", bdf=dev)
    # https://github.com/rwth-i6/returnn/issues/1500 (dmesg): "pcieport 0000:00:03.0: AER: Multiple Uncorrected
    # (Fatal) error received: 0000:00:03.0", "pcieport 0000:00:03.0: PCIe Bus Error: severity=Uncorrected (Fatal),
    # type=Transaction Layer, (Requester ID)", "pcieport 0000:00:03.0:   device [8086:6f08] error
    # status/mask=00004020/00000000", "pcieport 0000:00:03.0:    [14] CmpltTO                (First)", "nvidia
    # 0000:03:00.0: AER: can't recover (no error_detected callback)", "pcieport 0000:00:03.0: AER: device
    # recovery failed". The single-error form "AER: Corrected error received: 0000:00:00.0" is in
    # https://github.com/NVIDIA/nvidia-docker/issues/1553; the kernel prefixes each line with the reporting
    # device's driver and address (here the GPU's: nvidia, 10de:2330 an H100 SXM).
    multiple = "Multiple " if b.rng.random() < 0.3 else ""
    lines: tuple[tuple[str, dict[str, Any] | None], ...] = (
        (f"pcieport {port}: AER: {multiple}Uncorrected (Fatal) error received: {dev}", fatal),
        (f"nvidia {dev}: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)", fatal),
        (f"nvidia {dev}:   device [10de:2330] error status/mask=00004000/00000000", None),
        (f"nvidia {dev}:    [14] CmpltTO                (First)", None),
        (f"nvidia {dev}: AER: can't recover (no error_detected callback)", sim._expect("pcie_aer", bdf=dev)),
        (f"pcieport {port}: AER: device recovery failed", sim._expect("pcie_aer", bdf=port)),
    )
    for i, (text, expect) in enumerate(lines):
        b.kernel(t + timedelta(microseconds=900 * i), host, text, expect)
    if b.rng.random() < 0.6:
        sim._fell_off_bus(b, host, gpu, b.after(t, 0.5, 3))
    end = sim._timeouts(b, job, sim._hang_start(b, t), skip={rank})
    return sim._Hit(f"{host}/gpu{gpu}", end)


def _fabric_manager_down(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """The NVIDIA Fabric Manager of an HGX host dies under a running job: systemd kills
    the hung daemon and its restart fails. With `ABORT_CUDA_JOBS_ON_FM_EXIT=1` (the
    shipped default, e.g. NixOS/nixpkgs pull request #320830's settings) the host's CUDA
    processes are aborted — no line of theirs is known, so they only fall silent — and the
    other ranks time out. torchrun then restarts the workers; on that host CUDA cannot
    initialise without the fabric (cudaErrorSystemNotReady, 802) and the restart fails.
    Accounts: NVIDIA/NVSentinel issue #883 (nodes whose Fabric Manager was killed and failed
    to start), NVIDIA/nccl issue #1488 (NCCL failing after Fabric Manager was stopped and
    started, until a reboot), and Llama 3 405B's "Dependency" row. The SPEC has no event kind
    for a host service's state, so the journal lines expect none."""
    _, host, _ = sim._victim(b, job)
    fm_pid, start_pid = b.rng.randint(2000, 200_000), b.rng.randint(2000, 400_000)
    lines: tuple[tuple[str, str, None], ...] = (
        # https://github.com/NVIDIA/NVSentinel/issues/883 (journal of "Node 1"): "Jan 30 11:58:43 node systemd[1]:
        # nvidia-fabricmanager.service: Killing process 76454 (nv-fabricmanage) with signal SIGKILL."
        ("systemd[1]", f"nvidia-fabricmanager.service: Killing process {fm_pid} (nv-fabricmanage) with signal SIGKILL.",
         None),
        # https://github.com/data-infra/cube-studio/issues/29 (journal of a failed start): "nvidia-fabricmanager-start.sh
        # [4753]: "/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg" failed! Exit code: 1",
        # "systemd[1]: nvidia-fabricmanager.service: Control process exited, code=exited, status=1/FAILURE".
        (f"nvidia-fabricmanager-start.sh[{start_pid}]",
         '"/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg" failed! Exit code: 1',
         None),
        ("systemd[1]", "nvidia-fabricmanager.service: Control process exited, code=exited, status=1/FAILURE",
         None),
    )
    at = t
    for tag, text, expect in lines:
        b.log(at, host, "syslog", b._syslog(at, host, tag, text), expect)
        at = b.after(at, 1, 3)
    silent = set(job.placement.host_ranks(host))
    end = sim._timeouts(b, job, sim._hang_start(b, t), skip=silent)
    # torchrun's restart of the worker group: the host's new processes fail in CUDA's initialisation.
    # https://github.com/nanoporetech/dorado/issues/1184: "Caught exception: CUDA error: system not yet initialized"
    # (libtorch's error text for 802), behind torchrun's [rankN]: prefix as in round 1's sram_ecc.
    restart = b.after(end, 10, 40)
    for rank in sorted(silent):
        b.log(b.after(restart, 5, 20), host, "train", f"[rank{rank}]: RuntimeError: CUDA error: system not yet initialized",
              sim._expect("job_fail", rank))
    back = b.after(restart, 600, 1800)  # an operator restarts the service (after a GPU reset)
    return sim._Hit(host, restart + timedelta(seconds=20), ready=back, onset=t)


def _kernel_soft_lockup(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """The host's kernel wedges a CPU: the soft-lockup watchdog reports the training
    process stuck in kernel code, every ~26 s with a longer time, and RCU reports the stall.
    That rank stops progressing; the others time out in the next collective. Accounts:
    madMAx43v3r/chia-plotter issue #535 (a user process in a soft lockup on several hosts),
    cloud-hypervisor/cloud-hypervisor issue #4536 (repeated soft lockups with an RCU stall)."""
    rank, host, gpu = sim._victim(b, job)
    cpu = b.rng.randrange(112)
    pid = job.pid_base + gpu
    # https://github.com/oxidecomputer/propolis/issues/1153: "rcu: INFO: rcu_preempt self-detected stall on CPU";
    # rcu_sched on a kernel without preemption, as https://github.com/harvester/harvester/issues/564's
    # "rcu: INFO: rcu_sched detected stalls on CPUs/tasks:".
    b.kernel(b.after(t, 21, 22), host, "rcu: INFO: rcu_sched self-detected stall on CPU", sim._expect("host_kernel"))
    # https://github.com/madMAx43v3r/chia-plotter/issues/535: "watchdog: BUG: soft lockup - CPU#2 stuck for 22s!
    # [chia_plot:29632]"; repeated at 23s, 49s, 75s, 101s in
    # https://github.com/cloud-hypervisor/cloud-hypervisor/issues/4536. The comm is the thread's 15-character
    # name (PyTorch's main thread: pt_main_thread, as in round 1's SIGBUS line).
    stuck = b.rng.randint(22, 23)
    at = t + timedelta(seconds=stuck)
    for _ in range(b.rng.randint(1, 4)):
        b.kernel(at, host, f"watchdog: BUG: soft lockup - CPU#{cpu} stuck for {stuck}s! [pt_main_thread:{pid}]",
                 sim._expect("host_kernel"))
        step = b.rng.randint(26, 28)
        stuck += step
        at += timedelta(seconds=step, microseconds=b.rng.randint(0, 999_999))
    end = sim._timeouts(b, job, sim._hang_start(b, t), skip={rank})
    return sim._Hit(host, end)


# ---------------------------------------------------------------------------- round 3


def _behind_switch(b: sim._Builder, host: str, gpu: int) -> tuple[str | None, list[int], list[int]]:
    """The PCIe switch the topology puts above `host`'s GPU `gpu` (None if it has none), and
    the GPUs and NICs it links to, by index: read from the topology's `pcie` links only."""
    gpu_id = f"{host}/gpu{gpu}"
    switch = next((link["a"] if link["b"] == gpu_id else link["b"] for link in b.topology["links"]
                   if link["type"] == "pcie" and gpu_id in (link["a"], link["b"])
                   and "/pciesw" in link["a"] + link["b"]), None)
    if switch is None:
        return None, [gpu], [gpu]
    below: dict[str, list[int]] = {"gpu": [], "nic": []}
    for link in b.topology["links"]:
        if link["type"] != "pcie" or switch not in (link["a"], link["b"]):
            continue
        other = link["b"] if link["a"] == switch else link["a"]
        part = other.split("/", 1)[-1]
        for kind, found in below.items():
            if part.startswith(kind) and part[len(kind):].isdigit():
                found.append(int(part[len(kind):]))
    return switch, sorted(below["gpu"]), sorted(below["nic"])


def _pcie_switch_failure(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """The PCIe switch on the IO expansion board that a GPU and its NIC sit behind fails:
    the switch's port reports an uncorrectable fatal error of its own (a surprise down and
    a completion timeout), recovery fails, and at the same moment every GPU behind it falls
    off the bus (Xid 79) and every NIC behind it stops answering its health poll. The ranks
    on those GPUs hang, their ring peers' queue pairs to those NICs fail (naming the NICs'
    addresses), and the rest time out. Accounts: Llama 3 405B's interruption table ("IO
    expansion board", a host row) and rwth-i6/returnn issue #1500 (the fatal AER of a
    port, a GPU behind it lost). The topology (rail-optimized, DGX H100-style) has a
    `pciesw` part above each GPU–NIC pair: that is the root. On a layout without one the
    GPU is blamed instead. No real line of an mlx5 device's own AER handling was found:
    the NIC shows only its health poll."""
    rank, host, gpu = sim._victim(b, job)
    h = b.hosts[host]
    switch, gpus, nics = _behind_switch(b, host, gpu)
    pci = next((c["attrs"].get("pci", "") for c in b.topology["components"] if c["id"] == switch), "")
    port = f"{pci}.0" if pci else f"{h.pciesw_pci[gpu * len(h.pciesw_pci) // len(h.gpu_pci)]}.0"
    fatal = sim._expect("pcie_aer", severity="fatal", bdf=port)
    # https://github.com/rwth-i6/returnn/issues/1500 (dmesg, a port reporting its own fatal error):
    # "pcieport 0000:00:03.0: AER: Multiple Uncorrected (Fatal) error received: 0000:00:03.0",
    # "pcieport 0000:00:03.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)",
    # "pcieport 0000:00:03.0:    [ 5] SDES                  ", "pcieport 0000:00:03.0:    [14] CmpltTO                (First)",
    # "nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)", "pcieport 0000:00:03.0: AER: device
    # recovery failed". The single-error form without "Multiple " is round 2's (NVIDIA/nvidia-docker issue #1553).
    multiple = "Multiple " if b.rng.random() < 0.5 else ""
    lines: list[tuple[str, dict[str, Any] | None]] = [
        (f"pcieport {port}: AER: {multiple}Uncorrected (Fatal) error received: {port}", fatal),
        (f"pcieport {port}: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)",
         fatal),
        (f"pcieport {port}:    [ 5] SDES                  ", None),
        (f"pcieport {port}:    [14] CmpltTO                (First)", None),
    ]
    for g in gpus:
        dev = f"{h.gpu_pci[g]}.0"
        lines.append((f"nvidia {dev}: AER: can't recover (no error_detected callback)",
                      sim._expect("pcie_aer", bdf=dev)))
    lines.append((f"pcieport {port}: AER: device recovery failed", sim._expect("pcie_aer", bdf=port)))
    for i, (text, expect) in enumerate(lines):
        b.kernel(t + timedelta(microseconds=900 * i), host, text, expect)
    lost = b.after(t, 0.5, 3)
    for g in gpus:
        sim._fell_off_bus(b, host, g, lost)
    for n in nics:
        bdf = f"{h.nic_pci[n]}.0"
        # mlx5_core's health poll (drivers/net/ethernet/mellanox/mlx5/core/health.c, mlx5_core_err's
        # "%s:%d:(pid %d): " prefix), as the kernel line in NVIDIA/NVSentinel's syslog health-monitor end-to-end
        # test (tests/syslog_health_monitor_test.go; a revision later than the copies that could be pinned
        # here): "mlx5_core 0000:41:00.0: poll_health:852:(pid 0): device's health compromised - reached miss count".
        b.kernel(b.after(lost, 0, 0.5), host,
                 f"mlx5_core {bdf}: poll_health:852:(pid 0): device's health compromised - reached miss count",
                 sim._expect("nic_error", pci=bdf[:-2]))
    # The ranks on the lost GPUs hang (no line); their ring peers' queue pairs to the lost NICs fail.
    victims = {r for r in job.placement.host_ranks(host) if job.placement.slots[r].gpu in gpus} | {rank}
    aborted: set[int] = set()
    for r in sorted(victims):
        ip = h.nic_ip[job.placement.slots[r].gpu]
        for peer in sim._ring_peers(job.placement, r):
            if peer not in aborted and peer not in victims:
                sim._peer_errors(b, job, peer, ip, b.after(t, 7, 15))
                aborted.add(peer)
    end = sim._timeouts(b, job, sim._hang_start(b, t), skip=victims | aborted)
    return sim._Hit(switch or f"{host}/gpu{gpu}", end)


def _host_oom_killer(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """A data loader leaks host memory until the kernel's OOM killer (a global OOM, not a
    cgroup's) kills the largest process — one rank's training process; torchrun on that host
    reports the worker killed by SIGKILL (exit code -9) and tears down its other workers,
    and the ranks on the other hosts time out. Accounts: Llama 3 405B's interruption table
    ("Software bug"), pcyin/tranX issue #41 (a training process OOM-killed, its dmesg) and
    NVIDIA/Model-Optimizer issue #1681 (torchrun's `exitcode: -9` for a memory leak). The
    leak's growth is not sent: no agent reading of host memory is a SPEC §1 kind."""
    rank, host, gpu = sim._victim(b, job)
    pid = job.pid_base + gpu
    comm = b.rng.choice(("python", "python3"))
    anon = b.rng.randint(200_000_000, 900_000_000)  # kB: the leaking rank holds most of the host's DRAM
    file_rss, shmem = b.rng.randint(60_000, 900_000), b.rng.randint(8_000, 4_000_000)
    # https://github.com/pcyin/tranX/issues/41 (dmesg): "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,
    # mems_allowed=0,global_oom,task_memcg=/user.slice,task=python3,pid=25315,uid=0", "Out of memory: Killed process
    # 25315 (python3) total-vm:53312244kB, anon-rss:31451456kB, file-rss:74816kB, shmem-rss:12296kB, UID:0
    # pgtables:69068kB oom_score_adj:0", "oom_reaper: reaped process 25315 (python3), now anon-rss:0kB,
    # file-rss:74732kB, shmem-rss:12296kB".
    lines: tuple[tuple[str, dict[str, Any] | None], ...] = (
        (f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,"
         f"task_memcg=/user.slice,task={comm},pid={pid},uid=0", sim._expect("host_oom")),
        (f"Out of memory: Killed process {pid} ({comm}) total-vm:{anon + b.rng.randint(20_000_000, 90_000_000)}kB, "
         f"anon-rss:{anon}kB, file-rss:{file_rss}kB, shmem-rss:{shmem}kB, UID:0 pgtables:{anon // 450}kB "
         "oom_score_adj:0", sim._expect("host_oom")),
        (f"oom_reaper: reaped process {pid} ({comm}), now anon-rss:0kB, file-rss:{file_rss - b.rng.randint(0, 200)}kB, "
         f"shmem-rss:{shmem}kB", None),
    )
    for i, (text, expect) in enumerate(lines):
        b.kernel(t + timedelta(microseconds=110 * i + (b.rng.randint(0, 600_000) if i == 2 else 0)), host, text, expect)
    # torchrun's failure summary, https://github.com/NVIDIA/Model-Optimizer/issues/1681: "  rank      : 0
    # (local_rank: 0)", "  exitcode  : -9 (pid: 3908423)", "  traceback : Signal 9 (SIGKILL) received by PID 3908423".
    at = b.after(t, 1, 6)
    for i, (text, expect) in enumerate((
            (f"  rank      : {rank} (local_rank: {gpu})", None),
            (f"  exitcode  : -9 (pid: {pid})", sim._expect("job_fail", rank)),
            (f"  traceback : Signal 9 (SIGKILL) received by PID {pid}", None))):
        b.log(at + timedelta(microseconds=50 * i), host, "train", text, expect)
    end = sim._timeouts(b, job, sim._hang_start(b, t), skip=set(job.placement.host_ranks(host)))
    return sim._Hit(host, end)


# Error codes of real "RmInitAdapter failed!" lines: NVIDIA/gpu-operator#1146 (0x24:0x72:1568),
# illinois-scicomp/machine-shop-maintenance#76 (0x25:0x40:1470), NVIDIA/open-gpu-kernel-modules#789 (0x62:0x65:1792).
_RM_INIT_CODES = ("0x24:0x72:1568", "0x25:0x40:1470", "0x62:0x65:1792")


def _gpu_missing_after_reboot(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """A GPU fails and takes its host down with it: the host hangs (no line survives), the
    monitor reports its heartbeat lost, the BMC's watchdog resets it. After the reboot the
    GPU does not come back: the driver fails to initialise it (RmInitAdapter failed, again at
    every CUDA start) or it is not enumerated at all (no line). The other ranks time out;
    at torchrun's restart CUDA counts one device fewer on that host, and the last local rank
    fails to set its device ("invalid device ordinal"). Accounts: Llama 3 405B's interruption
    table ("Faulty GPU"), NVIDIA/gpu-operator issue #1146 and illinois-scicomp/machine-shop-
    maintenance issue #76 (a GPU that fails RmInitAdapter until it is serviced; "only
    reboots help"). The SPEC has no event kind for a GPU that fails to initialise: the NVRM
    lines expect `host_kernel` with the GPU's PCI address, which resolves to the GPU."""
    _, host, gpu = sim._victim(b, job)
    pci = b.hosts[host].gpu_pci[gpu]
    reboot = _reboots(b, host, t, within=(300, 900))
    silent = set(job.placement.host_ranks(host))
    end = sim._timeouts(b, job, sim._hang_start(b, t), skip=silent)
    restart = b.after(max(end, reboot + timedelta(seconds=120)), 10, 40)
    code = b.rng.choice(_RM_INIT_CODES) if b.rng.random() < 0.7 else None
    if code:
        for at in (b.after(reboot, 20, 40), b.after(restart, 2, 5)):
            # https://github.com/NVIDIA/gpu-operator/issues/1146 (kernel log): "NVRM: GPU 0000:0a:00.0: RmInitAdapter
            # failed! (0x24:0x72:1568)", "NVRM: GPU 0000:0a:00.0: rm_init_adapter failed, device minor number 5".
            b.kernel(at, host, f"NVRM: GPU {pci}.0: RmInitAdapter failed! ({code})", sim._expect("host_kernel", pci=pci))
            b.kernel(b.after(at, 0, 0.001), host, f"NVRM: GPU {pci}.0: rm_init_adapter failed, device minor number {gpu}",
                     sim._expect("host_kernel", pci=pci))
    last = max(silent, key=lambda r: job.placement.slots[r].gpu)
    # https://github.com/OpenBMB/MiniCPM-V/issues/356: torch.cuda.set_device on a host with fewer GPUs than local
    # ranks, "[rank6]: RuntimeError: CUDA error: invalid device ordinal" behind torchrun's [rankN]: prefix.
    b.log(b.after(restart, 5, 20), host, "train", f"[rank{last}]: RuntimeError: CUDA error: invalid device ordinal",
          sim._expect("job_fail", last))
    back = b.after(restart, 1800, 7200)  # the host is drained until the GPU is replaced
    return sim._Hit(f"{host}/gpu{gpu}", restart + timedelta(seconds=20), ready=back, onset=t)


# ---------------------------------------------------------------------------- round 4

# A real ConnectX firmware health dump, qemu-devel, 2025-03-18 (Dragos Tatulea, "Re: [PATCH v3 0/7] Move memory
# listener register to vhost_vdpa_init"):
# https://lore.kernel.org/qemu-devel/m7p7ubuyfhqxhcxqt4qs6rbi24pgxtnbq52maqpdom2da75g7e@laluifinsegp/
# a ConnectX-6 Dx on firmware 22.44.1036 whose firmware asserted ("synd 0x1: firmware internal error"). Its
# lines, in order, after "mlx5_core 0000:0d:00.0: print_health_info:<line>:(pid 0): "; the dump's own values are
# kept (no ConnectX-7 dump was found), the irisc that asserted and the firmware's clock vary.
_HEALTH_DUMP = (
    (435, "assert_var[0] 0x0521945b"), (435, "assert_var[1] 0x00000000"), (435, "assert_var[2] 0x00000000"),
    (435, "assert_var[3] 0x00000000"), (435, "assert_var[4] 0x00000000"), (435, "assert_var[5] 0x00000000"),
    (438, "assert_exit_ptr 0x21492f38"), (439, "assert_callra 0x2102d5f0"), (440, "fw_ver 22.44.1036"),
)


def _nic_firmware_fatal(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """The firmware of one host's HCA asserts: the driver's health poll stops seeing the
    firmware's heartbeat and dumps the health buffer (syndrome 0x1, firmware internal error),
    the device is declared fatal and every queue pair on it fails at once — the rank on that
    NIC gets the device-fatal async event, its ring peers' sends to it exhaust their retries,
    the rest of the job times out. The driver's recovery flow then reloads the device, or
    gives up when its PCI reads do not come back. Accounts: Llama 3 405B's interruption table
    ("NIC", a host row), NVIDIA/nccl issue #230 (a 4-node PyTorch run failing after 830K
    iterations on "Got async event : local catastrophic error") and the qemu-devel dump above
    (a device "already in bad FW state")."""
    rank, host, nic = sim._victim(b, job)
    bdf = f"{b.hosts[host].nic_pci[nic]}.0"
    pci = bdf[:-2]
    fw_clock = int(t.timestamp()) - b.rng.randint(0, 86_400)
    health = sim._expect("nic_error", pci=pci)
    # The dump quoted above: "mlx5_core 0000:0d:00.0: poll_health:801:(pid 0): device's health compromised -
    # reached miss count", "... print_health_info:431:(pid 0): Health issue observed, firmware internal error,
    # severity(3) ERROR:", the buffer (_HEALTH_DUMP), "... print_health_info:442:(pid 0): time 1742220438",
    # "...:443:(pid 0): hw_id 0x00000212", "...:444:(pid 0): rfr 0", "...:445:(pid 0): severity 3 (ERROR)",
    # "...:446:(pid 0): irisc_index 3", "...:447:(pid 0): synd 0x1: firmware internal error", "...:449:(pid 0):
    # ext_synd 0x8f7a", "...:450:(pid 0): raw fw_ver 0x162c040c".
    lines: list[tuple[str, dict[str, Any] | None]] = [
        ("poll_health:801:(pid 0): device's health compromised - reached miss count", health),
        ("print_health_info:431:(pid 0): Health issue observed, firmware internal error, severity(3) ERROR:", health),
        *((f"print_health_info:{n}:(pid 0): {text}", None) for n, text in _HEALTH_DUMP),
        (f"print_health_info:442:(pid 0): time {fw_clock}", None),
        ("print_health_info:443:(pid 0): hw_id 0x00000212", None),
        ("print_health_info:444:(pid 0): rfr 0", None),
        ("print_health_info:445:(pid 0): severity 3 (ERROR)", None),
        (f"print_health_info:446:(pid 0): irisc_index {b.rng.randrange(10)}", None),
        ("print_health_info:447:(pid 0): synd 0x1: firmware internal error", health),
        ("print_health_info:449:(pid 0): ext_synd 0x8f7a", None),
        ("print_health_info:450:(pid 0): raw fw_ver 0x162c040c", None),
    ]
    for i, (text, expect) in enumerate(lines):
        b.kernel(t + timedelta(microseconds=25 + 7 * i), host, f"mlx5_core {bdf}: {text}", expect)
    sim._carrier(b, host, nic, b.after(t, 0.5, 2.0), up=False)
    sim._port_event(b, job, rank, b.after(t, 0.2, 1.0), "local catastrophic error")
    at = b.after(t, 1, 5)
    pid = b.rng.randint(200, 60_000)  # the health work queue's kworker
    # https://lore.kernel.org/all/20250707103014.1279262-1-andy.xu@hj-micro.com/ (ConnectX-5/-7, an arm64 host):
    # "mlx5_core 0004:01:00.1: mlx5_health_try_recover:335:(pid 2239): handling bad device here", "mlx5_core
    # 0004:01:00.1: mlx5_error_sw_reset:231:(pid 2239): start"; newer kernels say "mlx5_health_try_recover:387:
    # (pid 40948): starting health recovery flow", the trace quoted in the message of
    # https://github.com/torvalds/linux/commit/33de865f7bce3968676e43b0182af0a2dd359dae (Moshe Shemesh).
    if b.rng.random() < 0.5:
        b.kernel(at, host, f"mlx5_core {bdf}: mlx5_health_try_recover:335:(pid {pid}): handling bad device here",
                 health)
        b.kernel(b.after(at, 0, 0.01), host, f"mlx5_core {bdf}: mlx5_error_sw_reset:231:(pid {pid}): start", None)
    else:
        b.kernel(at, host, f"mlx5_core {bdf}: mlx5_health_try_recover:387:(pid {pid}): starting health recovery flow",
                 health)
    if b.rng.random() < 0.6:
        # The device comes back: mlx5_core prints its firmware at every load, as in Chuck Lever's dmesg of
        # 2023-05-27 quoted in "Re: system hang on start-up (mlx5?)" (https://lore.kernel.org/all/875y8altrq.ffs@tglx/):
        # "mlx5_core 0000:81:00.0: firmware version: 16.35.2000"; then the link.
        back = b.after(at, 20, 70)
        b.kernel(back, host, f"mlx5_core {bdf}: firmware version: 22.44.1036", None)
        sim._carrier(b, host, nic, b.after(back, 3, 10), up=True)
    else:
        # The lkml DPC report above: "mlx5_core 0004:01:00.1: mlx5_health_try_recover:338:(pid 2239): health
        # recovery flow aborted, PCI reads still not working".
        b.kernel(b.after(at, 60, 61), host, f"mlx5_core {bdf}: mlx5_health_try_recover:338:(pid {pid}): health "
                 "recovery flow aborted, PCI reads still not working", health)
    end = sim._network_break(b, job, rank, t)
    return sim._Hit(f"{host}/nic{nic}", end)


# The driver's error strings for a module in error (drivers/net/ethernet/mellanox/mlx5/core/events.c,
# mlx5_pme_error_to_string); "High Temperature" is the one seen in real logs (below).
_MODULE_ERRORS = ("High Temperature", "High Temperature", "Bad or shorted cable/module", "Power budget exceeded")


def _transceiver_fault(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """The optic (or active cable) in one HCA's cage fails: the NIC's firmware reports a port
    module event — the module in error (over temperature, shorted, over its power budget) or
    gone from the cage — the module is shut down and the link drops with it. The rank on that
    NIC gets a port error, its ring peers' queue pairs to it fail, the job hangs; the module
    is swapped later. Accounts: Llama 3 405B's interruption table ("Network switch/cable",
    8.4 % of the unexpected interruptions) and Alibaba's HPN paper (SIGCOMM 2024: failures of
    the links between NICs and their ToR switches, optics among them, as a routine cause of
    interrupted training, the reason for its dual-ToR design). The root is the NIC's link to its leaf,
    as for the classic flapping cable: the part to replace sits on that link."""
    rank, host, nic = sim._victim(b, job)
    bdf = f"{b.hosts[host].nic_pci[nic]}.0"
    nic_id = f"{host}/nic{nic}"
    module = sim._expect("nic_error", pci=bdf[:-2])
    if b.rng.random() < 0.75:
        # NVIDIA/NVSentinel's syslog health-monitor end-to-end test (tests/syslog_health_monitor_test.go), a kernel
        # line: "mlx5_core 0000:5c:00.0: Port module event[error]: module 0, Cable error, High Temperature".
        text = f"Port module event[error]: module 0, Cable error, {b.rng.choice(_MODULE_ERRORS)}"
    else:
        # The same test's "mlx5_core 0000:63:00.1: Port module event: module 1, Cable unplugged" (the form of the
        # driver's info line, events.c). One port per HCA here: module 0.
        text = "Port module event: module 0, Cable unplugged"
    b.kernel(t, host, f"mlx5_core {bdf}: {text}", module)
    down = b.after(t, 0.05, 1.5)
    sim._carrier(b, host, nic, down, up=False)
    sim._port_event(b, job, rank, b.after(down, 0.0, 0.2), "port error")
    end = sim._network_break(b, job, rank, t)
    # The module swapped: "mlx5_core 0000:81:00.0: Port module event: module 0, Cable plugged" (Chuck Lever's dmesg,
    # https://lore.kernel.org/all/875y8altrq.ffs@tglx/, as in _nic_firmware_fatal), then the link comes up.
    swapped = b.after(end, 600, 1800)
    b.kernel(swapped, host, f"mlx5_core {bdf}: Port module event: module 0, Cable plugged", None)
    sim._carrier(b, host, nic, b.after(swapped, 5, 20), up=True)
    return sim._Hit(link_id(nic_id, b.leaf_of[nic_id]), end)


def _nvlink_failure(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """One NVLink of one GPU of an HGX board fails (no NVSwitch reports a fatal SXid): the
    driver logs Xid 74 on that GPU naming the link, the channels using it are torn down, and
    the rank on that GPU — sometimes with one or two tensor-parallel peers on the same board
    whose kernels were reading over that link — dies on CUDA's sticky "uncorrectable NVLink
    error"; the other ranks time out. Accounts: pytorch/pytorch issue #58155 (A100 clusters
    whose training fails after days on "CUDA error: uncorrectable NVLink error detected during
    the execution"), MIC-DKFZ/nnUNet issue #1519 (the same error ending a run), and the
    NVIDIA developer forum's Xid 74 thread cited below. The GPU is the root: the link is a
    trace on the baseboard between it and a switch chip, and the field unit is the GPU tray."""
    rank, host, gpu = sim._victim(b, job)
    h = b.hosts[host]
    gpu_id = f"{host}/gpu{gpu}"
    pci = h.gpu_pci[gpu]
    switch = b.rng.randrange(len(h.nvswitch_pci))
    link = b.rng.choice(b.nvlink_ports[(gpu_id, f"{host}/nvswitch{switch}")])
    at = t
    for _ in range(b.rng.randint(1, 2)):
        if b.rng.random() < 0.3:
            # https://forums.developer.nvidia.com/t/kernel-nvrm-xid-74-name-unknown-nvlink-fatal-error-detected-on-link-rmmod-error-could-not-remove-nvidia-uvm-resource-temporarily-unavail/292539
            # "NVRM: Xid (PCI:0000:c1:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link 1"
            text = f"NVLink: fatal error detected on link {link}"
        else:
            # https://github.com/tanishagoyal2/NVSentinel/blob/main/docs/designs/019-workflow-nvlink-err.md (a fork
            # of NVIDIA/NVSentinel, the NVLink workflow's design): "NVRM: Xid (PCI:0003:00:00): 74, pid='<unknown>',
            # name=<unknown>, NVLink: fatal error detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)".
            text = f"NVLink: fatal error detected on link {link}(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)"
        line, expect = sim._xid(pci, 74, text)
        expect["attrs"]["link"] = link
        b.kernel(at, host, line, expect)
        at = b.after(at, 0.001, 0.5)
    local = [r for r in job.placement.host_ranks(host) if r != rank]
    died = {rank, *b.rng.sample(local, min(len(local), b.rng.choice((0, 0, 1, 2))))}
    for r in sorted(died):
        # https://github.com/MIC-DKFZ/nnUNet/issues/1519 (title): "RuntimeError: CUDA error: uncorrectable NVLink
        # error detected during the execution", behind torchrun's [rankN]: prefix as in round 1's sram_ecc.
        b.log(b.after(t, 0.05, 1.0), host, "train", f"[rank{r}]: RuntimeError: CUDA error: uncorrectable NVLink "
              "error detected during the execution", sim._expect("nvlink_error", r))
    end = sim._timeouts(b, job, sim._hang_start(b, t), skip=died)
    return sim._Hit(gpu_id, end)


def _shared_fs_hang(b: sim._Builder, job: sim._Job, t: datetime) -> sim._Hit:
    """The shared filesystem stops answering one host while the job writes a checkpoint to it
    (an NFS hard mount: the client retries for ever). That host's ranks block in the write —
    no error, only the kernel's "server not responding" and, two minutes on, its hung-task
    warnings for the training processes — so they never reach the next collective and the
    other ranks time out. When the server answers again the client says so. Accounts: Llama 3
    405B's interruption table ("Dependency", a service the job needs), Kokolis et al. 2024
    ("Revisiting Reliability in Large-Scale Machine Learning Research Clusters", Meta's RSC
    clusters: filesystem mounts among the most common failures their health checks catch),
    raspberrypi/linux issue #2482 and openzfs/zfs issue #3850 (the client-side lines of a hung
    NFS write). No real Lustre eviction line was found: the family is NFS only."""
    _, host, _ = sim._victim(b, job)
    server = b.rng.choice((f"10.{b.rng.randint(200, 250)}.{b.rng.randint(0, 255)}.{b.rng.randint(1, 254)}",
                           f"ckpt-nfs{b.rng.randint(1, 8):02d}"))
    # https://github.com/raspberrypi/linux/issues/2482 (dmesg): "nfs: server ease not responding, still trying"
    # (twice within a second), later "nfs: server ease OK"; https://github.com/openzfs/zfs/issues/3850: "nfs: server
    # batalix not responding, still trying" three times.
    at = b.after(t, 60, 180)  # the RPC's major timeout
    for _ in range(b.rng.randint(1, 3)):
        b.kernel(at, host, f"nfs: server {server} not responding, still trying", sim._expect("host_kernel"))
        at = b.after(at, 0.01, 35)
    ranks = job.placement.host_ranks(host)
    hung = b.rng.sample(ranks, min(len(ranks), b.rng.randint(1, 3)))
    at = b.after(t, 120, 240)  # the hung-task watchdog's first look after 120 s
    for r in sorted(hung, key=lambda r: job.placement.slots[r].gpu):
        pid = job.pid_base + job.placement.slots[r].gpu
        # Same issues: "INFO: task objcopy:24916 blocked for more than 120 seconds.", "INFO: task bitcoind:2138 blocked
        # for more than 120 seconds.", each followed by '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables
        # this message.'; the comm is PyTorch's main thread (pt_main_thread, as in round 1's SIGBUS line).
        b.kernel(at, host, f"INFO: task pt_main_thread:{pid} blocked for more than 120 seconds.",
                 sim._expect("host_kernel"))
        b.kernel(b.after(at, 0, 0.01), host,
                 '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.', None)
        at = b.after(at, 0.02, 0.2)
    end = sim._timeouts(b, job, sim._hang_start(b, t), skip=set(ranks))
    back = b.after(end, 60, 1200)
    b.kernel(back, host, f"nfs: server {server} OK", None)
    return sim._Hit(host, end, ready=back)


_FAMILIES: dict[str, Callable[[sim._Builder, sim._Job, datetime], sim._Hit]] = {
    "gsp_timeout": _gsp_timeout,
    "sram_ecc": _sram_ecc,
    "system_memory_ue": _system_memory_ue,
    "ssd_failure": _ssd_failure,
    "psu_or_host_power_loss": _psu_or_host_power_loss,
    "silent_data_corruption": _silent_data_corruption,
    "ib_retry_exceeded": _ib_retry_exceeded,
    "gpu_pcie_aer_fatal": _gpu_pcie_aer_fatal,
    "fabric_manager_down": _fabric_manager_down,
    "kernel_soft_lockup": _kernel_soft_lockup,
    "pcie_switch_failure": _pcie_switch_failure,
    "host_oom_killer": _host_oom_killer,
    "gpu_missing_after_reboot": _gpu_missing_after_reboot,
    "nic_firmware_fatal": _nic_firmware_fatal,
    "transceiver_fault": _transceiver_fault,
    "nvlink_failure": _nvlink_failure,
    "shared_fs_hang": _shared_fs_hang,
}
# Families that already lay their decoys (the vanished host of postmortems does).
_OWN_DECOYS = frozenset({"psu_or_host_power_loss"})


def heldout_set(n_faults: int = 30, seed: int = 0, hosts: int = 128, *, hosts_per_su: int | None = None,
                benign_scale: float = 24.0, families: Sequence[str] = ROUND_1) -> sim.Scenario:
    """`n_faults` faults from `families` (round 1 by default, `ROUND_2`, `ROUND_3` or
    `ROUND_4` for the later rounds), on the plan of `postmortems.hard_set` (skewed clocks, a month from 1 to 9,
    benign events around them): the held-out families only.

    ValueError for a negative or non-integer count, fewer than 4 hosts or an unknown family."""
    unknown = [f for f in families if f not in _FAMILIES]
    if unknown or not families:
        raise ValueError(f"families must be held-out families ({', '.join(OUTCOMES)}), got {list(families)!r}")
    return pm.fault_set(tuple(families), _inject, n_faults, seed, hosts, hosts_per_su=hosts_per_su,
                        benign_scale=benign_scale)


def _inject(b: sim._Builder, job: sim._Job, family: str, t: datetime) -> dict[str, Any]:
    hit = _FAMILIES[family](b, job, t)
    # the culprit's host: a link's root names it at its NIC end (`leaf~host/nicN`)
    culprit = next((end for end in hit.root.split("~") if "/" in end), hit.root).split("/", 1)[0]
    decoys = [] if family in _OWN_DECOYS else pm._decoys(b, job, t, culprit)
    sim._interrupt(b, job, t, hit, planned=False)
    cause, action = OUTCOMES[family]
    entry = {"id": f"f{len(b.truth):04d}", "type": family, "mechanism": family, "job": job.id, "time": sim.iso(t),
             "onset": sim.iso(hit.onset or t), "root_component": hit.root, "category": category_of(cause),
             "cause": cause, "action": action, "decoys": sorted(set(decoys)), "related": []}
    b.truth.append(entry)
    return entry
