"""The cause catalogue of SPEC §6: every fine-grained cause and the category it belongs to.

The rows are those of the Llama 3 405B interruption table (arXiv 2407.21783, Table 5); the
XID and log-pattern catalogues in `ingest/catalogue/` name causes from this list only.
"""

CATEGORIES: tuple[str, ...] = ("gpu", "host", "network", "software", "maintenance", "unknown")

CAUSE_CATEGORY: dict[str, str] = {
    "faulty_gpu": "gpu",
    "gpu_hbm": "gpu",
    "gpu_sram": "gpu",
    "gpu_system_processor": "gpu",
    "gpu_thermal": "gpu",
    "silent_data_corruption": "gpu",
    "gpu_fell_off_bus": "gpu",
    "nvlink": "gpu",
    "nvswitch": "gpu",
    "nic": "host",
    "cpu": "host",
    "system_memory": "host",
    "ssd": "host",
    "power_supply": "host",
    "chassis": "host",
    "io_expansion_board": "host",
    "network_switch_cable": "network",
    "software_bug": "software",
    "dependency": "software",
    "host_maintenance": "maintenance",
    "planned_maintenance": "maintenance",
    "nccl_watchdog": "unknown",
    "unknown": "unknown",
}

CAUSES: tuple[str, ...] = tuple(CAUSE_CATEGORY)


def category_of(cause: str) -> str:
    """The category a cause belongs to; unknown causes fall in `unknown`."""
    return CAUSE_CATEGORY.get(cause, "unknown")
