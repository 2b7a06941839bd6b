"""Fleet health over HTTP: component states from events and from the engine's own
judgement, history per slot and per serial, fleet statistics and measured goodput, on a
real server whose incidents the engine attributed from posted events."""

import csv
import json
import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from faultgraph.service.cli import app
from faultgraph.service.events.service import format_time
from tests.conftest import empty_store, start_server
from tests.test_stats_api import T0, day_of_training, iso, post_and_analyse


def stamp(at: timedelta) -> str:
    """A time as the service writes it back."""
    return format_time(T0 + at)


def state(component: str, at: timedelta, value: str, **attrs) -> dict:
    host = component.split("/", 1)[0]
    return {"time": iso(T0 + at), "host": host, "component": component, "kind": "component_state",
            "attrs": {"state": value, **attrs}}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Iterator[httpx.Client]:
    """`day_of_training` (XID 79 on node0041/gpu3 at +1 h, a PSU failure on node0050 at
    +5 h), a second save at +3 h, and what the repair shop said: node0041/gpu3 in repair at
    +2 h, its board S-OLD swapped for S-NEW and healthy at +6 h; S-OLD refitted in
    node0042/gpu0 at +7 h; node0050 drained by an operator at +5.5 h; node0070 flagged
    suspect by a scheduler at +9 h."""
    stores = empty_store(tmp_path_factory.mktemp("fleet"), "fleet")  # the backend under test
    server = start_server(next(stores))
    batch = day_of_training() + [
        {"time": iso(T0 + timedelta(hours=3)), "host": "node0040", "kind": "checkpoint_save", "job": "train",
         "attrs": {"step": 400, "duration_s": 240}},
        state("node0041/gpu3", timedelta(hours=0), "healthy", serial="S-OLD"),
        state("node0041/gpu3", timedelta(hours=2), "in_repair", ticket="RMA-17"),
        state("node0041/gpu3", timedelta(hours=6), "healthy", serial="S-NEW", reason="board replaced"),
        state("node0042/gpu0", timedelta(hours=7), "healthy", serial="S-OLD"),
        state("node0050", timedelta(hours=5, minutes=30), "drained", reason="PSU"),
        state("node0070", timedelta(hours=9), "suspect", reason="slow allreduce"),
    ]
    post_and_analyse(server.client, batch)
    yield server.client
    server.stop()
    next(stores, None)  # drop a PostgreSQL test database


def test_components_by_state_for_a_launcher(fleet):
    body = fleet.get("/v1/components", params={"state": "faulty,drained,suspect"}).json()
    by_id = {row["component"]: row for row in body["components"]}
    assert set(by_id) == {"node0050", "node0070"}
    assert by_id["node0050"]["state"] == "drained" and by_id["node0050"]["since"] == stamp(timedelta(hours=5, minutes=30))
    # drained by an operator during the fault the engine found: its cause and incident stay
    assert by_id["node0050"]["cause"] == "power_supply" and by_id["node0050"]["incident"].startswith("inc-")
    assert by_id["node0070"] == {**by_id["node0070"], "state": "suspect", "type": "host", "host": "node0070"}
    hosts = fleet.get("/v1/components", params={"state": "drained", "type": "gpu"}).json()["components"]
    assert hosts == []


def test_components_of_the_hosts_a_prolog_asks_about(fleet):
    """`host=` keeps the parts inside those hosts (the host itself among them): a job's prolog
    asks about its own nodes, not the whole fleet."""
    def ids(**params) -> list[str]:
        return [row["component"] for row in fleet.get("/v1/components", params=params).json()["components"]]

    assert ids(host="node0041") == ["node0041/gpu3"]
    assert ids(host="node0041,node0050") == ["node0041/gpu3", "node0050"]
    assert ids(host=["node0041", "node0070"], state="suspect") == ["node0070"]
    assert ids(host="node9999") == []


def test_an_incident_root_turns_faulty_and_a_repair_closes_the_episode(fleet):
    body = fleet.get("/v1/components/history", params={"component": "node0041/gpu3"}).json()
    assert body["state"] == "healthy" and body["serial"] == "S-NEW"
    judged = [step for step in body["history"] if step["source"] == "judged"]
    assert [(s["state"], s["cause"]) for s in judged] == [("faulty", "gpu_fell_off_bus")]
    assert judged[0]["incident"].startswith("inc-")
    [fault] = body["faults"]
    assert fault["serial"] == "S-OLD" and fault["repair_hours"] == pytest.approx(5.0)
    assert body["serials"] == ["S-NEW", "S-OLD"]


def test_a_power_supply_incident_is_the_engine_s_then_the_operator_s(fleet):
    body = fleet.get("/v1/components/history", params={"component": "node0050"}).json()
    assert [s["state"] for s in body["history"]] == ["faulty", "drained"]
    assert body["faults"][0]["cause"] == "power_supply" and body["faults"][0]["end"] is None


def test_a_serial_keeps_its_faults_when_moved(fleet):
    body = fleet.get("/v1/components/history", params={"serial": "S-OLD"}).json()
    assert [(s["component"], s["to"]) for s in body["slots"]] == [
        ("node0041/gpu3", stamp(timedelta(hours=6))), ("node0042/gpu0", None)]
    assert [f["component"] for f in body["faults"]] == ["node0041/gpu3"]


def test_fleet_statistics_by_hand(fleet):
    window = {"since": iso(T0), "until": iso(T0 + timedelta(hours=10))}
    body = fleet.get("/v1/stats/fleet", params=window).json()
    # units: the four with a recorded state (no topology: node0041/gpu3, node0042/gpu0,
    # node0050, node0070); faults: gpu3 (+1 h → +6 h) and node0050 (+5 h, still down);
    # node0070 is only suspect.
    assert (body["units"], body["faults"], body["repaired"]) == (4, 2, 1)
    assert body["faults_per_1000_unit_days"] == pytest.approx(2 / (4 * 10 / 24) * 1000)
    assert body["mttr_hours"] == {"median": 5.0, "p90": 5.0}
    assert body["availability"] == pytest.approx(1 - (5 + 5) / 40)
    assert {row["cause"]: row["faults"] for row in body["by_cause"]} == {"gpu_fell_off_bus": 1, "power_supply": 1}
    gpus = fleet.get("/v1/stats/fleet", params={**window, "type": "gpu"}).json()
    assert (gpus["units"], gpus["faults"]) == (2, 1)
    serials = fleet.get("/v1/stats/fleet", params={**window, "unit": "serial"}).json()
    assert (serials["units"], serials["faults"]) == (2, 1)
    assert fleet.get("/v1/stats/fleet", params={**window, "unit": "serial", "type": "gpu"}).json()["units"] == 2
    assert fleet.get("/v1/stats/fleet", params={**window, "unit": "serial", "type": "nic"}).json()["units"] == 0


def test_goodput_of_the_job_by_hand(fleet):
    """`train`, 10 h: down 20 min (+1 h → restart +1 h 20), 30 min of work rolled back to
    the save at +30 min, two saves of 4 min. The model: MTBF 10 h, saves 150 min apart,
    4 min each, restart 20 min."""
    body = fleet.get("/v1/stats/goodput", params={"job": "train"}).json()
    assert body["wall_hours"] == pytest.approx(10)
    assert body["lost"] == pytest.approx({"downtime": 20 / 60, "rework": 0.5, "checkpoint": 8 / 60,
                                          "degradation": 0.0, "planned": 0.0})
    assert body["eta"] == pytest.approx((600 - 20 - 30 - 8) / 600)
    assert body["by_cause"] == [{"cause": "gpu_fell_off_bus", "hours": pytest.approx(50 / 60)}]
    assert body["model"]["eta"] == pytest.approx(1 / (1 + 4 / 150 + (75 + 20) / 600))
    cluster = fleet.get("/v1/stats/goodput").json()
    # two jobs: `train`, and `eval` that the power failure stopped; η is GPU-hour weighted
    per_job = {row["job"]: row for row in cluster["per_job"]}
    assert cluster["jobs"] == 2 and set(per_job) == {"train", "eval"}
    assert per_job["train"]["eta"] == pytest.approx(body["eta"])
    weights = {job: row["wall_hours"] * row["gpus"] for job, row in per_job.items()}
    assert cluster["eta"] == pytest.approx(sum(per_job[j]["eta"] * w for j, w in weights.items()) / sum(weights.values()))


@pytest.mark.parametrize(("path", "params", "needle"), [
    ("/v1/components", {"state": "broken"}, "state: broken"),
    ("/v1/components", {"type": "toaster"}, "type: toaster"),
    ("/v1/components/history", {}, "exactly one"),
    ("/v1/components/history", {"component": "nowhere"}, "no recorded state"),
    ("/v1/components/history", {"component": ""}, "component: String should have at least 1 character"),
    ("/v1/stats/fleet", {"since": "yesterday"}, "since"),
    ("/v1/stats/fleet", {"fdr": "2"}, "fdr"),
    ("/v1/stats/goodput", {"job": "nosuchjob"}, "nosuchjob"),
    ("/v1/stats/causes", {"job": "nosuchjob"}, "job: 'nosuchjob' has no stored events"),
])
def test_bad_queries_name_the_problem(fleet, path, params, needle):
    answer = fleet.get(path, params=params)
    assert 400 <= answer.status_code < 500 and needle in answer.json()["detail"]


def test_a_bad_query_parameter_is_named_as_sent(fleet):
    """As the routes' own checks name theirs ("since: …"), not FastAPI's `query.mtbf_hours`."""
    answer = fleet.get("/v1/stats/checkpoint", params={"mtbf_hours": "0"})
    assert answer.status_code == 422 and answer.json()["detail"] == "mtbf_hours: Input should be greater than 0"


def run_cli(client: httpx.Client, *args: str):
    return CliRunner().invoke(app, [*args, "--url", str(client.base_url)], env={"COLUMNS": "200"},
                              catch_exceptions=False)


def test_fleet_command_prints_states_mttr_and_offenders(fleet):
    result = run_cli(fleet, "fleet", "--since", iso(T0), "--until", iso(T0 + timedelta(hours=10)))
    assert result.exit_code == 0, result.output
    assert "node0050" in result.output and "drained" in result.output and "node0070" in result.output
    assert "gpu_fell_off_bus" in result.output and "5.00 h" in result.output  # its MTTR
    assert "75.000 %" in result.output  # availability 1 − 10/40
    # a rate from two faults, to three figures: 2 / (4 × 10 h / 24) × 1,000, not "1,200.000"
    assert re.search(r"faults / 1,000 unit-days\s+│\s+1,200\s", result.output), result.output
    assert "Benjamini-Hochberg" in result.output  # the notes say how it was counted
    # times as the on-call tables show them; four units are too few for an offender, said in words
    assert stamp(timedelta(hours=5, minutes=30)).replace("T", " ")[:19] in result.output and ".000000Z" not in result.output
    assert "Repeat offenders (worst first): no unit fails more often than chance explains" in result.output
    loose = run_cli(fleet, "fleet", "--fdr", "0.5", "--json")  # the notes name the fdr: the CLI can set it
    assert loose.exit_code == 0 and json.loads(loose.output)["stats"]["fdr"] == 0.5, loose.output
    assert f"{stamp(timedelta(0)).replace('T', ' ')[:19]} → {stamp(timedelta(hours=10)).replace('T', ' ')[:19]}" in result.output


def test_goodput_command_measured_beside_the_model(fleet):
    result = run_cli(fleet, "goodput", "--job", "train")
    assert result.exit_code == 0, result.output
    assert "90.3 %" in result.output  # (600 − 58) / 600
    assert f"{100 / (1 + 4 / 150 + 95 / 600):.1f} %" in result.output
    # one job's figures are its hours; all jobs' are GPU-hours, in both tables
    assert " h " in result.output and "GPU-h" not in result.output
    every = run_cli(fleet, "goodput")
    assert every.exit_code == 0 and "GPU-h" in every.output and "┃ hours" not in every.output, every.output
    bad = run_cli(fleet, "goodput", "--job", "nosuchjob")
    assert bad.exit_code == 1 and "nosuchjob" in bad.output


def test_the_topology_names_the_fleet_and_its_serials(client):
    topology = {"components": [
        {"id": f"node{h}", "type": "host", "host": f"node{h}"} for h in range(3)] + [
        {"id": f"node{h}/gpu0", "type": "gpu", "host": f"node{h}", "attrs": {"serial": f"165042000{h}"}} for h in range(3)],
        "links": []}
    assert client.put("/v1/topology", json=topology).status_code in (200, 201)
    client.post("/v1/events", json=[state("node1/gpu0", timedelta(hours=1), "faulty", cause="gpu_hbm"),
                                    state("node1/gpu0", timedelta(hours=4), "healthy")])
    healthy = client.get("/v1/components", params={"state": "healthy", "type": "gpu"}).json()["components"]
    assert [(c["component"], c["serial"]) for c in healthy] == [(f"node{h}/gpu0", f"165042000{h}") for h in range(3)]
    stats = client.get("/v1/stats/fleet", params={"type": "gpu", "since": iso(T0), "until": iso(T0 + timedelta(days=1))}).json()
    assert (stats["units"], stats["faults"], stats["mttr_hours"]["median"]) == (3, 1, 3.0)
    assert stats["availability"] == pytest.approx(1 - 3 / (3 * 24))


def test_titan_replayed_through_the_api_matches_the_pure_statistics(client):
    """Titan's GPU history posted as component_state events — each failure `faulty`, then
    `healthy` at the same instant (the replacement fitted at the removal time; the data has
    no repair times; equal times replay in arrival order) — and its 18,687 slots uploaded as
    the topology: the service answers what tests/test_fleet_stats.py checked by hand."""
    data = Path(__file__).parent / "data" / "reference"
    slots = (data / "titan-gpu-slots.txt").read_text().split()
    assert client.put("/v1/topology", json={"components": [{"id": s, "type": "host", "host": s} for s in slots],
                                            "links": []}).status_code in (200, 201)
    batch = []
    with open(data / "titan-gpu-failures.csv", newline="") as handle:
        for index, row in enumerate(csv.DictReader(handle)):
            time = row["time_utc"].replace(" ", "T") + "Z"
            cause = "gpu_hbm" if row["event"] == "DBE" else "gpu_fell_off_bus"
            batch += [{"time": time, "host": row["location"], "kind": "component_state", "id": f"titan-{index}-down",
                       "attrs": {"state": "faulty", "cause": cause}},
                      {"time": time, "host": row["location"], "kind": "component_state", "id": f"titan-{index}-up",
                       "attrs": {"state": "healthy"}}]
    assert client.post("/v1/events", json=batch).json()["accepted"] == 2 * 6_367
    stats = client.get("/v1/stats/fleet", params={"type": "host", "offenders": 100}).json()
    assert (stats["units"], stats["faults"]) == (18_687, 6_367)
    assert stats["faults_per_1000_unit_days"] == pytest.approx(0.169, abs=0.001)
    assert {row["cause"]: row["faults"] for row in stats["by_cause"]} == {"gpu_hbm": 4826, "gpu_fell_off_bus": 1541}
    offenders = stats["repeat_offenders"]
    assert (offenders[0]["component"], offenders[0]["faults"]) == ("c13-3c1s0n0", 106)
    assert (len(offenders), sum(row["faults"] for row in offenders)) == (45, 624)
