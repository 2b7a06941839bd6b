"""The fleet page, the effective-training-time section of the reliability page and the
remediation section of the incident page, in a real headless browser against a live server
(dry-run remediation on) holding `day_of_training`, a repair shop's states, and one lemon."""

from collections.abc import Iterator
from datetime import timedelta

import pytest
from test_fleet_api import state
from test_remediation import wait_for
from test_stats_api import T0, day_of_training, iso, post_and_analyse
from test_web import browser, open_page, page, shot  # noqa: F401  (fixtures; the module skips without chromium)

from faultgraph.service.fleet.cli import _figures
from tests.conftest import Server, start_server


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Forty hosts watched from T0; node0013 fails six times in ten hours, three others
    once: the lemon stands out. The day of training first, so dry-run remediation drains
    node0041 and node0050 before the repair shop's word arrives."""
    env = {"FAULTGRAPH_REMEDIATE": "slurm", "FAULTGRAPH_REMEDIATE_TOLERANCE_S": "0", "FAULTGRAPH_REMEDIATE_EVERY_S": "0"}
    server = start_server(f"duckdb:///{tmp_path_factory.mktemp('fleetweb') / 'web.duckdb'}", env=env)
    post_and_analyse(server.client, day_of_training() + [
        {"time": iso(T0 + timedelta(hours=3)), "host": "node0040", "kind": "checkpoint_save", "job": "train",
         "attrs": {"step": 400, "duration_s": 240}}])
    wait_for(server.client, count=2)  # the drains of node0041 and node0050, before the repairs
    shop = [state(f"node{i:04d}", timedelta(0), "healthy") for i in range(100, 140)]
    for n in range(6):
        shop += [state("node0113", timedelta(hours=n + 0.5), "faulty", cause="system_memory"),
                 state("node0113", timedelta(hours=n + 1), "healthy")]
    for host in ("node0101", "node0102", "node0103"):
        shop += [state(host, timedelta(hours=2), "faulty", cause="ssd"), state(host, timedelta(hours=6), "healthy")]
    shop += [state("node0041/gpu3", timedelta(hours=6), "healthy", reason="board replaced"),
             state("node0050", timedelta(hours=5, minutes=30), "drained", reason="PSU"),
             state("node0070", timedelta(hours=9), "suspect", reason="slow allreduce")]
    post_and_analyse(server.client, shop)
    wait_for(server.client, count=3)  # and the resume of node0041
    yield server
    server.stop()


def test_fleet_page_shows_states_mttr_and_the_lemon(live, page):  # noqa: F811
    open_page(page, live.url + "/ui/fleet.html")
    rows = page.locator("#component-table tbody tr")
    states = {rows.nth(i).get_attribute("data-component"): rows.nth(i).get_attribute("data-state")
              for i in range(rows.count())}
    assert states == {"node0050": "drained", "node0070": "suspect"}
    assert page.locator("#count-drained .value").inner_text() == "1"
    assert page.locator("#count-faulty .value").inner_text() == "0"
    stats = live.client.get("/v1/stats/fleet").json()
    assert page.locator("#mttr-chart rect.column").count() == sum(1 for r in stats["by_cause"] if r["repaired"])
    assert "system_memory" in page.locator("#mttr").inner_text()
    offenders = page.locator("#offender-table tbody tr")
    assert offenders.count() == 1 and offenders.first.get_attribute("data-component") == "node0113"
    assert "6" in offenders.first.inner_text()
    assert page.locator("header a.active").inner_text() == "Fleet"
    rate = page.locator("#fault-rate .value").inner_text()  # a rate from counts, to three figures, as the CLI
    assert rate == _figures(stats["faults_per_1000_unit_days"]) and len(rate.replace(".", "").lstrip("0")) == 3, rate
    shot(page, "fleet.png")
    page.select_option("#type", "gpu")  # no GPU is out; the GPU fleet's own statistics
    page.wait_for_selector("body[data-drawn=gpu]")
    assert "Every component with a recorded state is healthy." in page.locator("#components").inner_text()
    gpus = live.client.get("/v1/stats/fleet", params={"type": "gpu"}).json()
    assert page.locator("#mttr-chart rect.column").count() == sum(1 for r in gpus["by_cause"] if r["repaired"]) == 1


def test_reliability_page_shows_measured_eta_beside_the_model(live, page):  # noqa: F811
    page.clock.set_fixed_time(T0 + timedelta(hours=11))
    open_page(page, live.url + "/ui/reliability.html")
    page.wait_for_selector("body[data-goodput-ready=true]")
    goodput = live.client.get("/v1/stats/goodput").json()
    assert page.locator("#eta-measured .value").inner_text() == f"{100 * goodput['eta']:.1f}%"
    assert page.locator("#eta-model .value").inner_text() == f"{100 * goodput['model']['eta']:.1f}%"
    assert page.locator("#lost-chart rect").count() == 5
    assert "gpu_fell_off_bus" in page.locator("#goodput-causes").inner_text()
    shot(page, "reliability-goodput.png")


def test_incident_page_shows_what_remediation_did(live, page):  # noqa: F811
    actions = live.client.get("/v1/remediation", params={"host": "node0041"}).json()["actions"]
    assert [(a["action"], a["outcome"]) for a in actions] == [("drain", "dry_run"), ("resume", "dry_run")]
    open_page(page, f"{live.url}/ui/incident.html?id={actions[0]['incident']}")
    page.wait_for_selector("body[data-remediation-ready=true]")
    rows = page.locator("#remediation-table tbody tr")
    assert rows.count() >= 1 and "drain" in rows.first.inner_text() and "node0041" in rows.first.inner_text()
    assert rows.first.get_attribute("data-outcome") == "dry_run"
    shot(page, "incident-remediation.png")
