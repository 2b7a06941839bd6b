"""Remediation: the plan (tolerance, flapping, evictions, resume), the blast-radius cap as a
property over arbitrary signals, the Kubernetes actuator against the API's own object
shapes, the webhook, and drain/resume end to end through a real server and a real Slurm."""

import json
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import jsonpatch
import kubernetes_validate
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client as k8s
from slurm import start_slurm

from faultgraph.attribution.fleet import Transition, replay
from faultgraph.service import store
from faultgraph.service.remediation import flows, service
from faultgraph.service.remediation.actuators import ActionFailed, Kubernetes, Webhook
from faultgraph.service.remediation.models import RemediationConfig
from tests.conftest import start_server, store_events

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
FIVE_MIN = timedelta(minutes=5)


def ago(**delta) -> datetime:
    return NOW - timedelta(**delta)


# --- the plan -------------------------------------------------------------------------------

def test_a_faulty_component_drains_its_host_only_after_the_tolerance_window():
    young = replay([Transition(ago(minutes=2), "n1/gpu3", "faulty", cause="gpu_hbm", judged=True, incident="inc-000001")])
    assert flows.plan(young, [], [], now=NOW, tolerance=FIVE_MIN, topology=None) == []
    held = replay([Transition(ago(minutes=6), "n1/gpu3", "faulty", cause="gpu_hbm", judged=True, incident="inc-000001")])
    [decision] = flows.plan(held, [], [], now=NOW, tolerance=FIVE_MIN, topology=None)
    assert (decision.action, decision.host, decision.incident) == ("drain", "n1", "inc-000001")
    assert decision.reason == "faultgraph inc-000001 gpu_hbm"


def test_a_flapping_signal_never_acts():
    """faulty/healthy every 2 minutes for an hour: the state never holds for 5 minutes."""
    steps = [Transition(ago(minutes=60 - 2 * i), "n1/nic0", "faulty" if i % 2 == 0 else "healthy") for i in range(30)]
    units = replay(steps)
    assert units["n1/nic0"].state == "healthy" or units["n1/nic0"].since > ago(minutes=5)
    for minute in range(61):
        now = ago(minutes=60 - minute)
        seen = replay(s for s in steps if s.time <= now)
        assert flows.plan(seen, [], [], now=now, tolerance=FIVE_MIN, topology=None) == []


def test_an_eviction_targets_its_host_unless_the_root_is_repaired():
    evict = [{"id": "inc-000007", "failed_at": ago(minutes=10), "cause": "nic", "component": "n4/nic1", "target": "n4"}]
    [decision] = flows.plan({}, evict, [], now=NOW, tolerance=FIVE_MIN, topology=None)
    assert (decision.host, decision.incident) == ("n4", "inc-000007")
    repaired = replay([Transition(ago(minutes=1), "n4/nic1", "healthy")])
    assert flows.plan(repaired, evict, [], now=NOW, tolerance=FIVE_MIN, topology=None) == []


def test_a_cable_fault_drains_the_host_at_its_host_end():
    cable = replay([Transition(ago(minutes=9), "leaf-3~node7/nic2", "faulty", cause="network_switch_cable")])
    [decision] = flows.plan(cable, [], [], now=NOW, tolerance=FIVE_MIN, topology=None)
    assert decision.host == "node7"


def test_a_drained_host_is_not_drained_twice_and_is_resumed_after_repair():
    faulty = replay([Transition(ago(hours=2), "n1/gpu0", "faulty", cause="gpu_hbm")])
    past = [{"time": ago(hours=1), "host": "n1", "action": "drain", "outcome": "done", "component": "n1/gpu0",
             "trigger": "x"}]
    assert flows.plan(faulty, [], past, now=NOW, tolerance=FIVE_MIN, topology=None) == []
    repaired = replay([Transition(ago(hours=2), "n1/gpu0", "faulty"), Transition(ago(minutes=1), "n1/gpu0", "healthy")])
    [decision] = flows.plan(repaired, [], past, now=NOW, tolerance=FIVE_MIN, topology=None)
    assert (decision.action, decision.host) == ("resume", "n1")


def test_going_live_acts_on_what_the_dry_run_only_reported():
    faulty = replay([Transition(ago(hours=2), "n1/gpu0", "faulty", cause="gpu_hbm")])
    past = [{"time": ago(hours=1), "host": "n1", "action": "drain", "outcome": "dry_run", "component": "n1/gpu0",
             "trigger": "x"}]
    assert flows.plan(faulty, [], past, now=NOW, tolerance=FIVE_MIN, topology=None) == []
    [decision] = flows.plan(faulty, [], past, now=NOW, tolerance=FIVE_MIN, topology=None, live=True)
    assert (decision.action, decision.host) == ("drain", "n1")


# --- the cap --------------------------------------------------------------------------------

@pytest.fixture
def engine(tmp_path):
    made = store.make_engine(f"duckdb:///{tmp_path / 'r.duckdb'}")
    store.init_schema(made)
    yield made
    made.dispose()


def direct_store(engine) -> service.Store:
    """A `Store` inserting straight into a DuckDB file: the app's writer, minus its thread."""
    def keep(generated: list[dict]) -> None:
        store_events(engine, generated, received=NOW)
    return keep


def post_states(engine, states: list[tuple[datetime, str, str]]) -> None:
    generated = [{"time": t, "host": c.split("/")[0], "component": c, "kind": "component_state",
                  "attrs": {"state": s}, "id": f"s-{i}-{t.timestamp()}"} for i, (t, c, s) in enumerate(states)]
    direct_store(engine)(generated)


def remediator(engine, pages: list, **config) -> flows.Remediator:
    settings_ = RemediationConfig(actuators=("webhook",), webhook_url="http://unused", **config)
    return flows.Remediator(engine, settings_, actuators=[], keep=direct_store(engine), page=pages.append)


def test_past_the_cap_decisions_are_recorded_capped_and_a_human_is_paged(engine):
    post_states(engine, [(ago(hours=1), f"n{i:02d}/gpu0", "faulty") for i in range(20)])
    pages: list = []
    written = remediator(engine, pages, max_hosts_per_hour=3).run_pass(NOW)
    outcomes = [e["attrs"]["detail"]["outcome"] for e in written]
    assert outcomes.count("dry_run") == 3 and outcomes.count("capped") == 17 and len(pages) == 17
    assert remediator(engine, pages, max_hosts_per_hour=3).run_pass(NOW + timedelta(hours=2)) == []  # never retried


def test_failed_live_drains_count_against_the_cap(engine):
    class Refusing:  # an actuator whose target refuses, as scontrol does for an unknown node
        name = "slurm"

        def drain(self, host: str, reason: str) -> str:
            raise ActionFailed("scontrol exited 1: Invalid node name specified")

    post_states(engine, [(ago(hours=1), f"n{i}/gpu0", "faulty") for i in range(3)])
    pages: list = []
    config = RemediationConfig(actuators=("slurm",), live=True, max_hosts_per_hour=2)
    written = flows.Remediator(engine, config, actuators=[Refusing()], keep=direct_store(engine),
                               page=pages.append).run_pass(NOW)
    assert [e["attrs"]["detail"]["outcome"] for e in written] == ["failed", "failed", "capped"]
    assert "Invalid node name" in written[0]["attrs"]["detail"]["results"][0]["detail"] and len(pages) == 3


def test_the_fleet_share_cap_rounds_down():
    config = RemediationConfig(max_hosts_per_hour=10, max_percent_per_hour=1.0)
    assert flows.allowance(config, hosts=450) == 4 and flows.allowance(config, hosts=None) == 10


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(signals=st.lists(st.tuples(st.integers(0, 180), st.integers(0, 29), st.sampled_from(["faulty", "healthy", "suspect"])),
                        max_size=120),
       passes=st.lists(st.integers(0, 200), min_size=1, max_size=25, unique=True))
def test_no_signal_drains_more_than_the_cap_in_any_hour(tmp_path_factory, signals, passes):
    """Arbitrary (possibly wrong, possibly flapping) state signals on 30 hosts over three
    hours, remediation passes at arbitrary minutes: in every rolling hour at most 2 drains."""
    engine = store.make_engine(f"duckdb:///{tmp_path_factory.mktemp('cap') / 'r.duckdb'}")
    store.init_schema(engine)
    start = NOW - timedelta(hours=3)
    post_states(engine, [(start + timedelta(minutes=m), f"n{h:02d}/gpu0", s) for m, h, s in signals])
    pages: list = []
    for minute in sorted(passes):
        remediator(engine, pages, max_hosts_per_hour=2, tolerance_s=300).run_pass(start + timedelta(minutes=minute))
    with engine.connect() as conn:
        drains = [r["time"] for r in service.actions(conn) if r["action"] == "drain" and r["outcome"] in flows.counted(live=False)]
    engine.dispose()
    for moment in drains:
        assert sum(1 for t in drains if moment <= t < moment + timedelta(hours=1)) <= 2


# --- Kubernetes, with the API's own object shapes -------------------------------------------

NODE = {  # `kubectl get node -o json` shape, trimmed; validated against the v1 Node schema below
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "gpu-node-7", "resourceVersion": "4711", "uid": "9f3c2a1e-7d7b-4f59-9a53-3f1f3a0b8c11",
                 "labels": {"kubernetes.io/hostname": "gpu-node-7", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
    "spec": {"podCIDR": "10.244.7.0/24", "providerID": "kind://docker/kind/gpu-node-7",
             "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
    "status": {"capacity": {"cpu": "224", "memory": "2113531592Ki", "nvidia.com/gpu": "8", "pods": "110"},
               "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                               "message": "kubelet is posting ready status",
                               "lastHeartbeatTime": "2026-11-29T11:59:00Z", "lastTransitionTime": "2026-11-01T00:00:00Z"}]},
}


def pod(name: str, namespace: str, **meta) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": "1", **meta},
            "spec": {"nodeName": "gpu-node-7", "containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.10-py3"}]},
            "status": {"phase": "Running"}}


PODS = [  # on gpu-node-7: a training worker, one behind a disruption budget, a DaemonSet's, a static pod
    pod("llama-worker-17", "train"),
    pod("llama-worker-18", "train", labels={"app": "guarded"}),
    pod("nvidia-device-plugin-x7k2p", "kube-system", ownerReferences=[
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "nvidia-device-plugin", "uid": "ds-1", "controller": True}]),
    pod("kube-proxy-gpu-node-7", "kube-system", annotations={"kubernetes.io/config.mirror": "abc"}),
]


class NodeAPI(BaseHTTPRequestHandler):
    """GET and JSON-Patch one Node at /api/v1/nodes/<name>, as kube-apiserver does: a failed
    `test` operation is 422, an unknown node 404; each change bumps resourceVersion. Lists
    the node's pods and takes Evictions; `llama-worker-18` is held by a budget (429)."""

    node: ClassVar[dict] = {}
    patches: ClassVar[list] = []
    evictions: ClassVar[list] = []

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _status(self, code: int, reason: str, message: str) -> None:
        self._send(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                          "reason": reason, "code": code})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).evictions.append((self.path, body))
        if body["metadata"]["name"] == "llama-worker-18":
            return self._status(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.")
        self._status(201, "", "")

    def do_GET(self) -> None:
        if self.path.startswith("/api/v1/pods?"):
            assert "fieldSelector=spec.nodeName%3Dgpu-node-7" in self.path
            return self._send(200, {"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "9"}, "items": PODS})
        if self.path.split("?")[0] != f"/api/v1/nodes/{self.node['metadata']['name']}":
            return self._status(404, "NotFound", f'nodes "{self.path.rsplit("/", 1)[-1]}" not found')
        self._send(200, self.node)

    def do_PATCH(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).patches.append((self.headers["Content-Type"], body))
        if self.headers["Content-Type"] != "application/json-patch+json":
            return self._status(415, "UnsupportedMediaType", self.headers["Content-Type"])
        try:
            patched = jsonpatch.apply_patch(self.node, body)
        except jsonpatch.JsonPatchTestFailed as exc:
            return self._status(422, "Invalid", str(exc))
        patched["metadata"]["resourceVersion"] = str(int(patched["metadata"]["resourceVersion"]) + 1)
        type(self).node = patched
        self._send(200, patched)


@pytest.fixture
def node_api():
    NodeAPI.node, NodeAPI.patches, NodeAPI.evictions = json.loads(json.dumps(NODE)), [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), NodeAPI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    config = k8s.Configuration(host=f"http://127.0.0.1:{server.server_port}")
    yield k8s.CoreV1Api(k8s.ApiClient(config))
    server.shutdown()


def valid_node(resource: dict) -> None:
    """Valid against the Kubernetes OpenAPI schema of its apiVersion/kind, unknown fields refused."""
    kubernetes_validate.validate(resource, kubernetes_validate.utils.latest_version(), strict=True)


def test_kubernetes_cordon_and_taint_then_uncordon(node_api):
    valid_node(NODE)
    actuator = Kubernetes(node_api)
    actuator.drain("gpu-node-7", "faultgraph inc-000042 gpu_hbm")
    node = NodeAPI.node
    valid_node(node)
    assert node["spec"]["unschedulable"] is True
    assert {"key": "faultgraph.io/faulty", "value": "true", "effect": "NoSchedule"} in node["spec"]["taints"]
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in node["spec"]["taints"]
    actuator.drain("gpu-node-7", "again")  # idempotent: one faultgraph taint
    assert sum(t["key"] == "faultgraph.io/faulty" for t in NodeAPI.node["spec"]["taints"]) == 1
    actuator.resume("gpu-node-7", "repaired")
    valid_node(NodeAPI.node)
    assert NodeAPI.node["spec"]["unschedulable"] is False
    assert NodeAPI.node["spec"]["taints"] == NODE["spec"]["taints"]


def test_kubernetes_drain_evicts_through_the_eviction_api(node_api):
    for item in PODS:
        valid_node(item)  # the same schema check, for v1 Pods
    detail = Kubernetes(node_api, evict_pods=True).drain("gpu-node-7", "faultgraph inc-000042")
    assert [path for path, _ in NodeAPI.evictions] == ["/api/v1/namespaces/train/pods/llama-worker-17/eviction",
                                                        "/api/v1/namespaces/train/pods/llama-worker-18/eviction"]
    for _, body in NodeAPI.evictions:
        valid_node(body)  # a policy/v1 Eviction
        assert (body["apiVersion"], body["kind"]) == ("policy/v1", "Eviction")
    assert "evicted 1 pods (train/llama-worker-17)" in detail
    assert "1 held by a disruption budget (train/llama-worker-18)" in detail


def test_kubernetes_refusals_are_action_failures(node_api):
    with pytest.raises(ActionFailed, match="404"):
        Kubernetes(node_api).drain("no-such-node", "x")

    stale = k8s.V1Node(metadata=k8s.V1ObjectMeta(name="gpu-node-7", resource_version="1"), spec=k8s.V1NodeSpec())

    class StaleRead:  # another controller changed the node between our read and our patch
        api_client = node_api.api_client

        def read_node(self, name):
            return stale

        def patch_node(self, name, body):
            return node_api.patch_node(name, body)

    with pytest.raises(ActionFailed, match="422"):
        Kubernetes(StaleRead()).drain("gpu-node-7", "x")
    assert "unschedulable" not in NodeAPI.node["spec"]


# --- the webhook ----------------------------------------------------------------------------

def test_webhook_posts_the_decision_and_reports_refusals():
    received = []

    class Hook(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200 if len(received) == 1 else 503)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    hook = Webhook(f"http://127.0.0.1:{server.server_port}/drain")
    try:
        assert "200" in hook.drain("n1", "faultgraph inc-000001")
        with pytest.raises(ActionFailed, match="503"):
            hook.resume("n1", "repaired")
    finally:
        server.shutdown()
    assert received == [{"action": "drain", "host": "n1", "reason": "faultgraph inc-000001"},
                        {"action": "resume", "host": "n1", "reason": "repaired"}]


# --- end to end: a real server, a real Slurm --------------------------------------------------

def xid79(host: str, at: datetime) -> dict:
    return {"time": at.isoformat(), "host": host, "kind": "gpu_xid", "component": f"{host}/gpu0", "severity": "critical",
            "attrs": {"xid": 79}, "message": "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."}


def wait_for(client, incident: str | None = None, count: int = 1) -> list[dict]:
    """Analyse until remediation (its own thread, woken after each pass) recorded `count` actions."""
    for _ in range(150):
        client.post("/v1/analyze")
        actions = client.get("/v1/remediation", params={"incident": incident} if incident else {}).json()["actions"]
        if len(actions) >= count:
            return actions
        time.sleep(0.2)
    raise AssertionError(f"fewer than {count} remediation actions recorded in 30 s")


def state(slurm) -> str:
    """sinfo's state without the trailing `*` (node not responding to slurmctld's ping at
    the moment: a loopback slurmd under load, not something remediation did)."""
    return slurm.node_state().rstrip("*")


@pytest.mark.slow
@pytest.mark.slurm  # starts its own Slurm (tests/slurm.py start_slurm), not the fixture the hook sees
@pytest.mark.parametrize("live", [False, True], ids=["dry-run", "live"])
def test_drain_and_resume_a_real_slurm_node(tmp_path, db_url, live):
    with start_slurm(tmp_path) as slurm:
        env = {"SLURM_CONF": str(slurm.conf), "FAULTGRAPH_REMEDIATE": "slurm", "FAULTGRAPH_REMEDIATE_TOLERANCE_S": "0",
               "FAULTGRAPH_REMEDIATE_EVERY_S": "0", **({"FAULTGRAPH_REMEDIATE_LIVE": "1"} if live else {})}
        server = start_server(db_url, env=env)
        try:
            client = server.client
            assert client.post("/v1/events", json=[xid79(slurm.node, NOW)]).json()["accepted"] == 1
            [drain] = wait_for(client)
            assert (drain["action"], drain["host"], drain["outcome"]) == ("drain", slurm.node, "done" if live else "dry_run")
            assert drain["incident"].startswith("inc-") and drain["cause"] == "gpu_fell_off_bus"
            assert client.get("/v1/remediation", params={"incident": drain["incident"]}).json()["actions"] == [drain]
            shown = slurm.scontrol("show", "node", slurm.node)
            if live:
                assert state(slurm) == "drain"
                assert f"Reason=faultgraph {drain['incident']} gpu_fell_off_bus" in shown
                assert drain["results"][0]["detail"].startswith(f"scontrol update NodeName={slurm.node} State=DRAIN")
            else:
                assert state(slurm) == "idle" and "faultgraph" not in shown
            repaired = {"time": (NOW + timedelta(hours=3)).isoformat(), "host": slurm.node, "component": f"{slurm.node}/gpu0",
                        "kind": "component_state", "attrs": {"state": "healthy", "reason": "GPU reseated"}}
            client.post("/v1/events", json=[repaired])
            resume = wait_for(client, count=2)[1]
            assert (resume["action"], resume["outcome"]) == ("resume", "done" if live else "dry_run")
            assert state(slurm) == "idle"
            outcome = "done" if live else "dry_run"
            exposed = client.get("/metrics").text
            for action in ("drain", "resume"):
                assert f'faultgraph_remediations_total{{action="{action}",outcome="{outcome}"}} 1.0' in exposed
        finally:
            server.stop()


def test_kubernetes_unreachable_is_an_action_failure():
    config = k8s.Configuration(host="http://127.0.0.1:9")  # discard port: nothing listens
    config.retries = 0
    with pytest.raises(ActionFailed, match="kubernetes"):
        Kubernetes(k8s.CoreV1Api(k8s.ApiClient(config))).drain("gpu-node-7", "x")
