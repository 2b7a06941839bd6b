"""Rack lanes in the real browser (Debian's chromium driven by Playwright, as test_web.py):
a simulated GB200 NVL72 cluster of two racks (`simulate_nvl72`: an NVSwitch chip failing in a
switch tray, then a compute tray's GPU falling off the bus) replayed over the public API, and
each incident's timeline grouped by rack with the blamed part named on the rack's lane."""

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import Server, start_server
from test_incidents_api import T0
from test_web import browser, open_page, page, shot  # noqa: F401  (fixtures; the module skips without chromium)

from faultgraph.attribution.generators import NVL72_SWITCH_TRAYS, NVL72_TRAYS, gb200_nvl72
from faultgraph.attribution.topology import Topology
from faultgraph.ingest.parse import parse_line
from faultgraph.simulate import nvl72 as simulate_nvl72
from faultgraph.simulate.evaluate import replay
from faultgraph.simulate.scenarios import iso


@pytest.fixture(scope="module")
def nvl72(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """The chip fault (both jobs of its rack) and the tray-GPU fault, as analysed by the server."""
    server: Server = start_server(f"duckdb:///{tmp_path_factory.mktemp('racks') / 'racks.duckdb'}")
    scenario = simulate_nvl72.scenario_set(n_faults=2, seed=1, racks=2)
    replay(server.client, scenario)
    found = {i["job"]: i for i in server.client.get("/v1/incidents").json()["incidents"]}
    truth = {t["job"]: t for t in scenario.truth}
    assert set(found) == set(truth), (found, truth)
    chip = next(t for t in scenario.truth if t["mechanism"] == "nvl72_nvswitch_chip")
    tray = next(t for t in scenario.truth if t["mechanism"] == "nvl72_tray_gpu")
    for entry in (chip, tray):  # the engine got them right, so the lanes have a blamed part to show
        assert found[entry["job"]]["root_cause"]["component"] == entry["root_component"]
    yield {"server": server, "topology": Topology.from_dict(scenario.topology),
           "chip": (found[chip["job"]], chip["root_component"]), "tray": (found[tray["job"]], tray["root_component"])}
    server.stop()


def lane_labels(view, selector: str) -> list[str]:
    lanes = view.locator(selector)
    return [lanes.nth(i).locator("text").first.text_content() for i in range(lanes.count())]


def test_a_failing_nvswitch_chip_is_drawn_on_its_racks_lane(nvl72, page) -> None:  # noqa: F811
    incident, chip = nvl72["chip"]
    topology: Topology = nvl72["topology"]
    rack, tray = chip.split("/")[0], topology.attrs(chip)["tray"]
    open_page(page, f"{nvl72['server'].url}/ui/incident.html?id={incident['id']}")
    head = page.locator("g.lane.rack.root")
    assert head.count() == 1 and head.get_attribute("data-rack") == rack
    label = head.locator("text").first.text_content()
    assert f"NVSwitch chip {chip.split('/')[1]} in switch tray {tray}" in label and label.startswith("★")
    # the rack's lane holds its 18 compute trays and 9 switch trays, in that order
    trays = page.locator(f"g.lane.tray[data-rack={rack}]")
    assert trays.count() == NVL72_TRAYS + NVL72_SWITCH_TRAYS
    keys = [trays.nth(i).get_attribute("data-tray") for i in range(trays.count())]
    assert keys == [f"c{t}" for t in range(NVL72_TRAYS)] + [f"s{t}" for t in range(NVL72_SWITCH_TRAYS)]
    # the blamed switch tray is the root lane among them, its SXid ringed as evidence on it
    blamed = page.locator("g.lane.tray.root")
    assert blamed.count() == 1 and blamed.get_attribute("data-tray") == f"s{tray}"
    assert blamed.locator(".mark.hw.evidence").count() >= 1
    blamed.locator(".mark.hw.evidence").first.click()
    assert "nvswitch_error" in page.locator("#event-detail").inner_text()
    # no lane of its own for any host of a rack: the rack lanes took them
    rack_hosts = {h for h in topology.hosts() if topology.attrs(h).get("rack")}
    for label in lane_labels(page, "g.lane.host, g.lane.component"):
        assert label.lstrip("★ ").split("/")[0] not in rack_hosts, label
    # NVLink errors on the rack's compute trays sit on those trays' lanes
    compute_marks = page.locator(f"g.lane.tray[data-rack={rack}]:not([data-tray^=s]) .mark.hw")
    assert compute_marks.count() >= 3
    shot(page, "incident-nvl72-chip.png")


def test_another_rack_opens_and_closes_on_a_click(nvl72, page) -> None:  # noqa: F811
    incident, chip = nvl72["chip"]
    rack = chip.split("/")[0]
    open_page(page, f"{nvl72['server'].url}/ui/incident.html?id={incident['id']}")
    others = page.locator(f"g.lane.rack:not([data-rack={rack}])")
    if others.count() == 0:  # the incident's events all lie in its own rack: close and reopen that one
        others = page.locator("g.lane.rack.root")
    other = others.first.get_attribute("data-rack")
    before = int(page.locator("#timeline").get_attribute("data-lanes"))
    was_open = page.locator(f"g.lane.tray[data-rack={other}]").count() > 0
    page.locator(f"g.lane.rack[data-rack={other}] text").first.click()
    after = int(page.locator("#timeline").get_attribute("data-lanes"))
    assert after - before == (-1 if was_open else 1) * (NVL72_TRAYS + NVL72_SWITCH_TRAYS)
    page.locator(f"g.lane.rack[data-rack={other}] text").first.click()
    assert int(page.locator("#timeline").get_attribute("data-lanes")) == before


def test_a_compute_tray_fault_names_the_tray_on_its_racks_lane(nvl72, page) -> None:  # noqa: F811
    incident, gpu = nvl72["tray"]
    topology: Topology = nvl72["topology"]
    host = topology.host_of(gpu)
    rack, tray = topology.attrs(host)["rack"], topology.attrs(host)["tray"]
    open_page(page, f"{nvl72['server'].url}/ui/incident.html?id={incident['id']}")
    head = page.locator("g.lane.rack.root")
    assert head.get_attribute("data-rack") == rack
    assert f"{gpu} in compute tray {tray}" in head.locator("text").first.text_content()
    blamed = page.locator("g.lane.tray.root")
    assert blamed.count() == 1 and blamed.get_attribute("data-tray") == f"c{tray}"
    assert blamed.locator(".mark.hw.evidence").count() >= 1  # its XID 79
    assert page.locator(f"g.lane.tray[data-rack={rack}]").count() == NVL72_TRAYS + NVL72_SWITCH_TRAYS
    shot(page, "incident-nvl72-tray.png")


def test_a_job_over_32_racks_draws_a_few_dozen_lanes(tmp_path: Path, page) -> None:  # noqa: F811
    """2,304 ranks on 576 compute trays: the blamed rack opened, 23 more racks as one lane
    each, the rest of the racks in the density lane, and the SVG stays small."""
    server = start_server(f"duckdb:///{tmp_path / 'big.duckdb'}")
    try:
        topology = gb200_nvl72(racks=32)
        assert server.client.put("/v1/topology", json=topology).status_code == 200
        racks = {c["id"]: c["attrs"]["rack"] for c in topology["components"] if c["type"] == "host"}
        hosts = list(racks)
        job = {"id": "big", "start": iso(T0 - timedelta(hours=1)), "gpus_per_host": 4, "hosts": hosts}
        assert server.client.post("/v1/jobs", json=job).status_code in (200, 201)
        line = "nvidia-nvswitch1: SXid (PCI:0000:04:00.0): 12028, Fatal, Link 04 egress non-posted PRIV error"
        sxid = parse_line(line, host="rack05-nvsw3", source="kmsg", received=T0)
        events = [{**sxid, "time": iso(T0)}]
        rack05 = [h for h in hosts if racks[h] == "rack05"]
        for n, host in enumerate(rack05[::3]):  # NVLink5 XIDs on trays across the rack
            events.append({"time": iso(T0 + timedelta(seconds=1 + n)), "host": host, "kind": "gpu_xid", "component": f"{host}/gpu{n % 4}",
                           "severity": "critical", "attrs": {"xid": 145}, "message": "NVRM: Xid (PCI:0008:01:00): 145, NVLink RLW error"})
        for rank in range(len(hosts) * 4):
            events.append({"time": iso(T0 + timedelta(minutes=10, seconds=rank % 7)), "host": hosts[rank // 4], "kind": "nccl_timeout",
                           "job": "big", "rank": rank, "attrs": {"op": "ALLREDUCE", "seq": 7, "timeout_ms": 600000, "elapsed_ms": 600020}})
        assert server.client.post("/v1/events", json=events).json()["rejected"] == []
        server.client.post("/v1/analyze", timeout=600)
        [incident] = [i for i in server.client.get("/v1/incidents").json()["incidents"] if i["job"] == "big"]
        assert incident["root_cause"]["component"] == "rack05/nvswitch7"  # tray 3, chip 1
        open_page(page, f"{server.url}/ui/incident.html?id={incident['id']}")
        assert page.locator("g.lane.rack.root").get_attribute("data-rack") == "rack05"
        assert page.locator("g.lane.rack").count() == 24  # the cap; the other 8 racks are aggregated
        assert "144 other hosts" in page.locator("g.lane.aggregate text").first.text_content()  # 8 racks × 18 trays
        assert page.locator("g.lane.tray").count() == NVL72_TRAYS + NVL72_SWITCH_TRAYS
        assert int(page.locator("#timeline").get_attribute("data-lanes")) <= 60
        assert page.locator("#timeline svg *").count() < 5000
        shot(page, "incident-nvl72-32-racks.png")
    finally:
        server.stop()
