"""The attribution engine and each evidence rule, as pure functions over a real generated
64-host rail-optimized topology and a 512-rank job."""

import random
from datetime import UTC, datetime, timedelta

import pytest

from faultgraph.attribution import evidence
from faultgraph.attribution.classify import classify
from faultgraph.attribution.cluster import ClusterSnapshot
from faultgraph.attribution.engine import analyse
from faultgraph.attribution.evidence import Item
from faultgraph.attribution.generators import rail_optimized
from faultgraph.attribution.topology import Topology

T0 = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
HOSTS = [f"node{i:04d}" for i in range(64)]
JOB = {"id": "j1", "start": "2026-11-29T00:00:00Z", "gpus_per_host": 8, "hosts": HOSTS,
       "parallelism": {"tp": 8, "pp": 2, "dp": 32}}


@pytest.fixture(scope="module")
def topology() -> Topology:
    return Topology.from_dict(rail_optimized(64))


@pytest.fixture(scope="module")
def cluster(topology) -> ClusterSnapshot:
    return ClusterSnapshot(topology, [JOB])


class Stream:
    """Builds an event list the way the store hands it to the engine."""

    def __init__(self) -> None:
        self.events: list[dict] = []

    def add(self, kind: str, host: str, at: datetime, **fields) -> dict:
        event = {"id": f"e{len(self.events):05d}", "time": at, "host": host, "kind": kind,
                 "attrs": fields.pop("attrs", {}), **fields}
        self.events.append(event)
        return event

    def timeouts(self, at: datetime, *, skip: set[int] = frozenset(), seq: int = 808, behind: dict | None = None) -> None:
        for rank in range(512):
            if rank not in skip:
                attrs = {"op": "ALLREDUCE", "seq": (behind or {}).get(rank, seq), "timeout_ms": 600000, "elapsed_ms": 600000}
                self.add("nccl_timeout", HOSTS[rank // 8], at, rank=rank, attrs=attrs)

    def sorted(self) -> list[dict]:
        return sorted(self.events, key=lambda e: (e["time"], e["id"]))


def items(events, cluster) -> list[Item]:
    return [Item(e, classify(e), cluster.resolve(e, cluster.placement("j1")) or e["host"], e["time"]) for e in events]


def test_hardware_weighs_severity_and_closeness(cluster, topology):
    stream = Stream()
    near = stream.add("gpu_xid", "node0042", T0, severity="critical", attrs={"xid": 79, "pci": topology.attrs("node0042/gpu3")["pci"]})
    far = stream.add("gpu_xid", "node0001", T0 - timedelta(minutes=9), severity="critical", attrs={"xid": 79, "pci": topology.attrs("node0001/gpu0")["pci"]})
    mild = stream.add("pcie_aer", "node0002", T0, severity="warning", attrs={"severity": "corrected"})
    votes = {v.component: v.score for v in evidence.hardware(items(stream.events, cluster), T0, topology)}
    assert votes["node0042/gpu3"] == 1.0
    assert votes["node0001/gpu0"] < 0.3 * votes["node0042/gpu3"]
    assert votes["node0002"] < 0.2
    assert near["id"] != far["id"] != mild["id"]


def test_flapping_link_blames_the_cable(cluster, topology):
    stream = Stream()
    for minute in (0, 2, 4):
        stream.add("nic_link", "node0042", T0 + timedelta(minutes=minute), attrs={"device": "mlx5_3", "state": "down"})
        stream.add("nic_link", "node0042", T0 + timedelta(minutes=minute, seconds=30), attrs={"device": "mlx5_3", "state": "up"})
    [vote] = evidence.flapping(items(stream.events, cluster), topology)
    assert vote.component == "leaf-s1-r3~node0042/nic3" and vote.cause == "network_switch_cable"


def test_common_component_blames_the_shared_leaf(cluster, topology):
    stream = Stream()
    for host in HOSTS[32:40]:  # scalable unit 1, rail 5
        stream.add("nic_link", host, T0, severity="error", attrs={"device": "mlx5_5", "state": "down"})
    votes = evidence.common_component(items(stream.events, cluster), topology)
    assert [v.component for v in votes] == ["leaf-s1-r5"]
    assert votes[0].score > 1.0


def test_silence_points_at_the_quiet_rank_or_host(cluster):
    placement = cluster.placement("j1")
    stream = Stream()
    stream.timeouts(T0, skip={42 * 8 + 3})
    [vote] = evidence.silence(items(stream.events, cluster), placement)
    assert vote.component == "node0042/gpu3"
    stream = Stream()
    stream.timeouts(T0, skip=set(range(80, 88)))
    [vote] = evidence.silence(items(stream.events, cluster), placement)
    assert vote.component == "node0010"


def test_sequence_lag_finds_the_rank_that_never_arrived(cluster):
    stream = Stream()
    stream.timeouts(T0, behind={77: 807})
    [vote] = evidence.sequence_lag(items(stream.events, cluster), cluster.placement("j1"))
    assert vote.component == "node0009/gpu5" and vote.cause == "software_bug"


def test_peers_named_by_several_reporters(cluster, topology):
    stream = Stream()
    ip = topology.attrs("node0042/nic3")["ip"]
    for host in ("node0001", "node0002", "node0003"):
        stream.add("nccl_error", host, T0, attrs={"peer": ip, "transport": "ib"})
    votes = evidence.peers(items(stream.events, cluster), cluster, cluster.placement("j1"))
    assert [v.component for v in votes] == ["node0042/nic3"]


def test_gpu_off_the_bus_storm_is_one_incident_red_herring_ignored(cluster, topology):
    stream = Stream()
    stream.add("checkpoint_save", "node0000", T0 - timedelta(minutes=20), job="j1")
    xid = stream.add("gpu_xid", "node0042", T0, severity="critical", attrs={"xid": 79, "pci": topology.attrs("node0042/gpu3")["pci"]})
    stream.add("pcie_aer", "node0007", T0, severity="warning", attrs={"severity": "corrected"})  # red herring
    stream.add("gpu_ecc", "node0063", T0 + timedelta(seconds=30), severity="warning", attrs={"type": "sbe"})
    stream.timeouts(T0 + timedelta(minutes=10), skip={42 * 8 + 3})
    stream.add("job_restart", "node0000", T0 + timedelta(minutes=16), job="j1")
    [incident] = analyse(stream.sorted(), cluster)
    assert incident.root_cause["component"] == "node0042/gpu3"
    assert incident.root_cause["cause"] == "gpu_fell_off_bus" and incident.root_cause["evidence"][0] == xid["id"]
    assert incident.root_cause["confidence"] > 0.8
    assert incident.action["kind"] == "evict" and "replica 10" in incident.action["detail"]
    # one data-parallel replica (tp 8 × pp 2 = 16 GPUs) short for 4 h, against 512 GPUs × (16 min
    # to restart + 20 min rolled back)
    cost = incident.action["cost"]
    assert cost["evict_gpu_hours"] == 64 and cost["restart_gpu_hours"] == pytest.approx(512 * 36 / 60, abs=0.01)
    assert cost["inputs"]["rolled_back_minutes"] == 20 and cost["inputs"]["restart_minutes"] == 16
    assert incident.type == "interruption"
    assert incident.symptoms == 511 and incident.interruption["gpus"] == 512
    assert incident.interruption["end"] == T0 + timedelta(minutes=16)
    assert incident.interruption["gpu_hours_lost"] == pytest.approx(512 * 36 / 60, abs=0.01)


@pytest.mark.parametrize(("aer", "cause"), [("fatal", "gpu_fell_off_bus"), ("nonfatal", "faulty_gpu")])
def test_an_uncorrected_aer_on_a_gpu_is_that_gpus(cluster, topology, aer, cause):
    """A fatal AER from a GPU means its link is lost (the GPU off the bus, what Xid 79 then
    says); a non-fatal one, that the GPU's transaction failed: the GPU's fault either way."""
    pci = topology.attrs("node0042/gpu3")["pci"]
    stream = Stream()
    stream.add("pcie_aer", "node0042", T0, severity="critical" if aer == "fatal" else "error",
               attrs={"severity": aer, "bdf": pci + ".0", "pci": pci})
    stream.timeouts(T0 + timedelta(minutes=10), skip={42 * 8 + 3})
    [incident] = analyse(stream.sorted(), cluster)
    assert incident.root_cause["component"] == "node0042/gpu3"
    assert incident.root_cause["cause"] == cause


def test_leaf_switch_down_is_blamed_on_the_switch(cluster):
    stream = Stream()
    for host in HOSTS[32:64]:
        stream.add("nic_link", host, T0, severity="error", attrs={"device": "mlx5_2", "state": "down"})
    stream.timeouts(T0 + timedelta(minutes=10))
    [incident] = analyse(stream.sorted(), cluster)
    assert incident.root_cause["component"] == "leaf-s1-r2"
    assert incident.root_cause["category"] == "network"
    assert incident.action["kind"] == "restart"


def test_software_hang_with_no_hardware_trace(cluster):
    stream = Stream()
    stream.timeouts(T0, behind={300: 806})
    [incident] = analyse(stream.sorted(), cluster)
    assert incident.root_cause["component"] == "node0037/gpu4"
    assert incident.root_cause["category"] == "software" and incident.action["kind"] == "restart"


def test_planned_maintenance_is_planned(cluster):
    stream = Stream()
    stream.add("maintenance", "node0005", T0, attrs={"planned": True, "scope": "node0005", "text": "BIOS update"})
    stream.add("job_restart", "node0000", T0 + timedelta(minutes=30), job="j1")
    [incident] = analyse(stream.sorted(), cluster)
    assert incident.planned and incident.root_cause["cause"] == "planned_maintenance"
    assert incident.action["kind"] == "none"


def test_independent_faults_in_two_jobs_are_two_incidents(topology):
    job_b = {"id": "j2", "gpus_per_host": 8, "hosts": [f"node{i:04d}" for i in range(32, 64)]}
    job_a = {"id": "j1", "gpus_per_host": 8, "hosts": HOSTS[:32]}
    cluster = ClusterSnapshot(topology, [job_a, job_b])
    stream = Stream()
    stream.add("gpu_xid", "node0005", T0, severity="critical", attrs={"xid": 79, "pci": topology.attrs("node0005/gpu1")["pci"]})
    stream.add("gpu_xid", "node0040", T0 + timedelta(seconds=20), severity="critical", attrs={"xid": 48, "pci": topology.attrs("node0040/gpu6")["pci"]})
    incidents = {d.job: d.root_cause for d in analyse(stream.sorted(), cluster)}
    assert incidents["j1"]["component"] == "node0005/gpu1" and incidents["j2"]["component"] == "node0040/gpu6"
    assert incidents["j2"]["cause"] == "gpu_hbm"


@pytest.mark.parametrize("apart", [timedelta(minutes=45), timedelta(minutes=90), timedelta(days=3)],
                         ids=["back-to-back", "within-one-live-window", "days"])
def test_a_job_seen_only_by_its_symptoms_does_not_claim_its_hosts_later(topology, apart):
    """Jobs never registered are known by the hosts their timeouts came from. One window
    (a live pass's, up to the horizon and its margins; or a replay's, spanning days) holds
    two such jobs run one after the other on the same hosts, each hit by its own fault.
    Each fault is its own job's, not also the other job's."""
    stream = Stream()
    for job, at in (("gpt", T0 - apart), ("llama", T0)):
        stream.add("gpu_xid", "node0042", at, severity="critical", attrs={"xid": 79, "pci": topology.attrs("node0042/gpu3")["pci"]})
        for rank in range(64):
            stream.add("nccl_timeout", HOSTS[40 + rank // 8], at + timedelta(minutes=10), job=job, rank=rank,
                       attrs={"op": "ALLREDUCE", "seq": 808, "timeout_ms": 600000, "elapsed_ms": 600000})
    drafts = analyse(stream.sorted(), ClusterSnapshot(topology, []))
    assert sorted((d.job, d.start, d.symptoms) for d in drafts) == [("gpt", T0 - apart, 64), ("llama", T0, 64)]
    assert {d.root_cause["component"] for d in drafts} == {"node0042/gpu3"}


def test_arrival_order_does_not_matter(cluster, topology):
    stream = Stream()
    stream.add("gpu_xid", "node0042", T0, severity="critical", attrs={"xid": 79, "pci": topology.attrs("node0042/gpu3")["pci"]})
    stream.timeouts(T0 + timedelta(minutes=10), skip={42 * 8 + 3})
    shuffled = list(stream.events)
    random.Random(3).shuffle(shuffled)
    ordered = sorted(shuffled, key=lambda e: (e["time"], e["id"]))
    first, second = analyse(stream.sorted(), cluster), analyse(ordered, cluster)
    assert [(d.scope, d.start, d.root_cause) for d in first] == [(d.scope, d.start, d.root_cause) for d in second]


# ---------------------------------------------------------------- issue 12


def test_events_timed_on_receipt_attach_but_never_open(cluster):
    """A backfill's lines without a readable stamp land at their receipt: alone they open
    nothing; received with an incident they belong to it."""
    stream = Stream()
    received = {"time_source": "received"}
    for rank in range(64):
        stream.add("nccl_timeout", HOSTS[rank // 8], T0, rank=rank, job="j1",
                   attrs={"seq": 5, "elapsed_ms": 600000, "timeout_ms": 600000, **received})
    assert analyse(stream.sorted(), cluster) == []
    stream.add("job_fail", HOSTS[0], T0 + timedelta(seconds=30), job="j1")
    [incident] = analyse(stream.sorted(), cluster)
    assert incident.symptoms == 65 and incident.start == T0 - timedelta(minutes=10)


def test_clock_offsets_from_the_hang_every_rank_shares(cluster):
    from faultgraph.attribution import clock

    stream = Stream()
    stream.timeouts(T0)
    skewed = [{**e, "time": e["time"] + timedelta(seconds=95)} if e["host"] == "node0007" else e for e in stream.events]
    offsets = clock.offsets(skewed, {e["id"]: "j1" for e in skewed})
    assert set(offsets) == {"node0007"} and offsets["node0007"] == timedelta(seconds=95)
    assert not clock.on_host_clock({"kind": "job_fail", "attrs": {}}) and clock.on_host_clock({"kind": "gpu_xid", "attrs": {}})


def test_restart_is_recommended_when_cheaper_than_running_short(cluster):
    from faultgraph.attribution.pricing import price

    small = price(world=64, evicted=16, category="gpu", failed_at=T0, last_checkpoint=T0 - timedelta(minutes=5),
                  restarted_at=T0 + timedelta(minutes=5))
    assert small["cheaper"] == "restart" and small["restart_gpu_hours"] == pytest.approx(64 * 10 / 60, abs=0.01)
    large = price(world=16384, evicted=128, category="gpu", failed_at=T0, last_checkpoint=None, restarted_at=None)
    assert large["cheaper"] == "evict" and large["inputs"]["rolled_back_minutes"] == 15 and len(large["assumptions"]) == 3


@pytest.mark.slow
def test_a_week_of_benign_noise_on_2048_hosts_opens_nothing():
    """Correctable errors, row remaps pending a reset, link flaps ridden out, thermal
    warnings, agent restarts, hung-task warnings at realistic rates, on skewed clocks."""
    from faultgraph.ingest.parse import parse_line
    from faultgraph.simulate.postmortems import quiet_week

    week = quiet_week(2048, days=7, seed=1)
    snapshot = ClusterSnapshot(Topology.from_dict(week.topology), week.jobs)
    events = []
    for record in week.records:
        if record["type"] == "event":
            event = {**record["event"], "time": datetime.fromisoformat(record["event"]["time"].replace("Z", "+00:00"))}
        else:
            event = parse_line(record["line"], host=record["host"], source=record["source"],
                               received=datetime.fromisoformat(record["time"].replace("Z", "+00:00")))
            if event is None:
                continue
            event["id"] = f"line{len(events)}"
        events.append(event)
    kinds = {e["kind"] for e in events}
    assert {"nic_link", "host_heartbeat", "gpu_xid", "pcie_aer", "host_kernel"} <= kinds
    assert analyse(sorted(events, key=lambda e: (e["time"], e["id"])), snapshot) == []


def _nan_after_checkpoint(stream: Stream) -> None:
    """A checkpoint, then the job's loss goes NaN: one job-wide anomaly, posted by rank 0's host."""
    stream.add("checkpoint_save", "node0000", T0 - timedelta(minutes=20), job="j1", attrs={"step": 900})
    stream.add("train_anomaly", "node0000", T0, job="j1", attrs={"type": "nan", "step": 1042})


@pytest.mark.parametrize("logged_by", [None, 511])  # job-wide, or behind the last rank's [rank511]: prefix
def test_a_nan_names_no_part_on_weak_noise(cluster, logged_by):
    """Silent data corruption shows only in the numbers: neither the rank or host that logged
    the loss nor a correctable error nearby is the part, so none is named and the way to
    find it is said."""
    stream = Stream()
    _nan_after_checkpoint(stream)
    if logged_by is not None:  # spikes, then the NaN, all from the rank that computes the loss
        for minutes in (2, 1):
            stream.add("train_anomaly", "node0000", T0 - timedelta(minutes=minutes), job="j1",
                       attrs={"type": "loss_spike", "step": 1040, "value": 9.1, "baseline": 2.3})
        for event in stream.events:
            if event["kind"] == "train_anomaly":
                event |= {"host": HOSTS[logged_by // 8], "rank": logged_by}
    stream.add("pcie_aer", "node0009", T0 - timedelta(minutes=1), severity="warning",
               attrs={"severity": "corrected", "device": "0000:17:00.0"})
    [incident] = analyse(stream.sorted(), cluster)
    root = incident.root_cause
    assert root["component"] is None and root["cause"] == "silent_data_corruption" and root["confidence"] == 0
    assert incident.action["kind"] == "rollback" and incident.action["checkpoint"]["step"] == 900
    assert "dcgmi diag -r 3" in root["explanation"]


def test_a_nan_beside_a_gpus_uncorrectable_error_names_that_gpu(cluster):
    stream = Stream()
    _nan_after_checkpoint(stream)
    stream.add("gpu_xid", "node0003", T0 - timedelta(seconds=30), component="node0003/gpu2", severity="critical",
               attrs={"xid": 48})
    [incident] = analyse(stream.sorted(), cluster)
    assert incident.root_cause["component"] == "node0003/gpu2" and incident.root_cause["category"] == "gpu"


def test_a_hosts_machine_check_names_the_cause_its_silence_only_guesses(cluster):
    """A host that panicked on a machine check and went quiet: the MCE says CPU; the silence
    of its ranks and its lost heartbeat only guess (board, power) and must not outvote it."""
    stream = Stream()
    stream.add("host_mce", "node0005", T0 - timedelta(seconds=1), severity="critical",
               attrs={"text": "Machine check: Processor context corrupt"})
    stream.add("host_kernel", "node0005", T0, severity="critical", attrs={"text": "Kernel panic - not syncing: Fatal machine check"})
    stream.add("host_heartbeat", "node0005", T0 + timedelta(minutes=2), severity="critical", attrs={"state": "lost"})
    stream.timeouts(T0 + timedelta(minutes=10), skip=set(range(40, 48)))
    [incident] = analyse(stream.sorted(), cluster)
    assert incident.root_cause["component"] == "node0005" and incident.root_cause["cause"] == "cpu"


def test_a_dimms_uncorrectable_error_is_the_reason_its_machine_check_gives(cluster):
    """EDAC names a DIMM's uncorrectable error, then the kernel's machine-check headlines
    follow: the headline says how the host failed (read as `cpu`), the DIMM says why.
    (From an outside audit's scenario, 2026-12-03; it read `cpu` before.)"""
    stream = Stream()
    stream.add("host_mem_ecc", "node0025", T0, severity="critical", attrs={"text": "EDAC MC3: 1 UE memory read error"})
    for seconds, text in ((0.5, "event severity: fatal"), (1.0, "Machine check events logged")):
        stream.add("host_mce", "node0025", T0 + timedelta(seconds=seconds), severity="critical", attrs={"text": text, "cause": "cpu"})
    stream.timeouts(T0 + timedelta(minutes=10), skip=set(range(200, 208)))
    [incident] = analyse(stream.sorted(), cluster)
    assert (incident.root_cause["component"], incident.root_cause["cause"]) == ("node0025", "system_memory")


def test_the_drivers_xid_names_the_memory_a_processs_ecc_error_cannot(cluster):
    """CUDA's "uncorrectable ECC error encountered" from the rank cannot tell HBM from SRAM;
    the driver's Xid 94 names the SM's RAMs: the cause is the driver's."""
    stream = Stream()
    stream.add("gpu_xid", "node0003", T0, component="node0003/gpu2", severity="error",
               attrs={"xid": 94, "unit": "SM", "text": "Contained: SM (0x1). RST: No, D-RST: No"})
    stream.add("gpu_ecc", "node0003", T0 + timedelta(seconds=1), rank=26, severity="critical", attrs={"type": "dbe"})
    stream.timeouts(T0 + timedelta(minutes=10), skip={26})
    [incident] = analyse(stream.sorted(), cluster)
    assert incident.root_cause["component"] == "node0003/gpu2" and incident.root_cause["cause"] == "gpu_sram"


@pytest.mark.parametrize(("readings", "cause"), [
    ((("error", 93), ("critical", 97)), "gpu_thermal"),  # it overheated, then fell off the bus
    ((("warning", 86),), "gpu_fell_off_bus"),  # one warm reading is not why
])
def test_a_gpu_off_the_bus_takes_the_reason_it_reported_before(cluster, readings, cause):
    stream = Stream()
    for i, (severity, temp) in enumerate(readings):
        stream.add("gpu_thermal", "node0003", T0 - timedelta(minutes=4 - 2 * i), component="node0003/gpu2",
                   severity=severity, attrs={"temp_c": temp})
    for text in ("GPU has fallen off the bus.", "NVRM: GPU 0000:1b:00.0: GPU has fallen off the bus."):  # the driver says it twice
        stream.add("gpu_xid", "node0003", T0, component="node0003/gpu2", severity="critical", attrs={"xid": 79, "text": text})
    stream.timeouts(T0 + timedelta(minutes=10), skip={26})
    [incident] = analyse(stream.sorted(), cluster)
    assert incident.root_cause["component"] == "node0003/gpu2" and incident.root_cause["cause"] == cause


@pytest.mark.parametrize(("counter", "cause"), [
    ("symbol_error", "network_switch_cable"), ("link_error_recovery", "network_switch_cable"),
    ("link_downed", "network_switch_cable"), ("port_xmit_discards", "nic"),  # congestion, not the cable
])
def test_physical_layer_counters_point_at_the_cable(counter, cause):
    event = {"id": "e1", "kind": "nic_error", "host": "node0003", "attrs": {"device": "mlx5_2", "port": 1,
                                                                           "counter": counter, "count": 40}}
    assert classify(event).cause == cause


@pytest.mark.parametrize(("nic_too", "root", "cause"), [
    (True, "node0003/pciesw1", "io_expansion_board"),  # a GPU and the NIC beside it, at once
    (False, "node0003/gpu2", "gpu_fell_off_bus"),  # the GPU alone is the GPU's
])
def test_parts_lost_together_behind_one_pcie_switch_blame_the_switch(cluster, nic_too, root, cause):
    stream = Stream()
    stream.add("gpu_xid", "node0003", T0, component="node0003/gpu2", severity="critical", attrs={"xid": 79})
    if nic_too:
        stream.add("nic_error", "node0003", T0, component="node0003/nic2", severity="critical",
                   attrs={"device": "mlx5_2", "text": "device's health compromised - reached miss count"})
    stream.timeouts(T0 + timedelta(minutes=10), skip={26})
    [incident] = analyse(stream.sorted(), cluster)
    assert incident.root_cause["component"] == root and incident.root_cause["cause"] == cause


@pytest.mark.parametrize("chip_reported", [True, False])
def test_nvlink_errors_on_many_gpus_under_a_failing_nvswitch_blame_the_chip(cluster, chip_reported):
    """A baseboard NVSwitch's fatal SXid, then NVLink errors (XID 74) on every GPU of the host:
    the chip is the part to repair and the host is evicted like a GPU's. Without the chip's own
    report the GPUs' errors cannot tell the baseboard's four chips apart: a GPU stays blamed.
    (From an outside audit's scenario, 2026-12-03; it blamed node0011/gpu0 before.)"""
    stream = Stream()
    if chip_reported:
        stream.add("nvswitch_error", "node0011", T0, component="node0011/nvswitch2", severity="critical",
                   attrs={"sxid": 24007, "text": "Fatal, Link 28 sourcetrack timeout error"})
    for gpu in range(8):
        stream.add("gpu_xid", "node0011", T0 + timedelta(seconds=1), component=f"node0011/gpu{gpu}", severity="critical",
                   attrs={"xid": 74})
    stream.timeouts(T0 + timedelta(minutes=10), skip=set(range(88, 96)))
    [incident] = analyse(stream.sorted(), cluster)
    root, action = incident.root_cause, incident.action
    if chip_reported:
        assert (root["component"], root["cause"]) == ("node0011/nvswitch2", "nvswitch")
        assert (action["kind"], action["target"]) == ("evict", "node0011")
    else:
        assert root["component"].startswith("node0011/gpu") and root["cause"] == "nvlink"


def test_one_gpus_nvlink_error_inside_its_host_blames_that_gpu(cluster, topology):
    """An Xid 74 naming one link of a GPU to its baseboard's NVSwitch, no chip reporting: the
    event resolves to that NVLink, but a trace on the baseboard is no part to replace; the
    GPU is the root, evicted like any GPU's fault (the Xid in the evidence names the link)."""
    [link] = [link for link in topology.links_of("node0042/gpu3") if link["type"] == "nvlink"
              and link["b" if link["a"] == "node0042/gpu3" else "a"] == "node0042/nvswitch1"]
    stream = Stream()
    stream.add("gpu_xid", "node0042", T0, component=link["id"], severity="critical",
               attrs={"xid": 74, "link": link["attrs"]["gpu_links"][0], "pci": topology.attrs("node0042/gpu3")["pci"]})
    stream.timeouts(T0 + timedelta(minutes=10), skip={42 * 8 + 3})
    [incident] = analyse(stream.sorted(), cluster)
    assert (incident.root_cause["component"], incident.root_cause["cause"]) == ("node0042/gpu3", "nvlink")
    assert (incident.action["kind"], incident.action["target"]) == ("evict", "node0042")


def test_a_nics_own_report_of_a_failed_optic_evicts_its_host_and_names_the_link(cluster):
    """A port module event (the optic in error) and the link going down, both from the NIC:
    the host is evicted like any part's, and what to swap is the cable or transceiver on the
    NIC's link to its leaf, not the host's hardware at large."""
    stream = Stream()
    stream.add("nic_error", "node0042", T0, component="node0042/nic3", severity="error",
               attrs={"text": "Port module event[error]: module 0, Cable error, High Temperature",
                      "cause": "network_switch_cable", "role": "root"})
    stream.add("nic_link", "node0042", T0 + timedelta(seconds=1), component="node0042/nic3", severity="warning",
               attrs={"device": "mlx5_3", "state": "down", "cause": "network_switch_cable", "role": "root"})
    stream.timeouts(T0 + timedelta(minutes=10), skip={42 * 8 + 3})
    [incident] = analyse(stream.sorted(), cluster)
    assert (incident.root_cause["component"], incident.root_cause["cause"]) == ("node0042/nic3", "network_switch_cable")
    assert incident.action["kind"] == "evict" and incident.action["target"] == "node0042"
    assert "replace the cable or transceiver of leaf-s1-r3~node0042/nic3" in incident.action["detail"]


def test_a_rank_that_cannot_find_its_gpu_does_not_blame_its_own_code(cluster):
    """"invalid device ordinal" says a GPU the launch expected is not there: the rank's own
    GPU index names nothing and its code is not at fault; the host's silence is the lead."""
    stream = Stream()
    stream.add("host_heartbeat", "node0003", T0 - timedelta(minutes=8), severity="error", attrs={"state": "lost"})
    stream.add("job_fail", "node0003", T0 - timedelta(minutes=1), rank=31,
               attrs={"reason": "RuntimeError: CUDA error: invalid device ordinal", "cause": "unknown", "role": "root"})
    stream.timeouts(T0, skip=set(range(24, 32)))
    [incident] = analyse(stream.sorted(), cluster)
    assert incident.root_cause["component"] == "node0003" and incident.root_cause["cause"] != "software_bug"


def test_a_host_that_came_back_without_a_gpu_blames_that_gpu(cluster):
    """The host hung (ranks silent, heartbeat lost ten minutes before its peers timed out) and
    rebooted; at boot its GPU would not initialise. That GPU is why it went down, though its
    line comes long after the hang began."""
    stream = Stream()
    stream.add("host_heartbeat", "node0003", T0 - timedelta(minutes=8), severity="error", attrs={"state": "lost"})
    stream.timeouts(T0, skip=set(range(24, 32)))
    stream.add("host_kernel", "node0003", T0 + timedelta(seconds=90), component="node0003/gpu4", severity="critical",
               attrs={"text": "RmInitAdapter failed! (0x24:0x72:1568)", "cause": "faulty_gpu", "role": "root"})
    [incident] = analyse(stream.sorted(), cluster)
    assert incident.root_cause["component"] == "node0003/gpu4" and incident.root_cause["cause"] == "faulty_gpu"


@pytest.mark.parametrize(("hung_task", "cause"), [(True, "dependency"), (False, "chassis")])
def test_a_host_whose_kernel_talks_while_its_ranks_hang_is_not_a_dead_machine(cluster, hung_task, cause):
    """node0003's NFS client stops getting answers as the job hangs and its ranks fall silent.
    Its kernel's hung-task report two minutes on shows the machine was up: its silence names
    it, its own line says why (a service it needs). Without a sign of life, silence is read as
    the machine gone (`chassis`), which a line at the hang, maybe its last, does not overrule."""
    stream = Stream()
    hang = T0 - timedelta(minutes=10)
    stream.add("host_disk", "node0003", hang, severity="warning",
               attrs={"text": "nfs: server filer01 not responding, still trying", "cause": "dependency", "role": "root"})
    if hung_task:
        stream.add("host_kernel", "node0003", hang + timedelta(minutes=2), severity="warning",
                   attrs={"text": "INFO: task pt_main_thread:4242 blocked for more than 120 seconds.",
                          "cause": "unknown", "role": "root"})
    stream.timeouts(T0, skip=set(range(24, 32)))
    [incident] = analyse(stream.sorted(), cluster)
    assert (incident.root_cause["component"], incident.root_cause["cause"]) == ("node0003", cause)


def _host_down_then_gpu_missing(stream: Stream, *, restart_after: timedelta | None, fail_after: timedelta,
                                host: str = "node0003") -> None:
    """j1 restarted once before; node0003 hangs and reboots, its ranks' peers time out (hang
    at T0 − 10 min); at boot its GPU 4 will not initialise, and `fail_after` past T0 the last
    local rank of `host` cannot find its GPU and the job fails (after a restart, if any)."""
    stream.add("job_restart", "node0000", T0 - timedelta(hours=3), job="j1", attrs={"reason": "resumed"})
    stream.add("host_heartbeat", "node0003", T0 - timedelta(minutes=8), severity="error", attrs={"state": "lost"})
    stream.timeouts(T0, skip=set(range(24, 32)))
    stream.add("host_kernel", "node0003", T0 + timedelta(minutes=6), component="node0003/gpu4", severity="critical",
               attrs={"text": "RmInitAdapter failed! (0x24:0x72:1568)", "cause": "faulty_gpu", "role": "root"})
    if restart_after is not None:
        stream.add("job_restart", "node0000", T0 + restart_after, job="j1", attrs={"reason": "resumed"})
    rank = HOSTS.index(host) * 8 + 7
    stream.add("job_fail", host, T0 + fail_after, job="j1", rank=rank,
               attrs={"reason": "RuntimeError: CUDA error: invalid device ordinal", "cause": "unknown", "role": "root"})


@pytest.mark.parametrize("restart_after", [None, timedelta(minutes=7)])
def test_a_failure_on_the_host_still_at_fault_joins_its_incident(cluster, restart_after):
    """The GPU that would not come back after the reboot, and the job failing on it again
    (torchrun's own restart, or the scheduler's a minute before), are the same fault as the
    hang: one incident, blaming that GPU (Llama 3's "Faulty GPU"), down until a restart holds."""
    stream = Stream()
    _host_down_then_gpu_missing(stream, restart_after=restart_after, fail_after=timedelta(minutes=8))
    [incident] = analyse(stream.sorted(), cluster)
    assert incident.root_cause["component"] == "node0003/gpu4" and incident.root_cause["cause"] == "faulty_gpu"
    assert incident.interruption["end"] is None  # no restart after the failed one: still down
    assert ("failed on node0003 again" in incident.root_cause["explanation"]) == (restart_after is not None)


@pytest.mark.parametrize(("fail_after", "host"), [
    (timedelta(minutes=30), "node0003"),  # the restart ran 23 minutes: a new failure
    (timedelta(minutes=8), "node0005"),  # another host's GPU fell off the bus
])
def test_a_failure_after_a_restart_that_held_or_elsewhere_is_its_own_incident(cluster, fail_after, host):
    stream = Stream()
    _host_down_then_gpu_missing(stream, restart_after=timedelta(minutes=7), fail_after=fail_after, host=host)
    if host != "node0003":
        stream.add("gpu_xid", host, T0 + fail_after - timedelta(seconds=5), component=f"{host}/gpu1", severity="critical",
                   attrs={"xid": 79, "text": "GPU has fallen off the bus."})
    first, second = sorted(analyse(stream.sorted(), cluster), key=lambda d: d.start)
    assert first.interruption["end"] == T0 + timedelta(minutes=7)
    assert second.start >= T0 + fail_after - timedelta(seconds=5)
