"""Fail-slow end to end: simulated slow jobs replayed into the service (in this process, a real store) become one
degradation incident each with the right culprit; healthy jobs none; loss spikes roll back."""

from datetime import UTC, datetime, timedelta

import pytest

from faultgraph.attribution import stragglers
from faultgraph.simulate import evaluate, failslow


@pytest.mark.slow
def test_every_family_through_the_service(server):
    scenario = failslow.scenario_set(1, seed=11, minutes=60)
    sent = evaluate.replay(server.client, scenario)
    assert sent["accepted"] == sent["events"]
    found = evaluate.incidents(server.client)
    report = failslow.score(found, scenario.truth)
    families = report["families"]
    assert families["healthy"]["spurious"] == 0 and report["unmatched_degradations"] == 0
    slow = [name for name in families if name != "healthy"]
    assert sum(families[n]["missed"] for n in slow) == 0
    assert sum(families[n]["top1"] for n in slow) >= len(slow) - 1, report  # flaky NIC without counters may name the leaf
    assert sum(families[n]["slowdown_x2"] for n in slow) == len(slow)
    assert families["decoy_capped_gpu"]["decoy_blamed"] == 0
    degraded = server.client.get("/v1/incidents", params={"type": "degradation"}).json()["incidents"]
    assert {i["type"] for i in degraded} == {"degradation"} and len(degraded) == len(slow)
    assert all(0 < i["slowdown"] < 1 and i["interruption"]["gpu_hours_lost"] > 0 for i in degraded)
    assert server.client.get("/v1/incidents", params={"type": "interruption"}).json()["incidents"] == []
    assert server.client.get("/v1/incidents", params={"type": "slow"}).status_code == 400
    ledger = server.client.get("/v1/stats/causes").json()
    assert ledger["degradations"]["count"] == len(slow) and ledger["degradations"]["gpu_hours_wasted"] > 0


@pytest.mark.parametrize("throttle", [True, "sw_thermal_slowdown"])
def test_a_thermal_report_whose_throttle_is_a_flag_or_a_word_is_read(server, throttle):
    """`gpu_thermal`'s `throttle` is a flag or a word (SPEC §1), not `gpu_perf`'s list of
    reasons: on the slow GPU it names the heat as the cause, and the engine's pass goes on
    (it once raised on the flag, and every later pass with it: no incident opened anywhere)."""
    scenario = failslow.scenario_set(1, seed=3, minutes=60, families=("gpu_throttle_silent",))
    [truth] = scenario.truth
    host = truth["root_component"].split("/")[0]
    hot = {"time": truth["onset"], "host": host, "kind": "gpu_thermal", "component": truth["root_component"],
           "severity": "warning", "attrs": {"temp_c": 91, "throttle": throttle}}
    assert server.client.post("/v1/events", json=[hot]).json()["accepted"] == 1
    evaluate.replay(server.client, scenario)
    assert server.client.post("/v1/analyze").status_code == 200
    [incident] = server.client.get("/v1/incidents", params={"type": "degradation"}).json()["incidents"]
    assert (incident["root_cause"]["component"], incident["root_cause"]["cause"]) == (truth["root_component"], "gpu_thermal")


def test_a_loss_spike_rolls_back_to_the_last_checkpoint_before_it(server):
    t0 = datetime(2026, 11, 29, 8, tzinfo=UTC)
    job = {"id": "spiky", "start": t0.isoformat(), "gpus_per_host": 8, "hosts": ["node0000", "node0001"]}
    assert server.client.post("/v1/jobs", json=job).status_code < 300
    events = [
        {"time": (t0 + timedelta(minutes=10)).isoformat(), "host": "node0000", "kind": "checkpoint_save", "job": "spiky", "attrs": {"step": 900}},
        {"time": (t0 + timedelta(minutes=30)).isoformat(), "host": "node0000", "kind": "checkpoint_save", "job": "spiky", "attrs": {"step": 1000}},
        {"time": (t0 + timedelta(minutes=34)).isoformat(), "host": "node0000", "kind": "train_anomaly", "job": "spiky",
         "attrs": {"type": "loss_spike", "step": 1042, "value": 9.1, "baseline": 2.3}},
        {"time": (t0 + timedelta(minutes=40)).isoformat(), "host": "node0000", "kind": "checkpoint_save", "job": "spiky", "attrs": {"step": 1100}},
    ]
    assert server.client.post("/v1/events", json=events).status_code < 300
    server.client.post("/v1/analyze")
    [incident] = server.client.get("/v1/incidents", params={"job": "spiky"}).json()["incidents"]
    action = incident["action"]
    assert action["kind"] == "rollback" and action["checkpoint"]["step"] == 1000
    assert action["skip_steps"] == [1001, 1042 + 200] and "1001–1242" in action["detail"]


def _samples(levels: list[tuple[int, float]], jitter: float = 0.02, seed: int = 0) -> list[stragglers.Sample]:
    import random

    rng, out, t, step = random.Random(seed), [], datetime(2026, 11, 29, tzinfo=UTC), 0
    for count, ms in levels:
        for _ in range(count):
            step += 1
            value = ms * (1 + rng.gauss(0, jitter)) * (5 if step % 100 == 0 else 1)  # an eval step every 100
            t += timedelta(milliseconds=value)
            out.append(stragglers.Sample(step, t, value))
    return out


def test_warmup_eval_steps_and_jitter_are_not_slowdowns():
    warm = [(8, 20_000.0), (400, 10_000.0)]
    assert stragglers.episodes(_samples(warm, jitter=0.04)) == []


def test_a_sustained_slowdown_is_one_episode_that_ends_when_speed_returns():
    [episode] = stragglers.episodes(_samples([(8, 20_000.0), (150, 10_000.0), (80, 12_500.0), (150, 10_000.0)]))
    assert 155 <= episode.onset_step <= 165 and episode.end_step is not None and 235 <= episode.end_step <= 245
    assert abs(episode.slowdown - 0.2) < 0.03


def test_culprits_are_named_within_minutes_of_onset_in_event_time():
    scenario = failslow.scenario_set(1, seed=3, minutes=60, families=("gpu_throttle_silent", "slow_host", "pcie_degraded"))
    minutes = failslow.detection_minutes(scenario, horizon=15)
    assert all(m is not None and m <= 15 for found in minutes.values() for m in found), minutes


def test_a_health_report_that_arrives_after_the_verdict_is_weighed_again(server):
    """An agent's report can reach the service after the episode it explains was localised
    (a spool replayed after a network outage): the episode is localised again with it, the
    same incident, now naming the heat."""
    scenario = failslow.scenario_set(1, seed=3, minutes=60, families=("gpu_throttle_silent",))
    [truth] = scenario.truth
    evaluate.replay(server.client, scenario)
    assert server.client.post("/v1/analyze").status_code == 200
    [before] = server.client.get("/v1/incidents", params={"type": "degradation"}).json()["incidents"]
    assert before["root_cause"]["cause"] != "gpu_thermal"
    host = truth["root_component"].split("/")[0]
    hot = {"time": truth["onset"], "host": host, "kind": "gpu_thermal", "component": truth["root_component"],
           "severity": "warning", "attrs": {"temp_c": 91, "throttle": True}}
    assert server.client.post("/v1/events", json=[hot]).json()["accepted"] == 1
    assert server.client.post("/v1/analyze").status_code == 200
    [after] = server.client.get("/v1/incidents", params={"type": "degradation"}).json()["incidents"]
    assert after["id"] == before["id"]
    assert (after["root_cause"]["component"], after["root_cause"]["cause"]) == (truth["root_component"], "gpu_thermal")


def test_change_points_are_pelt_s_with_the_l2_cost():
    """The detector's C segmentation (a linear kernel) cuts series where ruptures' own
    `Pelt(model="l2")` does: random levels and jitter, the detector's penalty."""
    import numpy as np
    import ruptures

    rng = np.random.default_rng(7)
    for _ in range(40):
        n = int(rng.integers(2 * stragglers.MIN_SEGMENT, 300))
        values = rng.normal(0, 0.01, n)
        for cut in rng.integers(5, n - 5, int(rng.integers(0, 4))):
            values[cut:] += rng.normal(0, 0.05)
        segments = stragglers._segments(values)
        ends = ruptures.Pelt(model="l2", min_size=stragglers.MIN_SEGMENT, jump=1).fit(values.reshape(-1, 1)).predict(
            pen=stragglers.penalty(values))
        assert [end for _, end in segments] == ends


def test_background_passes_analyse_a_job_every_few_steps_and_at_once_when_asked_or_reported(engine):
    """A background pass analyses a job's series every `EVERY` steps (analysing every job at
    every pass grows with the number of jobs); an analysis asked for takes every job behind,
    even with nothing new; a health report or the job's end takes it at once. Seen in the
    degradation incident: its extent moves only when it is analysed."""
    import sqlalchemy as sa
    from conftest import store_events

    from faultgraph.service.cluster import Cluster
    from faultgraph.service.events import service as events_service
    from faultgraph.service.incidents import degradations, flows
    from faultgraph.service.incidents.models import incidents
    from faultgraph.service.jobs import service as jobs_service
    from faultgraph.service.jobs.models import JobIn

    start = datetime(2026, 11, 29, 8, tzinfo=UTC)
    job = JobIn(id="slow", start=start, gpus_per_host=2, hosts=["node0000", "node0001"])
    with engine.begin() as conn:
        jobs_service.create(conn, row=jobs_service.to_row(job, registered=start, topology_version=None))
    cluster = Cluster(engine)
    cluster.load()
    schedule = degradations.Schedule(every=4)

    def at(step: int) -> datetime:
        return start + timedelta(seconds=10 * step + (4 * (step - 40) if step > 40 else 0))

    def post(steps: range, *extra: dict) -> None:
        """Each rank's report of each step: rank 3 computes 40 % slower from step 41 on."""
        reports = [{"time": at(step).isoformat(), "host": f"node{rank // 2:04d}", "kind": "train_step", "job": "slow",
                    "rank": rank, "attrs": {"step": step, "duration_ms": (at(step) - at(step - 1)).total_seconds() * 1000,
                                            "compute_ms": 7000.0 * (1.4 if rank == 3 and step > 40 else 1.0)}}
                   for step in steps for rank in range(4)]
        store_events(engine, events_service.validate_all([*reports, *extra]), received=start, enrich=cluster.enrich)

    def analysed(*, asked: bool) -> datetime | None:
        flows.analyze_pending(engine, cluster, schedule=schedule, asked=asked)
        with engine.connect() as conn:
            last = conn.execute(sa.select(incidents.c.last).where(incidents.c.type == "degradation")).scalar()
        return None if last is None else last.replace(tzinfo=UTC)

    post(range(1, 71))
    assert analysed(asked=False) == at(70)  # a job this process has not analysed yet: at once
    moved = [70]
    for step in range(71, 83):
        post(range(step, step + 1))
        if analysed(asked=False) == at(step):
            moved.append(step)
        assert analysed(asked=False) == at(moved[-1])
    assert moved[1] <= 74 and moved[2:] == [moved[1] + 4, moved[1] + 8], moved
    assert schedule.analysed_through("slow") == moved[-1]
    post(range(83, moved[-1] + 5))  # up to the next step due
    assert analysed(asked=False) == at(moved[-1] + 4)
    step = moved[-1] + 5  # not due
    post(range(step, step + 1))
    assert analysed(asked=False) == at(step - 1)
    assert analysed(asked=True) == at(step)  # asked for, with no new event: the job behind is analysed
    hot = {"time": at(step + 1).isoformat(), "host": "node0001", "kind": "gpu_thermal", "job": "slow",
           "component": "node0001/gpu1", "severity": "warning", "attrs": {"temp_c": 91, "throttle": True}}
    post(range(step + 1, step + 2), hot)
    assert analysed(asked=False) == at(step + 1)  # a health report of the job: at once
    post(range(step + 2, step + 3), {"time": at(step + 2).isoformat(), "host": "node0000", "kind": "job_end", "job": "slow"})
    assert analysed(asked=False) == at(step + 2) and schedule.analysed_through("slow") is None  # ended: forgotten
