"""Diagnosing pasted logs (SPEC §5): real incidents from public threads, one test each;
the paste reader and rules on real lines; the route and the command end to end."""

import json
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import InProcessServer, serve_in_process, store_token
from hypothesis import given, settings
from hypothesis import strategies as st
from test_auth import bearer, cli

from faultgraph.attribution import diagnose as reasoning
from faultgraph.attribution.generators import rail_optimized
from faultgraph.attribution.resolve import Resolver
from faultgraph.attribution.topology import Topology
from faultgraph.ingest import paste
from faultgraph.service import store
from faultgraph.service.auth import service as tokens
from faultgraph.service.diagnose import service

DATA = Path(__file__).parent / "data" / "diagnose"
CASES = tomllib.loads((DATA / "cases.toml").read_text())
RECEIVED = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
# Where the answer is wrong, and why (README "Diagnosing pasted logs" reports them):
KNOWN_MISSES = {
    ("pytorch-87995-dataloader-pyspy", "place"): "the stack names no rank: the reporter knew it was rank 0",
    ("nccl-426-roce-gid-index", "category"): "read as a network fault; the thread's fix was RoCE configuration (GID index)",
    ("openstreetmap-89-uncorrectable-mce", "category"): "the server management log's MCE line matches no rule: no answer",
    ("openstreetmap-89-uncorrectable-mce", "place"): "the server management log's MCE line matches no rule: no answer",
}


def answer(lines: list, **body) -> dict:
    return service.diagnose({"lines": lines, **body}, received=RECEIVED)


def case(name: str) -> tuple[dict, list[str], dict]:
    spec = CASES[name]
    lines = (DATA / f"{name}.log").read_text().split("\n")[:-1]
    return spec, lines, answer(lines, host=spec.get("host"))


def expect(name: str, part: str) -> list:
    reason = KNOWN_MISSES.get((name, part))
    return [pytest.mark.xfail(reason=reason, strict=True)] if reason else []


@pytest.mark.parametrize("name", [pytest.param(n, marks=expect(n, "category")) for n in CASES])
def test_category_of_each_real_incident(name):
    spec, lines, result = case(name)
    assert result["incidents"], "no answer"
    top = result["incidents"][0]
    assert top["root_cause"]["category"] == spec["category"], top["root_cause"]
    assert top["root_cause"]["cause"] == spec["cause"]
    # It quotes the lines that decided it, verbatim, numbered from 1.
    assert top["lines"] and all(lines[q["line"] - 1] == q["text"] for q in top["lines"])


@pytest.mark.parametrize("name", [pytest.param(n, marks=expect(n, "place")) for n in CASES if "place" in CASES[n]])
def test_place_of_each_real_incident(name):
    spec, _, result = case(name)
    assert result["incidents"], "no answer"
    top = result["incidents"][0]
    # A place on no named host is no component (null); the answer still names it, in what is missing.
    assert spec["place"] in (top["root_cause"]["component"] or " ".join(top["missing"]))


def test_every_case_has_its_source_and_lines():
    for name, spec in CASES.items():
        assert spec["source"].startswith("https://github.com/"), name
        assert (DATA / f"{name}.log").read_text().strip(), name
        assert spec["category"] in ("gpu", "host", "network", "software", "maintenance", "unknown")


# ---------------------------------------------------------------- reading a paste

def test_launcher_prefixes_give_rank_host_and_local_gpu():
    # real lines: hiyouga/LlamaFactory#7396, vllm-project/vllm#5484, pytorch/pytorch#68893, modelscope/ms-swift#10183
    lines = paste.read_lines([
        "[80746] [rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.",
        "(RayWorkerWrapper pid=4009) [rank1]:[E ProcessGroupNCCL.cpp:577] [Rank 1] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
        "[0m ip-172-31-0-137:14605:14673 [0] NCCL INFO NET/Socket : Using [0]ens5:172.31.0.137<0> [1]veth75fa783:fe80::14ad:64ff:fe64:b31e%veth75fa783<0>",
        "2026-09-18 19:29:24 [rank3]:[E918 19:29:24.436955737 ProcessGroupNCCL.cpp:689] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7219, OpType=BROADCAST, NumelIn=64, NumelOut=64, Timeout(ms)=3000000) ran for 3000097 milliseconds before timing out.",
    ], received=RECEIVED)
    assert [line.rank for line in lines] == [0, 1, None, 3]
    assert lines[0].text.startswith("[E321 02:07:08")
    assert (lines[2].host, lines[2].local_rank) == ("ip-172-31-0-137", 0)
    assert lines[3].stamped and lines[3].time == datetime(2026, 9, 18, 19, 29, 24, tzinfo=UTC)


def test_order_is_the_clock_of_a_paste_without_timestamps():
    raw = (DATA / "nccl-1488-nvls-fabricmanager-restart.log").read_text().split("\n")[:-1]
    times = [line.time for line in paste.read_lines(raw, received=RECEIVED)]
    assert times == sorted(times) and len(set(times)) == len(times) and times[-1] < RECEIVED


def test_blocks_traceback_terminate_hung_task():
    # real lines: NVIDIA/nccl#1769 (a [rankN]: prefixed traceback), CompVis/latent-diffusion#17
    read = paste.read([
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/sharedfs/mihir/tmp/verl/tmp2.py", line 27, in <module>',
        "[rank0]:     main()",
        '[rank0]:   File "/sharedfs/mihir/tmp/verl/tmp2.py", line 20, in main',
        "[rank0]:     dist.all_reduce(tensor)",
        "[rank0]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.26.2",
        "terminate called after throwing an instance of 'c10::Error'",
        "  what():  CUDA error: initialization error",
    ], received=RECEIVED)
    traceback, terminate = read.blocks
    assert traceback.kind == "traceback" and traceback.attrs["exception"] == "torch.distributed.DistBackendError"
    assert traceback.frames == ["/sharedfs/mihir/tmp/verl/tmp2.py:27 in <module>", "/sharedfs/mihir/tmp/verl/tmp2.py:20 in main"]
    assert [e["id"] for e in read.events] == ["line-5"]  # one event for the traceback, as live ingest makes it
    assert read.events[0]["rank"] == 0
    assert terminate.kind == "terminate" and terminate.attrs == {"exception": "c10::Error", "text": "CUDA error: initialization error"}
    hung = paste.read((DATA / "parallelcluster-1150-nfs-hung-task.log").read_text().split("\n")[:-1]).blocks
    assert [b.kind for b in hung] == ["hung_task"] and "pagevec_lookup_tag" in hung[0].frames
    assert hung[0].lines[0].host == "ip-172-31-27-211" and len(hung[0].lines) == 9


# ---------------------------------------------------------------- the rules on real lines

ACE_348 = [  # ai2cm/ace#348: a 4-GPU node, ranks 3, 2, 1 time out; rank 0 does not
    "2024-05-07 15:51:09,140 - root - INFO - Starting training step on epoch 3",
    "[E ProcessGroupNCCL.cpp:457] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1132079, OpType=ALLREDUCE, NumelIn=304640, NumelOut=304640, Timeout(ms)=1800000) ran for 1800035 milliseconds before timing out.",
    "[E ProcessGroupNCCL.cpp:457] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1132079, OpType=ALLREDUCE, NumelIn=304640, NumelOut=304640, Timeout(ms)=1800000) ran for 1800558 milliseconds before timing out.",
    "[E ProcessGroupNCCL.cpp:457] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1132079, OpType=ALLREDUCE, NumelIn=304640, NumelOut=304640, Timeout(ms)=1800000) ran for 1800946 milliseconds before timing out.",
    "[E ProcessGroupNCCL.cpp:471] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
]


def test_the_rank_that_did_not_time_out_is_named():
    top = answer(ACE_348)["incidents"][0]
    # no host places rank 0: no component, but the explanation and the hint name the rank
    assert top["root_cause"]["component"] is None and top["root_cause"]["rule"] == "silent_rank"
    assert top["root_cause"]["explanation"].startswith("rank 0 is the only one of 4")
    assert any("for rank0" in hint for hint in top["missing"]) and top["candidates"] == []
    assert [q["line"] for q in top["lines"]] == [2, 3, 4]
    assert any("py-spy dump" in hint for hint in top["missing"])
    placed = answer(ACE_348, job={"hosts": ["nid001234"], "gpus_per_host": 4})["incidents"][0]
    assert placed["root_cause"]["component"] == "nid001234/gpu0" and placed["interruption"]["gpus"] == 4


@pytest.mark.parametrize("line, peer", [
    ("node5:240:240 [6] misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849> returned 113(No route to host) errno 115(Operation now in progress)", "10.0.0.4"),  # sgl-project/sglang#3820
    ("tj1-asr-train-v100-13:941227:943077 [0] include/socket.h:390 NCCL WARN Connect to 10.38.10.112<21724> failed : Connection refused", "10.38.10.112"),  # espnet/espnet#1940
])
def test_a_refused_or_unroutable_peer_is_that_peers_network(line, peer):
    top = answer([line])["incidents"][0]
    assert (top["root_cause"]["component"], top["root_cause"]["category"]) == (peer, "network")
    assert any(peer in hint for hint in top["missing"])


def test_ecc_on_one_local_rank_is_that_gpu():
    # real line: kohya-ss/sd-scripts#1434, as torchrun --tee prefixes it on node7's local rank 1
    line = "[E ProcessGroupNCCL.cpp:916] [Rank 1] NCCL watchdog thread terminated with exception: CUDA error: uncorrectable ECC error encountered"
    top = answer([{"line": "[default1]:" + line, "host": "node7"}])["incidents"][0]
    assert top["root_cause"]["component"] == "node7/gpu1" and top["root_cause"]["cause"] == "gpu_hbm"
    assert top["lines"] == [{"line": 1, "text": "[default1]:" + line}]
    assert any("dmesg" in hint and "node7" in hint for hint in top["missing"])


def test_fabric_manager_failure_is_the_hosts_configuration():
    # real lines: NVIDIA/nccl#1769 (B200, rank 2's last error)
    lines = ["[rank2]: ncclUnhandledCudaError: Call to CUDA function failed.", "[rank2]: Last error:",
             "[rank2]: Cuda failure 802 'system not yet initialized'"]
    top = answer(lines, job={"hosts": ["b200-a", "b200-b"], "gpus_per_host": 2})["incidents"][0]
    assert (top["root_cause"]["component"], top["root_cause"]["cause"]) == ("b200-b", "dependency")
    assert top["action"]["kind"] == "evict" and "fabricmanager" in top["action"]["detail"]


def test_a_lone_stack_waiting_on_data_is_software():
    _, _, result = case("pytorch-87995-dataloader-pyspy")
    top = result["incidents"][0]
    assert top["root_cause"]["rule"] == "odd_stack" and "data pipeline" in top["root_cause"]["explanation"]
    assert [q["line"] for q in top["lines"]] == list(range(1, 9))


def test_signatures_are_data_with_sources():
    loaded = reasoning.rules()
    assert len(loaded.signatures) >= 8 and all(s.source and s.missing for s in loaded.signatures)
    assert {"collective", "data", "io", "cluster_fs"} <= set(loaded.stack)


def test_nothing_to_say_is_an_empty_answer():
    result = answer(["epoch 3 step 1200 loss 2.31", "", "Starting training step on epoch 3"])
    assert result == {"incidents": [], "events": 0, "unmatched": 3, "lines": 3}


# ---------------------------------------------------------------- the route and the command

@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    db_url = f"duckdb:///{tmp_path_factory.mktemp('diagnose') / 'faultgraph.duckdb'}"
    engine = store.make_engine(db_url)
    store.init_schema(engine)
    with engine.begin() as conn:
        made = {role: tokens.create(conn, role=role, name=f"test-{role}")[0] for role in ("agent", "reader", "admin")}
    engine.dispose()
    srv: InProcessServer = serve_in_process(db_url, env={"FAULTGRAPH_MAX_BATCH_EVENTS": "1000"})
    yield srv, made
    srv.stop()


def test_route_answers_json_and_text_for_readers_and_agents_and_stores_nothing(secured):
    srv, made = secured
    lines = (DATA / "mfc-1748-ecc-cuctxcreate.log").read_text()
    by_json = srv.client.post("/v1/diagnose", json={"lines": lines.split("\n")[:-1], "host": "atl1-1-03-007-29-0"},
                              headers=bearer(made["reader"]))
    assert by_json.status_code == 200, by_json.text
    top = by_json.json()["incidents"][0]
    assert "id" not in top and "status" not in top
    assert (top["root_cause"]["component"], top["root_cause"]["category"]) == ("atl1-1-03-007-29-0", "gpu")
    by_text = srv.client.post("/v1/diagnose?host=atl1-1-03-007-29-0", content=lines,
                              headers={**bearer(made["agent"]), "content-type": "text/plain"})
    assert by_text.status_code == 200 and by_text.json() == by_json.json()
    assert srv.client.post("/v1/diagnose", json={"lines": []}).status_code == 401
    stored = srv.client.get("/v1/events", headers=bearer(made["reader"])).json()["events"]
    assert stored == []


@pytest.mark.parametrize("body, status, says", [
    (b"{not json", 422, "json"),
    (b'{"lines": "one string"}', 422, "lines"),
    (b'{"lines": [{"host": "node1"}]}', 422, "line"),
    (b'{"lines": ["x"], "job": {"hosts": []}}', 422, "job.hosts"),
    (b'{"lines": ["x"], "host": "not a host!"}', 422, "host"),
    (json.dumps({"lines": ["x"], "job": {"hosts": [f"n{i}" for i in range(32768)], "gpus_per_host": 64}}).encode(),
     422, "2,097,152 ranks (32,768 hosts × 64) exceed the 262,144"),
    (json.dumps({"lines": ["x"] * 1001}).encode(), 413, "limit"),
])
def test_bad_bodies_get_a_4xx_naming_the_problem(secured, body, status, says):
    srv, made = secured
    reply = srv.client.post("/v1/diagnose", content=body,
                            headers={**bearer(made["reader"]), "content-type": "application/json"})
    assert reply.status_code == status, reply.text
    assert says in reply.json()["detail"].lower()


def test_a_text_paste_s_bad_host_parameter_is_named(secured):
    srv, made = secured
    reply = srv.client.post("/v1/diagnose", content=b"x\n", params={"host": "not a host!"},
                            headers={**bearer(made["reader"]), "content-type": "text/plain"})
    assert reply.status_code == 422, reply.text
    assert reply.json()["detail"].startswith("host: ")


def test_command_prints_the_same_answer_without_a_server(tmp_path):
    log = DATA / "nccl-1488-nvls-fabricmanager-restart.log"
    as_json = cli("diagnose", str(log), "--json")
    assert as_json.exit_code == 0, as_json.output
    printed = json.loads(as_json.stdout)
    direct = service.diagnose({"lines": log.read_text().split("\n")[:-1]}, received=RECEIVED)
    assert printed["incidents"][0]["root_cause"] == direct["incidents"][0]["root_cause"]
    human = cli("diagnose", str(log))
    assert human.exit_code == 0 and "node23" in human.stdout and "Missing:" in human.stdout
    assert "NCCL WARN Cuda failure 1 'invalid argument'" in human.stdout
    confidence = printed["incidents"][0]["root_cause"]["confidence"]
    assert f"(confidence {confidence:.0%})" in human.stdout  # as `show` and the UI write it
    one = tmp_path / "one.log"
    one.write_text("nothing to see\n")
    assert cli("diagnose", str(one)).stdout.startswith("1 line, 0 events, 1 line matched no rule")
    missing = cli("diagnose", str(tmp_path / "nope.log"), env={"COLUMNS": "300"})  # the path unwrapped
    assert missing.exit_code == 2 and "nope.log" in missing.output
    # a bad option is named as the option, not as pydantic's field and its web page
    for args, option in ((["--job-hosts", "a,b", "--gpus-per-host", "0"], "--gpus-per-host"),
                         (["--job-hosts", "a,b_c!"], "--job-hosts"), (["--host", "bad!host"], "--host")):
        bad = cli("diagnose", str(log), *args, env={"COLUMNS": "300"})
        assert bad.exit_code == 2 and option in bad.output and "pydantic" not in bad.output, bad.output


def test_command_names_a_paste_without_a_host_as_unnamed_not_none():
    human = cli("diagnose", str(DATA / "deepspeed-5482-cuda-unknown-error.log"))
    assert human.exit_code == 0, human.output
    headline = next(line for line in human.stdout.splitlines() if line.startswith("1. "))
    assert headline.split(" at ")[1].startswith("an unnamed host"), headline
    assert "None" not in human.stdout


# ---------------------------------------------------------------- any input

FRAGMENTS = [line for path in sorted(DATA.glob("*.log")) for line in path.read_text().split("\n") if line] + [
    "Thread 0x7F (idle): \"MainThread\"", "    get (queue.py:170)", "Traceback (most recent call last):",
    "terminate called after throwing an instance of 'x'", "INFO: task a:1 blocked for more than 120 seconds.",
    "[rank99999999999999999999]:", "[default7]:", "12: ", "Call Trace:"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=200),
                          st.builds(lambda a, b: a + b, st.sampled_from(FRAGMENTS), st.text(max_size=40))),
                max_size=40),
       st.one_of(st.none(), st.sampled_from(["node7", "ip-10-0-0-1"])))
def test_any_paste_gets_an_answer_never_an_exception(lines, host):
    result = answer(lines, host=host)
    assert result["lines"] == len(lines)
    for incident in result["incidents"]:
        assert all(lines[q["line"] - 1].rstrip("\r\n") == q["text"] for q in incident["lines"])


def test_impossible_dates_and_waits_get_an_answer():
    """Found by hand against the route (both were a 500): a line dated 9999-12-31 (outside the
    years the store keeps, so no event: it matches no rule) and a watchdog that says it
    waited 2,000 years (its own time, not a start before year 1)."""
    xid = "9999-12-31T23:59:59Z dg01 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."
    assert answer([xid]) | {"incidents": []} == {"incidents": [], "events": 0, "unmatched": 1, "lines": 1}
    waited = ("[rank1]:[E1129 08:00:02.000000 1234 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective "
              "operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
              "ran for 100000000000000 milliseconds before timing out.")
    result = answer([waited])
    assert result["events"] == 1 and result["incidents"], result


def test_the_action_is_the_engine_s_where_it_decided_one():
    """With the job's hosts given the engine weighs evicting against a restart on a spare;
    the answer's action said 'evict node7: drain node7 and repair node7' under an
    explanation that said to restart on a spare."""
    xid = "Nov 29 08:00:00 node7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."
    [with_job] = answer([xid], job={"hosts": ["node0", "node7"], "gpus_per_host": 4})["incidents"]
    action = with_job["action"]
    assert action["kind"] == "restart" and "on a spare" in action["detail"], action
    assert with_job["root_cause"]["explanation"].endswith(action["detail"])
    [alone] = answer([xid])["incidents"]
    assert (alone["action"]["kind"], alone["action"]["target"]) == ("evict", "node7")


def test_odd_bodies_over_http(secured):
    srv, made = secured
    auth = bearer(made["reader"])
    assert srv.client.post("/v1/diagnose", json={"lines": [None]}, headers=auth).status_code == 422
    assert srv.client.post("/v1/diagnose", json={"lines": ["\u0000\ud7ff", "x" * 65_536]}, headers=auth).status_code == 200
    binary = srv.client.post("/v1/diagnose", content=b"\xff\xfe\x00 CUDA error: unknown error\n",
                             headers={**auth, "content-type": "text/plain"})
    assert binary.status_code == 200 and binary.json()["incidents"][0]["root_cause"]["category"] == "gpu"


def test_an_nvlink_xid_is_the_gpu_and_its_link():
    # real line: leptonai/gpud components/accelerator/nvidia/xid/kmsg_test.go (GB200, dmesg monotonic time)
    line = "[171167.620236] NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (0x021425c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"
    top = answer([line], host="gb200-07")["incidents"][0]
    assert top["root_cause"]["component"] == "gb200-07"  # no topology maps the PCI address: the host
    assert (top["root_cause"]["category"], top["root_cause"]["cause"]) == ("gpu", "nvlink")
    assert "NVLink 1" in top["root_cause"]["explanation"] and top["action"] == {
        "kind": "evict", "target": "gb200-07", "detail": "drain gb200-07 and repair gb200-07"}
    assert top["opened"] is None  # dmesg's seconds since boot are not a time of day


def test_first_collectives_failing_after_a_driver_load_is_the_hosts_configuration():
    # real lines from two threads put together to test the rule (not a corpus incident):
    # NVIDIA/NVSentinel#155 (a driver load in dmesg) and NVIDIA/nccl#1488 (NVLS failing at init)
    driver = "[ 1843.439669] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  Release Build  (dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025"
    nccl = (DATA / "nccl-1488-nvls-fabricmanager-restart.log").read_text().split("\n")[:-1]
    top = answer([{"line": driver, "host": "node23"}, *nccl])["incidents"][0]
    assert (top["root_cause"]["component"], top["root_cause"]["cause"]) == ("node23", "dependency")
    assert "config_change" in top["root_cause"]["rule"] and top["lines"][0]["line"] == 1
    assert "570.158.01" in top["root_cause"]["explanation"]
    # the same failures before the driver load are not blamed on it
    assert "config_change" not in answer([*nccl, {"line": driver, "host": "node23"}])["incidents"][0]["root_cause"]["rule"]


def test_the_odd_stack_out_of_a_py_spy_dump_of_many_processes():
    # real py-spy 0.4.3 output of four staged processes (tests/data/diagnose/pyspy/make_dump.py):
    # three wait in a barrier, one on an empty data queue
    lines = (DATA / "pyspy" / "four-ranks.txt").read_text().split("\n")[:-1]
    top = answer(lines, host="node3")["incidents"][0]
    assert (top["root_cause"]["component"], top["root_cause"]["cause"]) == ("node3", "software_bug")
    assert top["root_cause"]["explanation"].startswith("node3/pid20453 ")
    assert "while 3 other process(es) sit in a collective" in top["root_cause"]["explanation"]
    assert top["lines"][0]["text"] == 'Thread 20453 (idle): "MainThread"' and top["missing"] == []
    assert len(answer(lines, host="node3")["incidents"]) == 1  # the three alike are not suspects


def test_an_xid_whose_bus_id_was_elided_still_names_the_fault():
    # derived, and labelled so: the real NVIDIA/DCGM DcgmKmsgReaderTests line
    # "NVRM: Xid (PCI:0000:2a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus"
    # with its bus id elided the way people paste it (`PCI:...`)
    elided = "NVRM: Xid (PCI:...): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus"
    result = answer([elided], host="node7")
    top = result["incidents"][0]
    assert result["events"] == 0  # the catalogue wants a whole bus id
    assert (top["root_cause"]["component"], top["root_cause"]["cause"]) == ("node7", "gpu_fell_off_bus")
    assert any("full PCI address" in hint for hint in top["missing"])


# ---------------------------------------------------------------- ids and types as the engine gives them

# real lines: NVIDIA/DCGM DcgmKmsgReaderTests (Xid 79), NVSentinel's NIC-monitor design (tests/data/reference/real-logs.jsonl)
XID_79 = "NVRM: Xid (PCI:0000:2a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus"
CABLE_UNPLUGGED = "mlx5_core 0000:12:00.0: Port module event: module 0, Cable unplugged"
RAIL_OPTIMIZED = rail_optimized(hosts=4)  # node0001/gpu1 is at PCI 0000:2a:00


@pytest.mark.parametrize("line", [XID_79, CABLE_UNPLUGGED])
def test_a_lone_hardware_fault_is_a_fault_and_with_a_failed_job_an_interruption(line):
    alone = answer([line], host="node7")["incidents"][0]
    assert (alone["type"], alone["job"], alone["symptoms"]) == ("fault", None, 0)
    # no topology: the resolver's conventions map no PCI address, so the part is its host
    assert alone["root_cause"]["component"] == "node7" and alone["action"]["target"] == "node7"
    with_job = answer([line, *ACE_348], host="node7")["incidents"]
    assert with_job and all(incident["type"] == "interruption" for incident in with_job)


def test_components_resolve_through_the_topology():
    resolver = Resolver(Topology.from_dict(RAIL_OPTIMIZED))
    top = service.diagnose({"lines": [XID_79], "host": "node0001"}, received=RECEIVED, resolver=resolver)["incidents"][0]
    assert top["root_cause"]["component"] == "node0001/gpu1" and top["candidates"][0]["component"] == "node0001/gpu1"
    assert top["action"]["target"] == "node0001" and top["type"] == "fault"
    # no host: nothing maps the address, so no component; the hint names it
    hostless = service.diagnose({"lines": [XID_79]}, received=RECEIVED, resolver=resolver)["incidents"][0]
    assert (hostless["root_cause"]["component"], hostless["candidates"], hostless["action"]["target"]) == (None, [], None)
    assert any("pci:0000:2a:00" in hint for hint in hostless["missing"])
    watchdog = answer(ACE_348[1:2], job={"hosts": ["node0001"], "gpus_per_host": 4})
    assert all(i["root_cause"]["component"] != "the job" for i in watchdog["incidents"])


def test_route_resolves_through_the_servers_topology(tmp_path):
    db_url = f"duckdb:///{tmp_path / 'faultgraph.duckdb'}"
    admin = store_token(db_url, role="admin", name="test-admin")
    srv = serve_in_process(db_url)
    try:
        assert srv.client.put("/v1/topology", json=RAIL_OPTIMIZED, headers=bearer(admin)).status_code == 200
        reply = srv.client.post("/v1/diagnose", json={"lines": [XID_79], "host": "node0001"}, headers=bearer(admin))
        assert reply.status_code == 200, reply.text
        top = reply.json()["incidents"][0]
        assert (top["root_cause"]["component"], top["type"]) == ("node0001/gpu1", "fault")
    finally:
        srv.stop()
