"""The held-out families (simulate/heldout.py): deterministic, and every fault's truth names a
component of the topology and a cause and category of the SPEC's vocabulary (§6, written out
here rather than read from the code under test)."""

from __future__ import annotations

import pytest

from faultgraph.simulate.heldout import FAMILIES, ROUND_1, ROUND_2, ROUND_3, ROUND_4, heldout_set
from faultgraph.simulate.scenarios import Scenario

# SPEC §6: each cause belongs to one category, as in the Llama 3 table.
CATEGORY_OF = {
    **dict.fromkeys(("faulty_gpu", "gpu_hbm", "gpu_sram", "gpu_system_processor", "gpu_thermal",
                     "silent_data_corruption", "gpu_fell_off_bus", "nvlink", "nvswitch"), "gpu"),
    **dict.fromkeys(("nic", "cpu", "system_memory", "ssd", "power_supply", "chassis", "io_expansion_board"), "host"),
    "network_switch_cable": "network",
    **dict.fromkeys(("software_bug", "dependency"), "software"),
    **dict.fromkeys(("host_maintenance", "planned_maintenance"), "maintenance"),
    **dict.fromkeys(("nccl_watchdog", "unknown"), "unknown"),
}
ACTIONS = {"evict", "restart", "replace", "rollback", "none"}


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return heldout_set(12, seed=5, hosts=16)


def test_same_seed_same_scenario(scenario: Scenario) -> None:
    again = heldout_set(12, seed=5, hosts=16)
    assert again.records == scenario.records and again.truth == scenario.truth
    assert heldout_set(12, seed=6, hosts=16).records != scenario.records


def test_every_fault_has_truth_in_the_topology_and_the_spec_vocabulary(scenario: Scenario) -> None:
    components = {c["id"] for c in scenario.topology["components"]}
    assert len(scenario.truth) == 12
    assert {f["mechanism"] for f in scenario.truth} == set(FAMILIES)
    for fault in scenario.truth:
        assert fault["root_component"] in components, fault
        assert fault["cause"] in CATEGORY_OF, fault
        assert fault["category"] == CATEGORY_OF[fault["cause"]], fault
        assert fault["action"] in ACTIONS, fault
        assert fault["root_component"].split("/")[0] not in {d.split("/")[0] for d in fault["decoys"]}, fault


def test_no_faults_no_truth() -> None:
    quiet = heldout_set(0, seed=1, hosts=8)
    assert quiet.truth == [] and quiet.records


@pytest.mark.parametrize("kwargs", [{"n_faults": -1}, {"n_faults": 2.5}, {"hosts": 3}, {"hosts": "64"}])
def test_bad_arguments_raise(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        heldout_set(**kwargs)  # type: ignore[arg-type]


def test_round_two_is_deterministic_and_in_the_spec_vocabulary() -> None:
    two = heldout_set(8, seed=3, hosts=16, families=ROUND_2)
    assert heldout_set(8, seed=3, hosts=16, families=ROUND_2).records == two.records
    components = {c["id"] for c in two.topology["components"]}
    assert {f["mechanism"] for f in two.truth} == set(ROUND_2)
    for fault in two.truth:
        assert fault["root_component"] in components, fault
        assert fault["category"] == CATEGORY_OF[fault["cause"]], fault
        assert fault["action"] in ACTIONS, fault


def test_round_one_is_the_default() -> None:
    assert FAMILIES == ROUND_1 and not set(ROUND_1) & set(ROUND_2)
    assert heldout_set(6, seed=2, hosts=8).records == heldout_set(6, seed=2, hosts=8, families=ROUND_1).records
    with pytest.raises(ValueError):
        heldout_set(2, hosts=8, families=("no_such_family",))


def test_round_three_is_deterministic_and_in_the_spec_vocabulary() -> None:
    three = heldout_set(9, seed=4, hosts=16, families=ROUND_3)
    again = heldout_set(9, seed=4, hosts=16, families=ROUND_3)
    assert again.records == three.records and again.truth == three.truth
    assert heldout_set(9, seed=5, hosts=16, families=ROUND_3).records != three.records
    types = {c["id"]: c["type"] for c in three.topology["components"]}
    assert {f["mechanism"] for f in three.truth} == set(ROUND_3)
    for fault in three.truth:
        assert fault["root_component"] in types, fault
        assert fault["category"] == CATEGORY_OF[fault["cause"]], fault
        assert fault["action"] in ACTIONS, fault
        expected = {"pcie_switch_failure": "pciesw", "host_oom_killer": "host", "gpu_missing_after_reboot": "gpu"}
        assert types[fault["root_component"]] == expected[fault["mechanism"]], fault


def test_round_three_leaves_rounds_one_and_two_unchanged() -> None:
    assert not set(ROUND_3) & (set(ROUND_1) | set(ROUND_2))
    for family in (ROUND_1, ROUND_2):
        first = heldout_set(6, seed=7, hosts=8, families=family)
        assert {f["mechanism"] for f in first.truth} <= set(family)
        assert heldout_set(6, seed=7, hosts=8, families=family).records == first.records


@pytest.fixture(scope="module")
def four() -> Scenario:
    return heldout_set(12, seed=4, hosts=16, families=ROUND_4)


def test_round_four_is_deterministic_and_in_the_spec_vocabulary(four: Scenario) -> None:
    again = heldout_set(12, seed=4, hosts=16, families=ROUND_4)
    assert again.records == four.records and again.truth == four.truth
    assert heldout_set(12, seed=5, hosts=16, families=ROUND_4).records != four.records
    types = {c["id"]: c["type"] for c in four.topology["components"]}
    links = {"~".join(sorted((link["a"], link["b"]))) for link in four.topology["links"]}  # SPEC §2 link ids
    assert {f["mechanism"] for f in four.truth} == set(ROUND_4)
    expected = {"nic_firmware_fatal": ("nic", "nic", "evict"),
                "transceiver_fault": ("link", "network_switch_cable", "replace"),
                "nvlink_failure": ("gpu", "nvlink", "evict"),
                "shared_fs_hang": ("host", "dependency", "restart")}
    for fault in four.truth:
        kind, cause, action = expected[fault["mechanism"]]
        root = fault["root_component"]
        assert (root in links and "~" in root) if kind == "link" else types.get(root) == kind, fault
        assert (fault["cause"], fault["action"]) == (cause, action), fault
        assert fault["category"] == CATEGORY_OF[fault["cause"]], fault
        host = next((end for end in root.split("~") if "/" in end), root).split("/")[0]
        assert host not in {d.split("/")[0] for d in fault["decoys"]}, fault


def test_round_four_is_new() -> None:
    assert not set(ROUND_4) & (set(ROUND_1) | set(ROUND_2) | set(ROUND_3))
    assert len(set(ROUND_4)) == len(ROUND_4) == 4
    for family in (ROUND_1, ROUND_2, ROUND_3):
        first = heldout_set(6, seed=7, hosts=8, families=family)
        assert {f["mechanism"] for f in first.truth} <= set(family)
        assert heldout_set(6, seed=7, hosts=8, families=family).records == first.records


def _lines(scenario: Scenario, host: str) -> list[dict[str, object]]:
    return [r for r in scenario.records if r["type"] == "log" and r["host"] == host]


def test_round_four_key_lines(four: Scenario) -> None:
    """Each family's defining lines are on the root's host, with what a parser should make of them."""
    seen = set()
    for fault in four.truth:
        root = fault["root_component"]
        host = next((end for end in root.split("~") if "/" in end), root).split("/")[0]
        lines = _lines(four, host)
        text = "\n".join(str(r["line"]) for r in lines)
        mechanism = fault["mechanism"]
        seen.add(mechanism)
        if mechanism == "nic_firmware_fatal":
            pci = next(c["attrs"]["pci"] for c in four.topology["components"] if c["id"] == root)
            synd = [r for r in lines if f"mlx5_core {pci}.0: print_health_info:447:(pid 0): synd 0x1: firmware "
                    "internal error" in str(r["line"])]
            assert synd and synd[0]["expect"] == {"kind": "nic_error", "attrs": {"pci": pci}}
            assert f"mlx5_core {pci}.0: poll_health:801:(pid 0): device's health compromised" in text
            assert "Got async event : local catastrophic error" in text
        elif mechanism == "transceiver_fault":
            nic = root.split("~")[1]
            pci = next(c["attrs"]["pci"] for c in four.topology["components"] if c["id"] == nic)
            assert f"mlx5_core {pci}.0: Port module event" in text
            assert f"ib{nic.rsplit('nic', 1)[1]}: Lost carrier" in text
        elif mechanism == "nvlink_failure":
            pci = next(c["attrs"]["pci"] for c in four.topology["components"] if c["id"] == root)
            xids = [r for r in lines if f"NVRM: Xid (PCI:{pci}): 74, " in str(r["line"])]
            assert xids and all(r["expect"]["attrs"]["xid"] == 74 for r in xids)  # type: ignore[index]
            assert "RuntimeError: CUDA error: uncorrectable NVLink error detected during the execution" in text
        else:
            assert "not responding, still trying" in text
            assert "INFO: task pt_main_thread:" in text and "blocked for more than 120 seconds." in text
    assert seen == set(ROUND_4)
    # the NVLink failure is the GPU's alone: no NVSwitch reports anything in this round
    assert not any((r.get("expect") or {}).get("kind") == "nvswitch_error" for r in four.records)
