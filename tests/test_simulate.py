"""The fault simulator: deterministic, every scenario type present, every line it writes
parsed by the real parsers into what it meant, and each mechanism's trace the way the
engine's evidence rules expect to find it (silence, sequence lag, peer IPs, …)."""

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import pytest
from typer.testing import CliRunner

from faultgraph.attribution.placement import Placement
from faultgraph.attribution.topology import Topology, split_link_id
from faultgraph.ingest.causes import CAUSE_CATEGORY
from faultgraph.ingest.parse import parse_line
from faultgraph.simulate.scenarios import (
    MECHANISMS,
    OUTCOMES,
    SCENARIO_TYPES,
    Scenario,
    scenario_set,
    storm,
)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    # 32 hosts in two scalable units of 16: two jobs of 14 hosts (112 ranks) and 2 spares each.
    return scenario_set(60, seed=11, hosts=32)


@pytest.fixture(scope="module")
def parsed(scenario: Scenario) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Every log record with what the parsers make of it."""
    out = []
    for record in scenario.records:
        if record["type"] == "log":
            event = parse_line(record["line"], host=record["host"], source=record["source"],
                               received=_time(record["time"]))
            out.append((record, event))
    return out


@pytest.fixture(scope="module")
def topology(scenario: Scenario) -> Topology:
    return Topology.from_dict(scenario.topology)


def _job(scenario: Scenario, job_id: str) -> dict[str, Any]:
    return next(j for j in scenario.jobs if j["id"] == job_id)


def _faults(scenario: Scenario, mechanism: str) -> list[dict[str, Any]]:
    found = [t for t in scenario.truth if t["mechanism"] == mechanism]
    assert found, f"no {mechanism} fault in the scenario"
    return found


def _events(parsed, kind: str, hosts: set[str], since: datetime, until: datetime) -> list[dict[str, Any]]:
    return [e for r, e in parsed
            if e is not None and e["kind"] == kind and r["host"] in hosts and since <= e["time"] <= until]


def _timeouts_of(parsed, scenario: Scenario, fault: dict[str, Any]) -> list[dict[str, Any]]:
    """The watchdog timeouts whose hang began within seconds of the fault, on its job."""
    hosts = set(_job(scenario, fault["job"])["hosts"])
    t = _time(fault["time"])
    return [e for e in _events(parsed, "nccl_timeout", hosts, t, t + timedelta(hours=1))
            if abs(e["time"] - timedelta(milliseconds=e["attrs"]["elapsed_ms"]) - t) < timedelta(seconds=5)]


# ---------------------------------------------------------------------------- the set


def test_same_seed_same_scenario_other_seed_other() -> None:
    a, b = scenario_set(14, seed=5, hosts=16), scenario_set(14, seed=5, hosts=16)
    assert a.records == b.records and a.truth == b.truth and a.jobs == b.jobs
    assert scenario_set(14, seed=6, hosts=16).records != a.records


def test_every_scenario_type_and_the_requested_count(scenario: Scenario) -> None:
    assert len(scenario.truth) == 60
    assert set(Counter(t["type"] for t in scenario.truth)) == set(SCENARIO_TYPES)
    assert {t["mechanism"] for t in scenario.truth} == set(MECHANISMS)
    # one pass over the types is enough to see each (a concurrent pair counts two)
    assert {t["type"] for t in scenario_set(len(SCENARIO_TYPES) + 1, seed=3, hosts=16).truth} == set(SCENARIO_TYPES)


def test_records_are_time_ordered_with_unique_event_ids(scenario: Scenario) -> None:
    times = [r["time"] for r in scenario.records]
    assert times == sorted(times)
    events = [r["event"] for r in scenario.records if r["type"] == "event"]
    assert len({e["id"] for e in events}) == len(events)
    assert all(e["time"] == r["time"] for r in scenario.records if r["type"] == "event" for e in [r["event"]])
    assert {r["source"] for r in scenario.records if r["type"] == "log"} == {"kmsg", "syslog", "train"}


def test_every_line_parses_into_what_it_meant(parsed) -> None:
    kinds: Counter[str] = Counter()
    for record, event in parsed:
        expect = record["expect"]
        if expect is None:
            assert event is None, record["line"]
            continue
        assert event is not None, record["line"]
        assert event["kind"] == expect["kind"], record["line"]
        assert event["host"] == record["host"]
        # classic syslog headers carry whole seconds only
        assert abs(event["time"] - _time(record["time"])) < timedelta(seconds=1), record["line"]
        if "rank" in expect:
            assert event.get("rank") == expect["rank"], record["line"]
        for key, value in expect["attrs"].items():
            assert event["attrs"].get(key) == value, (key, record["line"])
        kinds[event["kind"]] += 1
    assert {"gpu_xid", "gpu_ecc", "nvswitch_error", "nic_link", "nic_error", "pcie_aer", "nccl_timeout",
            "nccl_error", "host_mce", "host_kernel", "host_mem_ecc"} <= set(kinds)
    assert any(r["expect"] is None for r, _ in parsed)  # detail lines no rule should take


def test_events_are_spec_envelopes(scenario: Scenario) -> None:
    kinds = Counter()
    for record in scenario.records:
        if record["type"] != "event":
            continue
        event = record["event"]
        assert {"time", "host", "kind", "attrs", "id"} <= set(event)
        if event["kind"].startswith(("job_", "checkpoint_")):
            assert event["job"] in {j["id"] for j in scenario.jobs}
        kinds[event["kind"]] += 1
    assert {"job_start", "job_fail", "job_restart", "job_end", "checkpoint_save", "host_heartbeat",
            "maintenance", "gpu_thermal", "gpu_ecc", "nic_error"} <= set(kinds)


# ---------------------------------------------------------------------------- ground truth


def test_truth_names_real_components_jobs_and_causes(scenario: Scenario, topology: Topology) -> None:
    jobs = {j["id"]: j for j in scenario.jobs}
    for entry in scenario.truth:
        root = entry["root_component"]
        ends = split_link_id(root)
        if ends:
            assert topology.has_link(*ends) and root == "~".join(sorted(ends))
        else:
            assert root in topology, root
        assert entry["job"] in jobs
        assert (entry["cause"], entry["action"]) == OUTCOMES[entry["mechanism"]]
        assert entry["category"] == CAUSE_CATEGORY[entry["cause"]]
        host = topology.host_of(ends[1] if ends else root) or root
        if entry["mechanism"] != "leaf_switch_down":
            assert host in jobs[entry["job"]]["hosts"]
        for decoy in entry["decoys"]:
            assert decoy in topology and topology.host_of(decoy) not in jobs[entry["job"]]["hosts"]


def test_placement_of_every_job(scenario: Scenario) -> None:
    for job in scenario.jobs:
        placement = Placement.from_job(job)
        assert placement.world_size == 8 * len(job["hosts"])


def test_red_herrings_have_a_decoy_near_the_fault(scenario: Scenario) -> None:
    for entry in [t for t in scenario.truth if t["type"] == "red_herring"]:
        assert len(entry["decoys"]) == 1


def test_concurrent_pairs_are_two_jobs_at_nearly_the_same_time(scenario: Scenario) -> None:
    by_id = {t["id"]: t for t in scenario.truth}
    pairs = [t for t in scenario.truth if t["type"] == "concurrent"]
    assert pairs
    for entry in pairs:
        (other_id,) = entry["related"]
        other = by_id[other_id]
        assert other["related"] == [entry["id"]] and other["job"] != entry["job"]
        assert abs(_time(other["time"]) - _time(entry["time"])) < timedelta(seconds=30)


def test_each_fault_fails_the_job_then_restarts_it(scenario: Scenario) -> None:
    events = [r["event"] for r in scenario.records if r["type"] == "event"]
    for entry in scenario.truth:
        t = _time(entry["time"])
        after = [e for e in events if e.get("job") == entry["job"] and _time(e["time"]) > t]
        lifecycle = [e["kind"] for e in after if e["kind"] in ("job_fail", "job_restart")][:2]
        planned = entry["mechanism"] == "planned_maintenance"
        assert lifecycle[: 1 if planned else 2] == (["job_restart"] if planned else ["job_fail", "job_restart"])


# ---------------------------------------------------------------------------- mechanisms


def _world(scenario: Scenario, job_id: str) -> Placement:
    return Placement.from_job(_job(scenario, job_id))


def test_gpu_fell_off_bus_silences_its_rank_and_every_other_rank_times_out(scenario, parsed, topology) -> None:
    for fault in _faults(scenario, "gpu_fell_off_bus"):
        gpu = fault["root_component"]
        host = topology.host_of(gpu)
        t = _time(fault["time"])
        xids = _events(parsed, "gpu_xid", {host}, t - timedelta(seconds=1), t + timedelta(seconds=1))
        assert any(e["attrs"]["xid"] == 79 and e["attrs"]["pci"] == topology.attrs(gpu)["pci"] for e in xids)
        placement = _world(scenario, fault["job"])
        dead = placement.rank_at(host, topology.attrs(gpu)["index"])
        timeouts = _timeouts_of(parsed, scenario, fault)
        assert sorted(e["rank"] for e in timeouts) == [r for r in range(placement.world_size) if r != dead]
        for e in timeouts:
            assert 0 < e["attrs"]["elapsed_ms"] - e["attrs"]["timeout_ms"] < 1000
        assert len({e["attrs"]["seq"] for e in timeouts}) == 1


def test_hbm_error_names_the_gpu_and_its_rank_dies_on_the_ecc_error(scenario, parsed, topology) -> None:
    for fault in _faults(scenario, "hbm_uncontained_ecc"):
        gpu = fault["root_component"]
        host, t = topology.host_of(gpu), _time(fault["time"])
        near = (t - timedelta(seconds=1), t + timedelta(seconds=2))
        xids = {e["attrs"]["xid"] for e in _events(parsed, "gpu_xid", {host}, *near)}
        assert xids in ({95}, {48, 64})
        (ecc,) = _events(parsed, "gpu_ecc", {host}, *near)
        assert _world(scenario, fault["job"]).rank_to_gpu(ecc["rank"]) == gpu
        assert ecc["rank"] not in {e["rank"] for e in _timeouts_of(parsed, scenario, fault)}


def test_gpu_thermal_climbs_before_the_gpu_drops(scenario) -> None:
    for fault in _faults(scenario, "gpu_thermal"):
        t = _time(fault["time"])
        readings = [r["event"] for r in scenario.records if r["type"] == "event"
                    and r["event"]["kind"] == "gpu_thermal" and r["event"].get("component") == fault["root_component"]
                    and t - timedelta(minutes=10) <= _time(r["time"]) <= t]
        assert len(readings) >= 4
        temps = [e["attrs"]["temp_c"] for e in readings]
        assert temps == sorted(temps) and temps[-1] >= 95
        assert readings[-1]["attrs"]["throttle"] == "hw_thermal_slowdown"


def test_nvswitch_failure_is_fatal_sxids_on_that_switch(scenario, parsed, topology) -> None:
    for fault in _faults(scenario, "nvswitch_failure"):
        switch = fault["root_component"]
        host, t = topology.host_of(switch), _time(fault["time"])
        sxids = _events(parsed, "nvswitch_error", {host}, t - timedelta(seconds=1), t + timedelta(seconds=2))
        assert len(sxids) >= 2
        assert {f"{host}/nvswitch{e['attrs']['nvswitch']}" for e in sxids} == {switch}
        assert all(e["severity"] == "critical" for e in sxids)
        # NVLink errors on GPUs name ports cabled to that switch
        for xid in _events(parsed, "gpu_xid", {host}, t - timedelta(seconds=1), t + timedelta(seconds=2)):
            gpu = next(c for c in topology.host_components(host) if topology.attrs(c).get("pci") == xid["attrs"]["pci"])
            link = next(link for link in topology.links_of(gpu) if switch in (link["a"], link["b"]))
            assert xid["attrs"]["link"] in link["attrs"]["gpu_links"]
        assert len(_timeouts_of(parsed, scenario, fault)) == _world(scenario, fault["job"]).world_size


def test_nic_down_peers_name_its_ip(scenario, parsed, topology) -> None:
    for fault in _faults(scenario, "nic_down"):
        nic = fault["root_component"]
        t = _time(fault["time"])
        hosts = set(_job(scenario, fault["job"])["hosts"])
        errors = _events(parsed, "nccl_error", hosts, t, t + timedelta(seconds=20))
        peers = {e["attrs"]["peer"] for e in errors if "peer" in e["attrs"]}
        assert peers == {topology.attrs(nic)["ip"]}
        host = topology.host_of(nic)
        downs = _events(parsed, "nic_link", {host}, t - timedelta(seconds=1), t + timedelta(seconds=5))
        assert [e["attrs"]["device"] for e in downs] == [topology.attrs(nic)["netdev"]]


def test_flapping_cable_goes_down_and_up_repeatedly(scenario, parsed, topology) -> None:
    for fault in _faults(scenario, "flapping_cable"):
        leaf, nic = split_link_id(fault["root_component"])
        assert topology.type_of(leaf) == "switch" and topology.type_of(nic) == "nic"
        t = _time(fault["time"])
        links = _events(parsed, "nic_link", {topology.host_of(nic)}, t - timedelta(minutes=10), t + timedelta(minutes=2))
        states = [e["attrs"]["state"] for e in links if e["attrs"]["device"] == topology.attrs(nic)["netdev"]]
        assert states.count("down") >= 4 and states.count("up") >= 4
        peers = {e["attrs"].get("peer") for e in _events(parsed, "nccl_error", set(_job(scenario, fault["job"])["hosts"]),
                                                         t, t + timedelta(seconds=20))}
        assert topology.attrs(nic)["ip"] in peers


def test_leaf_switch_down_takes_every_nic_on_the_leaf_at_once(scenario, parsed, topology) -> None:
    for fault in _faults(scenario, "leaf_switch_down"):
        leaf = fault["root_component"]
        assert topology.attrs(leaf)["tier"] == "leaf"
        nics = [n for n in topology.neighbours(leaf) if topology.type_of(n) == "nic"]
        t = _time(fault["time"])
        # classic syslog headers round down to the second
        downs = [e for e in _events(parsed, "nic_link", {topology.host_of(n) for n in nics},
                                    t - timedelta(seconds=1), t + timedelta(seconds=1))
                 if e["attrs"]["state"] == "down"]
        assert sorted((e["host"], e["attrs"]["device"]) for e in downs) == sorted(
            (topology.host_of(n), topology.attrs(n)["netdev"]) for n in nics)


def test_host_crash_panics_then_all_its_ranks_are_silent(scenario, parsed, topology) -> None:
    events = [r["event"] for r in scenario.records if r["type"] == "event"]
    for fault in _faults(scenario, "host_crash"):
        host, t = fault["root_component"], _time(fault["time"])
        near = (t - timedelta(seconds=1), t + timedelta(seconds=1))
        assert _events(parsed, "host_mce", {host}, *near)
        assert [e["attrs"]["text"] for e in _events(parsed, "host_kernel", {host}, *near)] == ["Fatal machine check"]
        assert any(e["kind"] == "host_heartbeat" and e["host"] == host and e["attrs"]["state"] == "lost"
                   and t < _time(e["time"]) < t + timedelta(minutes=5) for e in events)
        placement = _world(scenario, fault["job"])
        ranks = {e["rank"] for e in _timeouts_of(parsed, scenario, fault)}
        errors = _events(parsed, "nccl_error", set(placement.hosts()), t, t + timedelta(seconds=30))
        aborted = {e["rank"] for e in errors}
        assert ranks | aborted == set(range(placement.world_size)) - set(placement.host_ranks(host))
        assert not ranks & aborted
        ips = {topology.attrs(f"{host}/nic{i}")["ip"] for i in range(8)}
        assert {e["attrs"]["peer"] for e in errors if "peer" in e["attrs"]} <= ips
        # nothing at all from the host until it has rebooted
        assert not [r for r, _ in parsed if r["host"] == host and t < _time(r["time"]) < t + timedelta(minutes=4)]


def test_software_hang_is_only_a_sequence_lag(scenario, parsed, topology) -> None:
    for fault in _faults(scenario, "software_hang"):
        gpu = fault["root_component"]
        placement = _world(scenario, fault["job"])
        lagging = placement.rank_at(topology.host_of(gpu), topology.attrs(gpu)["index"])
        timeouts = _timeouts_of(parsed, scenario, fault)
        assert len(timeouts) == placement.world_size
        seq = {e["rank"]: e["attrs"]["seq"] for e in timeouts}
        assert all(seq[lagging] < s for r, s in seq.items() if r != lagging)
        t = _time(fault["time"])
        hardware = [e for r, e in parsed if e is not None and e["kind"] not in ("nccl_timeout",)
                    and r["host"] == topology.host_of(gpu) and abs(e["time"] - t) < timedelta(seconds=30)
                    and e["severity"] in ("error", "critical")]
        assert not hardware


def test_planned_maintenance_is_announced_on_a_host_of_the_job(scenario) -> None:
    for fault in _faults(scenario, "planned_maintenance"):
        (event,) = [r["event"] for r in scenario.records if r["type"] == "event"
                    and r["event"]["kind"] == "maintenance" and r["time"] == fault["time"]]
        assert event["attrs"]["planned"] is True and event["host"] == fault["root_component"]
        assert fault["category"] == "maintenance" and fault["action"] == "none"


# ---------------------------------------------------------------------------- storage, storm, CLI


def test_save_and_load_round_trip(tmp_path, scenario: Scenario) -> None:
    scenario.save(tmp_path / "set")
    assert sorted(p.name for p in (tmp_path / "set").iterdir()) == [
        "jobs.json", "records.jsonl", "topology.json", "truth.json"]
    loaded = Scenario.load(tmp_path / "set")
    assert loaded == scenario
    with pytest.raises(ValueError):
        Scenario.load(tmp_path / "missing")


def test_storm_one_xid_then_every_other_rank_times_out() -> None:
    s = storm(seed=2, hosts=2048)
    (job,) = s.jobs
    assert len(job["hosts"]) == 2048 and job["parallelism"] == {"tp": 8, "pp": 16, "dp": 128}
    logs = [r for r in s.records if r["type"] == "log"]
    xids = [r for r in logs if r["expect"]["kind"] == "gpu_xid"]
    timeouts = [r for r in logs if r["expect"]["kind"] == "nccl_timeout"]
    assert len(xids) == 1 and len(timeouts) == 16_383
    (truth,) = s.truth
    host, gpu = truth["root_component"].split("/gpu")
    dead = Placement.from_job(job).rank_at(host, int(gpu))
    assert dead not in {r["expect"]["rank"] for r in timeouts}
    assert min(r["time"] for r in timeouts) > xids[0]["time"]
    # the collective that hung was entered up to 1.5 s before the GPU dropped
    gap = _time(min(r["time"] for r in timeouts)) - _time(xids[0]["time"])
    assert timedelta(minutes=10) - timedelta(seconds=2) < gap < timedelta(minutes=10, seconds=2)


def test_bad_sizes_are_value_errors() -> None:
    for kwargs in ({"hosts": 3}, {"n_faults": -1}, {"hosts": 16, "hosts_per_su": 1}, {"hosts": "64"}):
        with pytest.raises(ValueError):
            scenario_set(**{"n_faults": 1, **kwargs})
    with pytest.raises(ValueError):
        storm(hosts=100)


def test_cli_writes_a_scenario_set(tmp_path) -> None:
    from faultgraph.service.cli import app

    result = CliRunner().invoke(app, ["simulate", "--hosts", "16", "--faults", "13", "--seed", "4",
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    loaded = Scenario.load(tmp_path / "out")
    assert loaded == scenario_set(13, seed=4, hosts=16)


# ---------------------------------------------------------------- the harder families (simulate/postmortems.py)


@pytest.fixture(scope="module")
def hard() -> Scenario:
    from faultgraph.simulate.postmortems import hard_set

    return hard_set(26, seed=7, hosts=32)


def test_hard_set_every_family_in_a_spring_month_on_skewed_clocks(hard: Scenario) -> None:
    from faultgraph.simulate.postmortems import FAMILIES, hard_set

    assert {f["mechanism"] for f in hard.truth} == set(FAMILIES)
    assert 1 <= _time(hard.truth[0]["time"]).month <= 9
    skews = {r["host"]: r["clock_s"] for r in hard.records if r["type"] == "log" and "clock_s" in r}
    assert any(abs(s) >= 60 for s in skews.values()) and all(abs(s) <= 180 for s in skews.values())
    assert hard_set(26, seed=7, hosts=32).records == hard.records


def test_hard_set_lines_carry_their_hosts_clocks_and_parse(hard: Scenario) -> None:
    """Each stamped line says its host's time (true time + skew), glog with an unpadded month."""
    glog = [r for r in hard.records if r["type"] == "log" and "]:[E" in r["line"]]
    month = _time(hard.truth[0]["time"]).month
    assert glog and all(f"]:[E{month}" in r["line"] and f"]:[E0{month}" not in r["line"] for r in glog)
    for record in hard.records:
        if record["type"] != "log" or record["expect"] is None or record["source"] == "train":
            continue
        event = parse_line(record["line"], host=record["host"], source=record["source"], received=_time(record["time"]))
        assert event is not None and event["kind"] == record["expect"]["kind"], record["line"]
        stamped = _time(record["time"]) + timedelta(seconds=record.get("clock_s", 0))
        assert abs(event["time"] - stamped) < timedelta(seconds=1), record["line"]


def test_software_crash_is_an_exception_on_one_rank_then_the_others_time_out(hard: Scenario) -> None:
    for fault in [f for f in hard.truth if f["mechanism"] == "software_crash"]:
        at = _time(fault["time"])
        raised = [r for r in hard.records if r["type"] == "log" and r["expect"] and r["expect"]["kind"] == "job_fail"
                  and abs(_time(r["time"]) - at) < timedelta(seconds=5)]
        assert len(raised) == 1
        event = parse_line(raised[0]["line"], host=raised[0]["host"], received=at)
        assert event["kind"] == "job_fail" and event["rank"] == raised[0]["expect"]["rank"]


def test_quiet_week_has_no_fault_and_benign_events_at_the_stated_rates() -> None:
    from faultgraph.simulate.postmortems import BENIGN_PER_HOST_DAY, quiet_week

    week = quiet_week(64, days=7, seed=2)
    assert week.truth == []
    expected = 64 * 7 * sum(BENIGN_PER_HOST_DAY.values())
    benign = sum(1 for r in week.records if r["type"] == "event" and r["event"]["kind"] in ("gpu_ecc", "nic_error", "gpu_thermal"))
    assert benign > 0.3 * expected  # the DCGM/port-counter share of them, posted as events
