"""`faultgraph k8s watch` as a process: the official client's kubeconfig loading and watch
stream, the tracker and the posts to a real faultgraph server, end to end.

No Kubernetes API server can run on this machine (none is packaged for Debian or PyPI, and
there is no Go toolchain to build one), so the API side is a stand-in on loopback that speaks the pods list and watch of the Kubernetes API as the
client uses them: `GET /api/v1/namespaces/{ns}/pods` answers a PodList with its
resourceVersion; with `watch=True&resourceVersion=N&timeoutSeconds=T` a chunked response of
one JSON watch event per line (`{"type": "ADDED", "object": <Pod>}`) for every change after
N, until T. The pods are the API-shaped objects of tests/test_k8s.py.
"""

import copy
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from conftest import Server
from test_k8s import jobset_pod, pod

NAMESPACE = "train"


@pytest.fixture
def server(live_server: Server) -> Server:
    """The watcher posts over HTTP from its own process: a real server, one per module."""
    return live_server


class PodWatchStandIn:
    """The pods of one namespace and their change log; list and watch as the API serves them."""

    def __init__(self) -> None:
        self.pods: dict[str, dict] = {}
        self.changes: list[tuple[str, dict]] = []  # resourceVersion N is changes[N - 1]
        self.changed = threading.Condition()
        self.held = False  # open watches send nothing while held
        self.generation = 0  # bumped to end every open watch
        self.lists = 0

    def apply(self, kind: str, body: dict) -> None:
        with self.changed:
            body = copy.deepcopy(body)
            body["metadata"]["resourceVersion"] = str(len(self.changes) + 1)
            name = body["metadata"]["name"]
            if kind == "DELETED":
                self.pods.pop(name, None)
            else:
                self.pods[name] = body
            self.changes.append((kind, body))
            self.changed.notify_all()

    def hold(self) -> None:
        with self.changed:
            self.held = True

    def drop(self) -> None:
        """Every open watch ends (an API server restarting)."""
        with self.changed:
            self.held = False
            self.generation += 1
            self.changed.notify_all()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        state = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # the watch is a chunked response, each event its own chunk

            def log_message(self, *args: object) -> None:
                pass

            def chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def send_json(self, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802  (http.server's name)
                url = urlparse(self.path)
                query = parse_qs(url.query)
                if url.path != f"/api/v1/namespaces/{NAMESPACE}/pods":
                    self.send_error(404, f"the stand-in serves only the pods of namespace {NAMESPACE}")
                    return
                if query.get("watch", ["false"])[0].lower() != "true":
                    with state.changed:
                        state.lists += 1
                        self.send_json({"kind": "PodList", "apiVersion": "v1", "items": list(state.pods.values()),
                                        "metadata": {"resourceVersion": str(len(state.changes))}})
                    return
                self.watch(query)

            def watch(self, query: dict) -> None:
                deadline = time.monotonic() + float(query.get("timeoutSeconds", ["30"])[0])
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    self.stream(query, deadline)
                    self.chunk(b"")  # the last chunk: the watch ends as the timeout ends it
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

            def stream(self, query: dict, deadline: float) -> None:
                with state.changed:
                    generation = state.generation
                    sent = int(query.get("resourceVersion", ["0"])[0] or 0)
                while True:
                    with state.changed:
                        state.changed.wait_for(lambda seen=sent: state.generation != generation
                                               or (not state.held and len(state.changes) > seen),
                                               timeout=max(0.0, min(deadline - time.monotonic(), 0.5)))
                        if state.generation != generation or time.monotonic() >= deadline:
                            return
                        lines = [] if state.held else [{"type": kind, "object": body} for kind, body in state.changes[sent:]]
                        sent += len(lines)
                    for line in lines:
                        self.chunk(json.dumps(line).encode() + b"\n")

        return Handler


@pytest.fixture
def standin(tmp_path: Path) -> Iterator[tuple[PodWatchStandIn, Path]]:
    state = PodWatchStandIn()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), state.handler())
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({  # JSON is YAML: the client's loader reads it
        "apiVersion": "v1", "kind": "Config", "current-context": "standin",
        "clusters": [{"name": "standin", "cluster": {"server": f"http://127.0.0.1:{httpd.server_port}"}}],
        "users": [{"name": "watcher", "user": {"token": "standin-token"}}],
        "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "watcher", "namespace": NAMESPACE}}],
    }))
    yield state, kubeconfig
    httpd.shutdown()
    httpd.server_close()


def wait_for(check, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def registered(server: Server, job: str, predicate=lambda body: True):
    def check():
        answer = server.client.get(f"/v1/jobs/{job}")
        return answer.json() if answer.status_code == 200 and predicate(answer.json()) else None
    return check


def kubeflow_pod(kind: str, index: int, node: str) -> dict:
    labels = {"training.kubeflow.org/job-name": "bert", "training.kubeflow.org/operator-name": "pytorchjob-controller",
              "training.kubeflow.org/replica-type": kind, "training.kubeflow.org/replica-index": str(index)}
    return pod(f"bert-{kind}-{index}", node, labels)


def test_watch_registers_jobs_in_rank_order_and_their_restart(server: Server, standin, tmp_path: Path) -> None:
    state, kubeconfig = standin
    # pods already running when the watch starts: it sees them as ADDED
    first = [jobset_pod("workers", 0, c, f"node{c:04d}") for c in (2, 0, 3, 1)]
    for body in first:
        state.apply("ADDED", body)
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    env.pop("KUBERNETES_SERVICE_HOST", None)  # not in a cluster: the kubeconfig is used
    log = (tmp_path / "watch.log").open("w")
    watcher = subprocess.Popen([sys.executable, "-m", "faultgraph.service.cli", "k8s", "watch", "--url", server.url,
                                "--namespace", NAMESPACE, "--settle", "0.5"], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        job = wait_for(registered(server, "k8s-train-llama"), "the JobSet's registration")
        assert job["hosts"] == ["node0000", "node0001", "node0002", "node0003"] and job["world_size"] == 32
        # a PyTorchJob whose pods come up while the watch runs, workers before the master
        for body in (kubeflow_pod("worker", 1, "node0013"), kubeflow_pod("worker", 0, "node0012"),
                     kubeflow_pod("master", 0, "node0011")):
            state.apply("ADDED", body)
        bert = wait_for(registered(server, "k8s-train-bert", lambda b: len(b["hosts"]) == 3), "the PyTorchJob")
        assert bert["hosts"] == ["node0011", "node0012", "node0013"]
        # an Indexed Job of two pods on one node: explicit ranks
        for i in (1, 0):
            state.apply("ADDED", pod(f"lammps-{i}-x", "node0020", {"job-name": "lammps"},
                                     {"batch.kubernetes.io/job-completion-index": str(i)}, gpus=2))
        lammps = wait_for(registered(server, "k8s-train-lammps", lambda b: b["world_size"] == 4), "the Indexed Job")
        assert lammps["hosts"] == ["node0020"]
        # JobSet restarts the whole set after node0002 failed: new pods, attempt 1, node0009 instead
        for body in first:
            state.apply("DELETED", body)
        for c in range(4):
            moved = copy.deepcopy(jobset_pod("workers", 0, c, "node0009" if c == 2 else f"node{c:04d}", attempt=1))
            moved["metadata"]["uid"] += "-1"
            moved["metadata"]["name"] += "-1"
            state.apply("ADDED", moved)
        job = wait_for(registered(server, "k8s-train-llama", lambda b: b["hosts"][2] == "node0009"), "the restart")
        assert job["hosts"] == ["node0000", "node0001", "node0009", "node0003"]
        kinds = wait_for(lambda: (k := [e["kind"] for e in server.client.get(
            "/v1/events", params={"job": "k8s-train-llama"}).json()["events"]]) == ["job_start", "job_restart"] and k,
            "job_start then job_restart")
        assert kinds == ["job_start", "job_restart"]
        # while the watcher's stream is held, a PyTorchJob worker moves; then the stream ends:
        # the watcher lists the pods again and forgets the deleted one it never heard of
        state.hold()
        lists = state.lists
        state.apply("DELETED", kubeflow_pod("worker", 1, "node0013"))
        moved = copy.deepcopy(kubeflow_pod("worker", 1, "node0014"))
        moved["metadata"]["uid"] += "-1"
        moved["metadata"]["name"] += "-1"
        state.apply("ADDED", moved)
        state.drop()
        bert = wait_for(registered(server, "k8s-train-bert", lambda b: "node0014" in b["hosts"]), "the moved worker")
        assert bert["hosts"] == ["node0011", "node0012", "node0014"] and state.lists > lists
        assert watcher.poll() is None
    finally:
        watcher.terminate()
        watcher.wait(timeout=30)
        log.close()
    assert "Traceback" not in (tmp_path / "watch.log").read_text()
