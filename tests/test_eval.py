"""End to end: a simulated scenario with every fault type, replayed through the service's HTTP
API (the app in this process, a real store), must come back as one incident per fault with
the right root."""

import pytest

from faultgraph.simulate import evaluate
from faultgraph.simulate.scenarios import MECHANISMS, scenario_set


@pytest.mark.slow
def test_every_fault_type_is_attributed_through_the_service(server):
    scenario = scenario_set(40, seed=5, hosts=64)
    assert {fault["mechanism"] for fault in scenario.truth} == set(MECHANISMS)
    sent = evaluate.replay(server.client, scenario)
    assert sent["accepted"] == sent["events"] and sent["parsed"] > 0
    found = evaluate.incidents(server.client)
    assert {incident["topology_version"] for incident in found} == {1}  # analysed on the uploaded graph
    report = evaluate.score(found, scenario.truth).as_dict()
    total = report["mechanisms"]["all"]
    assert total["faults"] == 40
    assert total["top1_pct"] >= 95 and total["category_pct"] >= 98, report["misses"]
    assert total["missed"] == total["split"] == report["merged"] == 0
    assert total["decoy_blamed"] == 0


@pytest.mark.slow
def test_the_harder_families_are_attributed_through_the_service(server):
    """Postmortem families (software crash, dataloader deadlock, dead agent, AER on a NIC)
    and the classic ones, on skewed clocks in a spring month with benign noise around them."""
    from faultgraph.simulate.postmortems import FAMILIES, hard_set

    scenario = hard_set(26, seed=3, hosts=64)
    assert {fault["mechanism"] for fault in scenario.truth} == set(FAMILIES)
    evaluate.replay(server.client, scenario)
    report = evaluate.score(evaluate.incidents(server.client), scenario.truth).as_dict()
    total = report["mechanisms"]["all"]
    assert total["top1_pct"] >= 95 and total["category_pct"] >= 98, report["misses"]
    assert total["missed"] == total["split"] == report["merged"] == report["spurious"] == 0
    assert report["other_types"] == {}
    confident = report["reliability"][-1]
    assert confident["incidents"] and confident["accuracy_pct"] >= 90


def test_eval_replays_only_into_an_empty_server(live_server, monkeypatch):
    """A replay replaces the server's topology and jobs and scores all its incidents: eval
    refuses a server holding events, and does not take one from FAULTGRAPH_URL unasked."""
    from typer.testing import CliRunner

    from faultgraph.service.cli import app

    assert live_server.client.post("/v1/events", json=[{"time": "2026-11-29T08:00:00Z", "host": "node0001",
                                                        "kind": "job_start", "job": "prod"}]).status_code == 200
    before = live_server.client.get("/v1/events").json()["events"]
    refused = CliRunner().invoke(app, ["eval", "--faults", "2", "--hosts", "16", "--url", live_server.url])
    assert refused.exit_code == 2 and "already holds events" in refused.output, refused.output
    monkeypatch.setenv("FAULTGRAPH_URL", live_server.url)
    done = CliRunner().invoke(app, ["eval", "--faults", "2", "--hosts", "16"])
    assert done.exit_code == 0, done.output
    assert "confidence vs top-1 accuracy" in done.output and "None" not in done.output  # an empty bin's accuracy: —
    assert live_server.client.get("/v1/events").json()["events"] == before  # replayed into a throwaway server
