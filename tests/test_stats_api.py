"""Statistics over HTTP: MTBF, the interruption ledger and checkpoint economics from real
stored incidents (events posted, the engine attributing them), Llama 3's ledger replayed."""

import csv
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from faultgraph.attribution.generators import rail_optimized
from tests.conftest import REFERENCE_DATA, serve_in_process, start_server

T0 = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def day_of_training() -> list[dict]:
    """Ten hours of job `train` on node0040–41: an XID 79 at +1 h that 15 ranks time out on
    (restart 20 min later, last save 30 min before), a power failure at +5 h on node0050 that
    fails the small job `eval` running there (on an idle host it would be a fault, not an
    interruption: SPEC §5), planned maintenance of node0060 at +8 h, the job's end at +10 h."""
    batch = [
        {"time": iso(T0), "host": "node0040", "kind": "job_start", "job": "train"},
        {"time": iso(T0 + timedelta(minutes=30)), "host": "node0040", "kind": "checkpoint_save", "job": "train",
         "attrs": {"step": 100, "duration_s": 240}},
        {"time": iso(T0 + timedelta(hours=1)), "host": "node0041", "kind": "gpu_xid", "component": "node0041/gpu3",
         "severity": "critical", "attrs": {"xid": 79}, "message": "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."},
        {"time": iso(T0 + timedelta(hours=1, minutes=20)), "host": "node0040", "kind": "job_restart", "job": "train"},
        {"time": iso(T0 + timedelta(hours=5)), "host": "node0050", "kind": "host_power", "severity": "critical",
         "attrs": {"text": "PSU 1 failed"}},
        {"time": iso(T0 + timedelta(hours=5, seconds=40)), "host": "node0050", "kind": "job_fail", "job": "eval"},
        {"time": iso(T0 + timedelta(hours=8)), "host": "node0060", "kind": "maintenance",
         "attrs": {"planned": True, "scope": "node0060", "text": "firmware upgrade"}},
        {"time": iso(T0 + timedelta(hours=10)), "host": "node0040", "kind": "job_end", "job": "train"},
    ]
    for rank in range(16):
        if rank == 11:  # node0041/gpu3 itself fell silent
            continue
        batch.append({"time": iso(T0 + timedelta(hours=1, minutes=10)), "host": f"node{40 + rank // 8:04d}",
                      "kind": "nccl_timeout", "job": "train", "rank": rank,
                      "attrs": {"op": "ALLREDUCE", "seq": 808, "timeout_ms": 600000, "elapsed_ms": 600000}})
    return batch


def post_and_analyse(client, batch: list[dict]) -> None:
    answer = client.post("/v1/events", json=batch).json()
    assert answer["rejected"] == [], answer
    client.post("/v1/analyze")


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Iterator[httpx.Client]:
    """One server process holding `day_of_training`, shared by the tests that only read it
    (the CLI's among them, over HTTP)."""
    server = start_server(f"duckdb:///{tmp_path_factory.mktemp('trained') / 'faultgraph.duckdb'}")
    post_and_analyse(server.client, day_of_training())
    yield server.client
    server.stop()


@pytest.fixture(scope="module")
def empty(tmp_path_factory) -> Iterator[httpx.Client]:
    """One server (in this process) with nothing stored, for the tests that post nothing."""
    server = serve_in_process(f"duckdb:///{tmp_path_factory.mktemp('empty') / 'faultgraph.duckdb'}")
    yield server.client
    server.stop()


def test_mtbf_from_stored_incidents(trained):
    window = {"since": iso(T0), "until": iso(T0 + timedelta(hours=10))}
    body = trained.get("/v1/stats/mtbf", params=window).json()
    assert (body["scope"], body["interruptions"], body["observed_hours"]) == ("cluster", 2, 10.0)
    assert body["mtbf_hours"] == pytest.approx(5.0)
    # 2T/χ²(0.975, 6) and 2T/χ²(0.025, 4), χ² quantiles from tables: 14.4494, 0.484419
    assert body["ci95"] == pytest.approx([20 / 14.4494, 20 / 0.484419], rel=1e-4)
    assert body["between_failures"]["count"] == 1
    assert body["between_failures"]["mean_hours"] == pytest.approx(4.0)  # 09:00 → 13:00

    with_planned = trained.get("/v1/stats/mtbf", params={**window, "include_planned": "true"}).json()
    assert with_planned["interruptions"] == 3 and with_planned["mtbf_hours"] == pytest.approx(10 / 3)
    # without bounds the window is the event stream's: the job_start at T0 to the job_end at +10 h
    default = trained.get("/v1/stats/mtbf").json()
    assert default["since"] == "2026-11-29T08:00:00.000000Z" and default["observed_hours"] == pytest.approx(10.0)
    assert "since: first event, until: last event" in default["notes"][0]
    later = trained.get("/v1/stats/mtbf", params={"since": iso(T0 + timedelta(hours=2)), "until": window["until"]}).json()
    assert (later["interruptions"], later["observed_hours"]) == (1, 8.0)


def test_mtbf_per_type_and_per_job(trained):
    window = {"since": iso(T0), "until": iso(T0 + timedelta(hours=10))}
    gpu = trained.get("/v1/stats/mtbf", params={**window, "scope": "gpu"}).json()
    assert gpu["failures"] == 1 and gpu["units"] is None and gpu["unit_mtbf_hours"] is None
    assert any("no topology" in note for note in gpu["notes"])
    host = trained.get("/v1/stats/mtbf", params={**window, "scope": "host"}).json()
    assert host["failures"] == 1  # node0050's power; the planned maintenance is not a failure
    assert (host["interruptions"], host["mtbf_hours"]) == (1, 10.0)  # the rate of this type's failures
    assert trained.get("/v1/stats/mtbf", params={**window, "scope": "host", "include_planned": True}).json()["failures"] == 2
    assert trained.get("/v1/stats/mtbf", params={**window, "scope": "nic"}).json()["failures"] == 0

    job = trained.get("/v1/stats/mtbf", params={"scope": "job:train"}).json()
    assert (job["scope"], job["interruptions"], job["observed_hours"]) == ("job:train", 1, 10.0)
    assert trained.get("/v1/stats/mtbf", params={"scope": "train"}).json()["mtbf_hours"] == pytest.approx(10.0)
    clipped = trained.get("/v1/stats/mtbf", params={"scope": "train", "until": iso(T0 + timedelta(hours=4))}).json()
    assert (clipped["interruptions"], clipped["observed_hours"]) == (1, 4.0)


def test_mtbf_bad_parameters_are_named(empty):
    missing = empty.get("/v1/stats/mtbf", params={"scope": "no-such-job"})
    assert missing.status_code == 404 and "scope" in missing.json()["detail"]
    assert "project_to" in empty.get("/v1/stats/mtbf", params={"project_to": 16384}).json()["detail"]
    for params, name in (({"include_planned": "perhaps"}, "include_planned"), ({"scope": "gpu", "project_to": 0}, "project_to"),
                         ({"since": "yesterday"}, "since")):
        answer = empty.get("/v1/stats/mtbf", params=params)
        assert 400 <= answer.status_code < 500 and name in answer.json()["detail"], answer.text
    backwards = empty.get("/v1/stats/mtbf", params={"since": iso(T0), "until": iso(T0 - timedelta(hours=1))})
    assert backwards.status_code == 400 and "until" in backwards.json()["detail"]
    empty = empty.get("/v1/stats/mtbf").json()  # nothing stored yet: an answer, not an error
    assert empty["interruptions"] == 0 and empty["mtbf_hours"] is None and empty["observed_hours"] == 0.0


@pytest.mark.parametrize(("path", "params"), [
    ("/v1/stats/mtbf", {}), ("/v1/stats/mtbf", {"scope": "gpu"}), ("/v1/stats/mtbf", {"scope": "job:train"}),
    ("/v1/stats/fleet", {}), ("/v1/stats/goodput", {}),
])
def test_an_until_before_the_derived_since_is_named(trained, path, params):
    """Without `since` the window starts at the first event (the job's start for a job):
    an `until` before it is refused as a given `since` after `until` is, not answered
    with a window that ends before it begins."""
    for until in ("0001-01-01T00:00:00Z", iso(T0)):
        answer = trained.get(path, params={**params, "until": until})
        assert answer.status_code == 400, answer.text
        detail = answer.json()["detail"]
        assert "until must be after since" in detail and "2026-11-29T08:00:00.000000Z" in detail


@pytest.mark.parametrize("params", [{}, {"scope": "gpu"}])
def test_a_since_after_the_derived_until_is_named(trained, params):
    """Without `until` the window ends at the last event: a `since` after it was answered
    with a window whose since came after its until."""
    answer = trained.get("/v1/stats/mtbf", params={**params, "since": "2099-01-01T00:00:00Z"})
    assert answer.status_code == 400 and "the last event, where a window without until ends" in answer.json()["detail"]


def test_times_before_the_year_1000_keep_four_digits(trained):
    window = {"since": "0001-01-01T00:00:00Z", "until": "0999-12-31T23:59:59.5Z"}
    for path in ("/v1/stats/mtbf", "/v1/stats/causes", "/v1/stats/fleet"):
        body = trained.get(path, params=window).json()
        assert (body["since"], body["until"]) == ("0001-01-01T00:00:00.000000Z", "0999-12-31T23:59:59.500000Z"), path


def test_ledger_with_gpu_hours_and_oncall_confirmation(client):
    post_and_analyse(client, day_of_training())
    body = client.get("/v1/stats/causes").json()
    assert (body["unplanned"], body["planned"]) == (2, 1)
    rows = {row["cause"]: row for row in body["causes"]}
    assert set(rows) == {"gpu_fell_off_bus", "power_supply"}
    xid = rows["gpu_fell_off_bus"]
    assert (xid["category"], xid["count"], xid["share"]) == ("gpu", 1, 0.5)
    # 16 GPUs seen (15 timed-out ranks + the failed GPU) × (20 min down + 30 min since the save)
    assert xid["gpu_hours_lost"] == pytest.approx(16 * 50 / 60, abs=0.01)
    assert {row["category"]: row["count"] for row in body["categories"]} == {"gpu": 1, "host": 1}
    assert client.get("/v1/stats/causes", params={"job": "train"}).json()["unplanned"] == 1
    assert client.get("/v1/stats/causes", params={"since": iso(T0 + timedelta(hours=2))}).json()["unplanned"] == 1

    [power] = [i for i in client.get("/v1/incidents").json()["incidents"] if i["root_cause"]["cause"] == "power_supply"]
    confirmed = client.patch(f"/v1/incidents/{power['id']}", json={"root_cause": {"cause": "network_switch_cable",
                                                                               "component": "node0050/nic0~leaf-s0-r0"}})
    assert confirmed.status_code == 200, confirmed.text
    after = client.get("/v1/stats/causes").json()
    assert {row["cause"] for row in after["causes"]} == {"gpu_fell_off_bus", "network_switch_cable"}
    assert {row["category"] for row in after["categories"]} == {"gpu", "network"}
    window = {"since": iso(T0), "until": iso(T0 + timedelta(hours=10))}
    assert client.get("/v1/stats/mtbf", params={**window, "scope": "host"}).json()["failures"] == 0
    assert client.get("/v1/stats/mtbf", params={**window, "scope": "link"}).json()["failures"] == 1


def test_running_job_counts_up_to_now(client):
    started = datetime.now(UTC) - timedelta(hours=2)
    post_and_analyse(client, [{"time": iso(started), "host": "node0001", "kind": "job_start", "job": "live"}])
    body = client.get("/v1/stats/mtbf", params={"scope": "job:live"}).json()
    assert body["observed_hours"] == pytest.approx(2.0, abs=0.05) and body["interruptions"] == 0
    assert body["mtbf_hours"] is None and body["ci95"][1] is None and body["ci95"][0] > 0
    assert any("up to now" in note for note in body["notes"])


def test_a_registered_job_counts_from_its_registered_start(client):
    """A job registered by POST /v1/jobs (no job_start event) runs from its registered
    start, not from whatever event of it came first."""
    started = datetime.now(UTC) - timedelta(hours=3)
    job = {"id": "posted", "start": iso(started), "hosts": ["node0001"], "gpus_per_host": 8}
    assert client.post("/v1/jobs", json=job).status_code in (200, 201)
    post_and_analyse(client, [{"time": iso(started + timedelta(hours=2)), "host": "node0001", "kind": "checkpoint_save",
                               "job": "posted", "attrs": {"step": 10, "duration_s": 30.0}}])
    body = client.get("/v1/stats/mtbf", params={"scope": "job:posted"}).json()
    assert body["observed_hours"] == pytest.approx(3.0, abs=0.05)
    assert any("registered start" in note for note in body["notes"])
    assert client.get("/v1/stats/goodput", params={"job": "posted"}).json()["wall_hours"] == pytest.approx(3.0, abs=0.05)


# --- Llama 3 405B, 54 days (arXiv 2407.21783, Table 5) -----------------------------------

def _cause_event(cause: str, host: str) -> dict:
    """One event the engine attributes to `cause`, as a host agent would post it: catalogue
    XIDs for the GPU rows, the kind whose default cause it is, or the parser's `cause` tag."""
    gpu = f"{host}/gpu3"
    table = {
        "faulty_gpu": ("gpu_xid", gpu, {"xid": 46}, None),
        "gpu_hbm": ("gpu_xid", gpu, {"xid": 48}, None),
        "gpu_sram": ("gpu_xid", gpu, {"xid": 90}, None),
        "gpu_system_processor": ("gpu_xid", gpu, {"xid": 33}, None),
        "gpu_thermal": ("gpu_thermal", gpu, {"temp_c": 97}, "critical"),
        "silent_data_corruption": ("train_anomaly", None, {"type": "nan", "step": 1000}, None),
        "software_bug": ("host_oom", host, {"text": "Out of memory: Killed process"}, "critical"),
        "network_switch_cable": ("nic_link", f"{host}/nic0~leaf-s0-r0",
                                 {"device": "mlx5_0", "port": 1, "state": "down", "cause": "network_switch_cable"}, "error"),
        "host_maintenance": ("maintenance", host, {"planned": False, "scope": host}, None),
        "planned_maintenance": ("maintenance", host, {"planned": True, "scope": host}, None),
        "nic": ("nic_link", f"{host}/nic2", {"device": "mlx5_2", "port": 1, "state": "down"}, "error"),
        "nccl_watchdog": ("nccl_timeout", None, {"op": "ALLREDUCE", "seq": 9, "timeout_ms": 600000}, None),
        "ssd": ("host_disk", host, {"text": "I/O error"}, "critical"),
        "power_supply": ("host_power", host, {"text": "PSU failure"}, "critical"),
        "chassis": ("host_kernel", host, {"cause": "chassis"}, "critical"),
        "io_expansion_board": ("pcie_aer", f"{host}/pciesw0", {"severity": "fatal"}, "critical"),
        "dependency": ("host_kernel", host, {"cause": "dependency"}, "critical"),
        "cpu": ("host_mce", f"{host}/cpu0", {"text": "Machine check"}, "critical"),
        "system_memory": ("host_mem_ecc", host, {"text": "EDAC UE"}, "critical"),
    }
    kind, component, attrs, severity = table[cause]
    event = {"host": host, "kind": kind, "attrs": attrs}
    if component:
        event["component"] = component
    if severity:
        event["severity"] = severity
    if kind == "nccl_timeout":  # a hang nobody explains: the job's ranks time out, nothing else
        event |= {"job": "llama3-405b", "rank": 8}
    return event


def _llama3_rows() -> list[dict]:
    with open(REFERENCE_DATA / "llama3-interruptions.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def test_llama3_ledger_replays_through_the_api(client):
    rows = _llama3_rows()
    counts = [(row["cause"], int(row["count"])) for row in rows] + [("planned_maintenance", 47)]
    # each cause spread evenly over the 54 days, the causes interleaved
    causes = [cause for _, cause in sorted(((k + 0.5) / n, cause) for cause, n in counts for k in range(n))]
    span = timedelta(days=54)
    step = span / (len(causes) + 1)
    batch = []
    for index, cause in enumerate(causes):
        event = _cause_event(cause, f"node{index:04d}")
        event["time"] = iso(T0 + step * (index + 1))
        batch.append(event)
        if event["kind"] not in ("maintenance", "nccl_timeout"):  # it stopped the job on that host (SPEC §5)
            batch.append({"time": iso(T0 + step * (index + 1) + timedelta(seconds=30)), "host": event["host"],
                          "kind": "job_fail", "job": f"job-{index:04d}"})
    post_and_analyse(client, batch)
    window = {"since": iso(T0), "until": iso(T0 + span)}

    ledger = client.get("/v1/stats/causes", params=window).json()
    assert (ledger["unplanned"], ledger["planned"]) == (419, 47)
    got = {row["cause"]: row for row in ledger["causes"]}
    for row in rows:
        count = int(row["count"])
        assert got[row["cause"]]["count"] == count, row["cause"]
        assert got[row["cause"]]["category"] == row["category"]
        assert 100 * got[row["cause"]]["share"] == pytest.approx(100 * count / 419, abs=0.1)
        if row["cause"] != "faulty_gpu":  # printed 30.1% for 148/419 = 35.3%, the paper's slip
            assert 100 * got[row["cause"]]["share"] == pytest.approx(float(row["paper_percent"]), abs=0.1)
    categories = {row["category"]: row["count"] for row in ledger["categories"]}
    assert categories == {"gpu": 268, "software": 56, "network": 35, "maintenance": 32, "host": 21, "unknown": 7}

    cluster = client.get("/v1/stats/mtbf", params=window).json()
    assert cluster["interruptions"] == 419
    assert cluster["mtbf_hours"] == pytest.approx(54 * 24 / 419) and round(cluster["mtbf_hours"], 2) == 3.09
    assert cluster["ci95"][0] < cluster["mtbf_hours"] < cluster["ci95"][1]
    assert client.get("/v1/stats/mtbf", params={**window, "include_planned": True}).json()["interruptions"] == 466
    gpus = client.get("/v1/stats/mtbf", params={**window, "scope": "gpu"}).json()
    assert gpus["failures"] == 148 + 72 + 19 + 17 + 6  # the GPU rows whose root is a GPU itself


# --- checkpoint economics -----------------------------------------------------------------

def checkpoint(client, **params) -> dict:
    answer = client.get("/v1/stats/checkpoint", params=params)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_checkpoint_known_values(empty):
    # Daly 2006: 117, 57 and 9.1 min for M = 24 h, 6 h, 15 min with C = 5 min, R = 10 min
    for mtbf_hours, expected in ((24, 117), (6, 57), (0.25, 9.1)):
        body = checkpoint(empty, save_minutes=5, restart_minutes=10, mtbf_hours=mtbf_hours)
        assert body["daly_minutes"] == pytest.approx(expected, abs=0.5 if expected > 10 else 0.05)
        assert body["sources"]["mtbf_hours"] == "given"
    # Young 1974: √(2CM) ≈ 22 min for C = 2 min, M = 2 h; ≈ 43 min for C = 5, M = 186 min
    assert checkpoint(empty, save_minutes=2, restart_minutes=0, mtbf_hours=2)["young_minutes"] == pytest.approx(22, abs=0.5)
    young = checkpoint(empty, save_minutes=5, restart_minutes=0, mtbf_hours=3.1)
    assert young["young_minutes"] == pytest.approx(43, abs=0.5)
    assert young["interval_minutes"] == young["young_minutes"] and young["sources"]["interval_minutes"] == "Young's interval"
    # goodput for C = 5, t = 42, M = 180 min, by hand: 1 / (1 + 5/42 + (21 + R)/180)
    for restart, by_hand in ((30, 1 / (1 + 5 / 42 + 51 / 180)), (10, 1 / (1 + 5 / 42 + 31 / 180))):
        body = checkpoint(empty, save_minutes=5, restart_minutes=restart, mtbf_hours=3, interval_minutes=42)
        assert body["goodput"]["value"] == pytest.approx(by_hand)
        assert body["goodput"]["checkpoint_overhead"] == pytest.approx(5 / 42)
        assert body["goodput"]["rework"] == pytest.approx(21 / 180)
        assert body["goodput"]["restart"] == pytest.approx(restart / 180)
    assert by_hand > 1 / (1 + 5 / 42 + 51 / 180)  # a faster restart wins goodput


def test_checkpoint_simulation_beside_closed_form(empty):
    body = checkpoint(empty, save_minutes=5, restart_minutes=10, mtbf_hours=3, simulate=400, seed=7)
    simulated = body["simulated"]
    assert simulated["runs"] == 400 and simulated["distribution"] == "exponential"
    assert simulated["mean"] == pytest.approx(simulated["closed_form_exact"], abs=0.01)
    weibull = checkpoint(empty, save_minutes=5, restart_minutes=10, mtbf_hours=3, simulate=200,
                         distribution="weibull", shape=0.7, seed=7)["simulated"]
    assert weibull["distribution"] == "weibull" and weibull["shape"] == 0.7
    capped = checkpoint(empty, save_minutes=5, restart_minutes=10, mtbf_hours=3, simulate=1_000_000, seed=1)["simulated"]
    assert capped["requested_runs"] == 1_000_000 and 2 <= capped["runs"] < 1_000_000
    assert "capped" in capped["notes"][0]
    # restarts longer than the MTBF never complete: the simulation says so instead of hanging
    hopeless = empty.get("/v1/stats/checkpoint", params={"save_minutes": 5, "restart_minutes": 600,
                                                         "mtbf_hours": 0.1, "simulate": 100})
    assert hopeless.status_code == 400 and hopeless.json()["detail"].startswith("simulate:")


def test_checkpoint_needs_what_it_cannot_measure(empty):
    missing = empty.get("/v1/stats/checkpoint")
    assert missing.status_code == 400 and "save_minutes" in missing.json()["detail"]
    no_mtbf = empty.get("/v1/stats/checkpoint", params={"save_minutes": 5})
    assert no_mtbf.status_code == 400 and "mtbf_hours" in no_mtbf.json()["detail"]


def test_checkpoint_measures_what_is_not_given(trained):
    body = checkpoint(trained)
    assert body["save_minutes"] == pytest.approx(4.0)  # the save's duration_s = 240
    assert body["restart_minutes"] == pytest.approx(20.0)  # the XID's downtime; the power failure never resumed
    assert body["mtbf_hours"] == pytest.approx(5.0)  # 10 h of events, 2 unplanned interruptions
    assert body["sources"]["save_minutes"].startswith("measured")
    no_shape = trained.get("/v1/stats/checkpoint", params={"simulate": 10, "distribution": "weibull"})
    assert no_shape.status_code == 400 and "shape" in no_shape.json()["detail"]


def test_checkpoint_bad_parameters_are_named(empty):
    for params, name in (({"save_minutes": -1, "mtbf_hours": 3}, "save_minutes"),
                         ({"save_minutes": 5, "mtbf_hours": "nan"}, "mtbf_hours"),
                         ({"save_minutes": 5, "mtbf_hours": 3, "interval_minutes": 0}, "interval_minutes"),
                         ({"save_minutes": 5, "mtbf_hours": 3, "simulate": 1}, "simulate"),
                         ({"save_minutes": 5, "mtbf_hours": 3, "distribution": "gamma"}, "distribution"),
                         ({"save_minutes": 5, "mtbf_hours": 3, "restart_minutes": "soon"}, "restart_minutes")):
        answer = empty.get("/v1/stats/checkpoint", params=params)
        assert 400 <= answer.status_code < 500 and name in answer.json()["detail"], answer.text


# --- units from the topology (in-process: the topology API is wired elsewhere) ------------

def test_units_from_the_topology(server):
    local = server.client
    local.put("/v1/topology", json=rail_optimized(4)).raise_for_status()
    post_and_analyse(local, day_of_training())
    window = {"since": iso(T0), "until": iso(T0 + timedelta(hours=10))}
    gpu = local.get("/v1/stats/mtbf", params={**window, "scope": "gpu", "project_to": 16384}).json()
    assert (gpu["units"], gpu["failures"]) == (32, 1)
    assert gpu["unit_hours"] == pytest.approx(320.0) and gpu["unit_mtbf_hours"] == pytest.approx(320.0)
    assert gpu["projected_mtbf_hours"] == pytest.approx(320.0 / 16384)
    assert gpu["unit_ci95"][0] < 320.0 < gpu["unit_ci95"][1]
    assert local.get("/v1/stats/mtbf", params={**window, "scope": "nvswitch"}).json()["units"] == 16


# --- the CLI, against the same server ------------------------------------------------------

def test_cli_prints_the_answers(trained):
    from typer.testing import CliRunner

    from faultgraph.service.cli import app as cli

    runner = CliRunner()
    url = str(trained.base_url)
    window = ["--since", iso(T0), "--until", iso(T0 + timedelta(hours=10))]
    table = runner.invoke(cli, ["mtbf", "--url", url, *window])
    assert table.exit_code == 0, table.output
    assert "MTBF — cluster" in table.output and "5.00 h" in table.output
    as_json = runner.invoke(cli, ["mtbf", "--url", url, "--scope", "host", "--json", *window])
    assert as_json.exit_code == 0 and '"failures": 1' in as_json.output
    ledger = runner.invoke(cli, ["causes", "--url", url])
    assert ledger.exit_code == 0 and "gpu_fell_off_bus" in ledger.output and "50.0 %" in ledger.output
    quiet = runner.invoke(cli, ["causes", "--url", url, "--since", iso(T0 - timedelta(days=2)), "--until", iso(T0 - timedelta(days=1))])
    assert quiet.exit_code == 0 and quiet.output.startswith("No unplanned interruption in the window (0 planned apart)."), quiet.output
    economics = runner.invoke(cli, ["checkpoint", "--url", url, "--save-minutes", "5", "--mtbf-hours", "24",
                                    "--restart-minutes", "10"])
    assert economics.exit_code == 0 and "116.7 min" in economics.output  # Daly: 117
    too_many = runner.invoke(cli, ["checkpoint", "--url", url, "--simulate", "99999999"])  # help said "capped"
    assert too_many.exit_code == 2 and "--simulate" in too_many.output
    refused = runner.invoke(cli, ["checkpoint", "--url", url, "--save-minutes", "-1"])
    assert refused.exit_code == 1 and "save_minutes" in refused.output
    unreachable = runner.invoke(cli, ["causes", "--url", "http://127.0.0.1:9"], env={"FAULTGRAPH_TOKEN": "t"})
    assert unreachable.exit_code == 1 and "cannot reach" in unreachable.output
