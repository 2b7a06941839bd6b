"""`faultgraph k8s watch`: pods of JobSet, PyTorchJob, LeaderWorkerSet and Indexed Jobs →
jobs registered in rank order, restarts included.

No Kubernetes API server can run on this machine (none is packaged for Debian or PyPI), so
the pods are API objects in the shape the API serves them: the skeleton of a real
`kubectl get pod -o yaml` (kubernetes/kubernetes issue #117819, an Indexed Job pod) with the
labels and annotations each controller sets (as in `kubectl describe` of a JobSet pod in
kubernetes-sigs/jobset issue #578, and the label constants of kubeflow/training-operator and
kubernetes-sigs/lws). Each is read back through the official client's `V1Pod` model, as the
watch delivers it; the registrations go to the faultgraph app (in this process, a real store).
"""

import copy
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from conftest import InProcessServer
from kubernetes.client import ApiClient

from faultgraph.service.schedulers import k8s

NOW = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)


def pod(name: str, node: str | None, labels: dict, annotations: dict | None = None, gpus: int = 8,
        env: list | None = None, phase: str = "Running") -> dict:
    body = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "train", "uid": f"uid-{name}", "labels": labels,
                     "annotations": annotations or {}, "creationTimestamp": "2023-05-16T20:11:05Z"},
        "spec": {"containers": [{"name": "trainer", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                                 "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}, "env": env or []}]},
        "status": {"phase": phase, "containerStatuses": [{"name": "trainer", "restartCount": 0, "ready": True,
                                                          "image": "x", "imageID": "y"}]},
    }
    if node:
        body["spec"]["nodeName"] = node
    return through_client(body)


def through_client(body: dict) -> dict:
    """The pod as the official client models it (V1Pod), serialised back to API JSON."""
    api = ApiClient()
    model = api.deserialize(json.dumps(body), "V1Pod", "application/json")
    return api.sanitize_for_serialization(model)


def jobset_pod(rjob: str, job_index: int, completion: int, node: str, attempt: int = 0) -> dict:
    name = f"llama-{rjob}-{job_index}-{completion}-abcde"
    labels = {
        "batch.kubernetes.io/job-completion-index": str(completion),
        "batch.kubernetes.io/job-name": f"llama-{rjob}-{job_index}",
        "job-name": f"llama-{rjob}-{job_index}",
        "jobset.sigs.k8s.io/jobset-name": "llama", "jobset.sigs.k8s.io/replicatedjob-name": rjob,
        "jobset.sigs.k8s.io/job-index": str(job_index), "jobset.sigs.k8s.io/restart-attempt": str(attempt),
    }
    return pod(name, node, labels, {"batch.kubernetes.io/job-completion-index": str(completion)})


def test_jobset_pods_in_rank_order() -> None:
    pods = [jobset_pod("workers", j, c, f"node{10 - 2 * j - c:04d}") for j in (1, 0) for c in (1, 0)]
    slots = [k8s.slot_of(p) for p in pods]
    body = k8s.registration("train/llama", slots, now=NOW)
    assert body["id"] == "k8s-train-llama"
    assert (body["hosts"], body["gpus_per_host"]) == (["node0010", "node0009", "node0008", "node0007"], 8)


def test_pytorchjob_master_is_rank_zero() -> None:
    def kf(kind: str, index: int, node: str) -> dict:
        labels = {"training.kubeflow.org/job-name": "bert", "training.kubeflow.org/operator-name": "pytorchjob-controller",
                  "training.kubeflow.org/replica-type": kind, "training.kubeflow.org/replica-index": str(index)}
        return pod(f"bert-{kind}-{index}", node, labels)
    slots = [k8s.slot_of(p) for p in (kf("worker", 1, "n3"), kf("master", 0, "n1"), kf("worker", 0, "n2"))]
    assert k8s.registration("train/bert", slots, now=NOW)["hosts"] == ["n1", "n2", "n3"]


def test_leaderworkerset_groups_are_separate_jobs() -> None:
    def lws(group: int, worker: int, node: str) -> dict:
        labels = {"leaderworkerset.sigs.k8s.io/name": "serve", "leaderworkerset.sigs.k8s.io/group-index": str(group),
                  "leaderworkerset.sigs.k8s.io/worker-index": str(worker)}
        return pod(f"serve-{group}-{worker}", node, labels, gpus=4)
    slots = [k8s.slot_of(p) for p in (lws(0, 1, "b"), lws(1, 0, "c"), lws(0, 0, "a"))]
    assert {s.job for s in slots} == {"train/serve-0", "train/serve-1"}
    group0 = [s for s in slots if s.job == "train/serve-0"]
    assert k8s.registration("train/serve-0", group0, now=NOW)["hosts"] == ["a", "b"]


def test_indexed_job_and_env_rank_and_shared_nodes() -> None:
    indexed = [pod(f"lammps-{i}-x", "same-node", {"job-name": "lammps"}, {"batch.kubernetes.io/job-completion-index": str(i)}, gpus=2)
               for i in (1, 0)]
    body = k8s.registration("train/lammps", [k8s.slot_of(p) for p in indexed], now=NOW)
    assert body["ranks"] == [{"rank": r, "host": "same-node", "gpu": r} for r in range(4)]  # two pods share a node
    ranked = pod("plain-1", "n9", {"job-name": "plain"}, env=[{"name": "RANK", "value": "1"}])
    assert k8s.slot_of(ranked).order == (1,)


@pytest.mark.parametrize("variant", ["pending", "done", "other"])
def test_pods_that_place_no_rank_are_ignored(variant: str) -> None:
    if variant == "pending":
        p = jobset_pod("workers", 0, 0, "n1")
        p["spec"].pop("nodeName")
    elif variant == "done":
        p = jobset_pod("workers", 0, 0, "n1")
        p["status"]["phase"] = "Succeeded"
    else:
        p = pod("web-1", "n1", {"app": "nginx"})
    assert k8s.slot_of(p) is None


def test_tracker_registers_once_settled_and_restarts_on_reschedule(server: InProcessServer) -> None:
    clock = [0.0]

    def post(path: str, body: object) -> None:
        server.client.post(path, json=body).raise_for_status()

    tracker = k8s.Tracker(post, settle_s=5, clock=lambda: clock[0])
    pods = [jobset_pod("workers", 0, c, f"node{c:04d}") for c in range(4)]
    for p in pods:
        tracker.observe("ADDED", p)
    assert tracker.sync(now=NOW) == []  # still coming up
    clock[0] = 10
    assert tracker.sync(now=NOW) == ["k8s-train-llama"]
    job = server.client.get("/v1/jobs/k8s-train-llama").json()
    assert job["hosts"] == ["node0000", "node0001", "node0002", "node0003"] and job["world_size"] == 32
    tracker.observe("MODIFIED", pods[0])
    clock[0] = 20
    assert tracker.sync(now=NOW) == []  # nothing changed: nothing posted

    # JobSet restarts the whole set after node0002 failed: new pods, attempt 1, node0009 instead
    for p in pods:
        tracker.observe("DELETED", p)
    moved = [jobset_pod("workers", 0, c, "node0009" if c == 2 else f"node{c:04d}", attempt=1) for c in range(4)]
    for p in moved:
        p = copy.deepcopy(p)
        p["metadata"]["uid"] += "-1"
        tracker.observe("ADDED", p)
    clock[0] = 30
    later = NOW.replace(minute=30)
    assert tracker.sync(now=later) == ["k8s-train-llama"]
    job = server.client.get("/v1/jobs/k8s-train-llama").json()
    assert job["hosts"][2] == "node0009"
    kinds = [e["kind"] for e in server.client.get("/v1/events", params={"job": "k8s-train-llama"}).json()["events"]]
    assert kinds == ["job_start", "job_restart"]


def test_a_failed_post_is_retried_at_the_next_sync() -> None:
    calls: list[str] = []

    def post(path: str, body: object) -> None:
        calls.append(path)
        if len(calls) == 1:
            raise ConnectionError("service away")

    tracker = k8s.Tracker(post, settle_s=0)
    tracker.observe("ADDED", jobset_pod("workers", 0, 0, "n1"))
    assert tracker.sync(now=NOW) == []
    assert tracker.sync(now=NOW) == ["k8s-train-llama"]


def test_the_deployment_may_watch_pods_and_runs_the_watch_command() -> None:
    docs = {d["kind"]: d for d in yaml.safe_load_all((Path(__file__).parents[1] / "deploy/kubernetes/k8s-watch.yaml").read_text())}
    [rule] = docs["ClusterRole"]["rules"]
    assert rule["resources"] == ["pods"] and {"list", "watch"} <= set(rule["verbs"])
    account = docs["Deployment"]["spec"]["template"]["spec"]["serviceAccountName"]
    assert docs["ClusterRoleBinding"]["subjects"][0]["name"] == account == docs["ServiceAccount"]["metadata"]["name"]
    assert docs["Deployment"]["spec"]["template"]["spec"]["containers"][0]["args"][:2] == ["k8s", "watch"]
