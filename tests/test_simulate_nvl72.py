"""The GB200 NVL72 fault families: what the simulator writes, and `faultgraph eval` on them."""

import json

import pytest
from typer.testing import CliRunner

from faultgraph.attribution.topology import Topology
from faultgraph.ingest.parse import parse_line
from faultgraph.service.cli import app
from faultgraph.simulate import nvl72


def test_a_chip_failure_writes_sxids_from_its_switch_tray_and_hits_both_jobs_of_the_rack() -> None:
    scenario = nvl72.scenario_set(n_faults=3, seed=5, racks=2)
    Topology.from_dict(scenario.topology)
    chip_faults = [t for t in scenario.truth if t["mechanism"] == "nvl72_nvswitch_chip"]
    assert len(chip_faults) == 2 and chip_faults[0]["root_component"] == chip_faults[1]["root_component"]
    rack = chip_faults[0]["root_component"].split("/")[0]
    assert {t["job"] for t in chip_faults} == {f"train-r{rack[4:]}-0", f"train-r{rack[4:]}-1"}
    sxids = [r for r in scenario.records if r["type"] == "log" and "SXid" in r["line"]]
    assert sxids and all(r["host"].startswith(f"{rack}-nvsw") for r in sxids)
    for record in (r for r in scenario.records if r["type"] == "log" and r["expect"]):
        event = parse_line(record["line"], host=record["host"], source=record["source"])
        assert event is not None and event["kind"] == record["expect"]["kind"], record["line"]


@pytest.mark.slow
def test_eval_on_the_nvl72_families_meets_the_bar() -> None:
    done = CliRunner().invoke(app, ["eval", "--layout", "gb200-nvl72", "--faults", "12", "--racks", "2", "--seed", "3",
                                    "--json"])
    assert done.exit_code == 0, done.stderr
    report = json.loads(done.stdout)
    assert set(report["mechanisms"]) == {*nvl72.MECHANISMS, "all"}
    for name, row in report["mechanisms"].items():
        assert row["top1_pct"] >= 95, (name, row)
    assert report["merged"] == 0
