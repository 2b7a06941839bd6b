"""The agent's GPU and link health watch: real dcgm-exporter and lspci output → events on change only."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

from faultgraph.ingest.agent import health

DATA = Path(__file__).parent / "data"
AT = datetime(2026, 11, 29, 8, tzinfo=UTC)


def watch() -> health.HealthWatch:
    return health.HealthWatch("node0007", health.load_thresholds())


def test_dcgm_exposition_reads_clock_throttle_events_and_counters():
    samples = health.parse_dcgm((DATA / "dcgm_exporter_metrics.txt").read_text())
    assert set(samples) == {"0", "1"}
    gpu0 = samples["0"]
    assert gpu0.values["sm_clock_mhz"] == 139 and gpu0.values["pcie_replay"] == 0
    assert "temp_c" not in gpu0.values  # the blank-value sentinel (9223372036854775794) is not a reading
    assert gpu0.throttle == {"sw_thermal", "hw_thermal"}  # gpu_idle is not a slowdown


def test_a_throttle_is_posted_once_and_again_when_it_clears():
    w = watch()
    samples = health.parse_dcgm((DATA / "dcgm_exporter_metrics.txt").read_text())
    first = w.gpus(samples, AT)
    assert [(e["kind"], e["attrs"]["gpu"], e["attrs"]["throttle"]) for e in first] == [("gpu_perf", 0, ["hw_thermal", "sw_thermal"])]
    assert first[0]["severity"] == "warning"
    assert w.gpus(samples, AT + timedelta(seconds=10)) == []  # nothing changed: nothing posted
    samples["0"].throttle = set()
    cleared = w.gpus(samples, AT + timedelta(seconds=20))
    assert [e["attrs"]["throttle"] for e in cleared] == [[]]


def test_throttle_bitmask_names_only_slowdowns():
    assert health._bits(96) == {"sw_thermal", "hw_thermal"}  # dcgm-exporter PR #254's example value
    assert health._bits(0x1 | 0x4 | 0x8 | 0x80) == {"sw_power_cap", "hw_slowdown", "hw_power_brake"}


def test_error_counters_post_growth_past_their_threshold_only():
    w = watch()
    sample = health.GpuSample("3", "0000:5d:00.0", {"ecc_dbe": 0.0, "pcie_replay": 10.0})
    assert w.gpus({"3": sample}, AT) == []  # the first reading is the baseline
    sample.values.update(ecc_dbe=1.0, pcie_replay=60.0)
    [dbe] = w.gpus({"3": sample}, AT + timedelta(seconds=10))
    assert dbe["kind"] == "gpu_ecc" and dbe["attrs"]["type"] == "dbe" and dbe["attrs"]["count"] == 1
    sample.values.update(pcie_replay=200.0)
    [replay] = w.gpus({"3": sample}, AT + timedelta(seconds=20))
    assert replay["kind"] == "pcie_aer" and replay["attrs"]["bdf"] == "0000:5d:00.0"


def test_lspci_link_below_its_capability_is_reported_once():
    [link] = health.parse_lspci((DATA / "lspci_vv_a4000.txt").read_text())
    assert (link.bdf, link.width, link.max_width, link.speed_gts, link.max_speed_gts) == ("0004:01:00.0", 16, 16, 2.5, 16.0)
    assert link.degraded
    w = watch()
    [event] = w.links([link], AT)
    assert event["kind"] == "pcie_link" and event["attrs"]["bdf"] == "0004:01:00.0" and event["severity"] == "warning"
    assert w.links([link], AT + timedelta(seconds=10)) == []
    healthy = health.Link("0004:01:00.0", "gpu", 16.0, 16, 16.0, 16)
    assert [e["severity"] for e in w.links([healthy], AT + timedelta(seconds=20))] == ["info"]  # back to full speed


def test_nvidia_smi_csv_fallback():
    # Constructed in the documented `--format=csv` shape (header with units), not a captured output.
    text = ("index, pci.bus_id, clocks.sm [MHz], clocks.max.sm [MHz], power.draw [W], temperature.gpu, "
            "utilization.gpu [%], clocks_throttle_reasons.active, pcie.link.gen.current, pcie.link.gen.max, "
            "pcie.link.width.current, pcie.link.width.max\n"
            "2, 00000000:3A:00.0, 1140 MHz, 1980 MHz, 420.50 W, 86, 100 %, 0x0000000000000048, 5, 5, 8, 16\n")
    [(gpu, sample)] = health.parse_nvidia_smi(text).items()
    assert gpu == "2" and sample.pci == "0000:3a:00.0" and sample.throttle == {"hw_slowdown", "hw_thermal"}
    events = watch().gpus({gpu: sample}, AT)
    assert [e["kind"] for e in events] == ["gpu_perf", "pcie_link"]
    assert events[1]["attrs"]["width"] == 8 and events[1]["attrs"]["max_width"] == 16


def test_a_dead_exporter_and_missing_tools_cost_nothing():
    collector = health.HealthCollector(watch(), dcgm_url="http://127.0.0.1:9/metrics", timeout_s=0.5)
    assert isinstance(collector.poll(AT), list)


def test_the_collector_scrapes_a_real_exporter_endpoint_over_http():
    import http.server
    import threading

    text = (DATA / "dcgm_exporter_metrics.txt").read_bytes()

    class Exporter(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("content-type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(text)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Exporter)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        collector = health.HealthCollector(watch(), dcgm_url=f"http://127.0.0.1:{server.server_port}/metrics")
        first = [e for e in collector.poll(AT) if e["kind"] == "gpu_perf"]
        assert [(e["attrs"]["gpu"], e["attrs"]["throttle"]) for e in first] == [(0, ["hw_thermal", "sw_thermal"])]
        assert [e for e in collector.poll(AT + timedelta(seconds=10)) if e["kind"] == "gpu_perf"] == []
    finally:
        server.shutdown()
