"""Kubernetes training workloads → job registrations in rank order (SPEC §4).

`faultgraph k8s watch` follows pods with the official client's watch and registers each
training job with its pods' nodes in rank order. A pod's job and rank come from the
labels and annotations the controllers set (API JSON shape, camelCase keys):

- JobSet: `jobset.sigs.k8s.io/jobset-name`, `…/replicatedjob-name`, `…/job-index`,
  the Job's `batch.kubernetes.io/job-completion-index`; restarts in `…/restart-attempt`.
- Kubeflow PyTorchJob: `training.kubeflow.org/job-name`, `…/replica-type` (master first),
  `…/replica-index`.
- LeaderWorkerSet: `leaderworkerset.sigs.k8s.io/name`, `…/group-index` (each group is a job
  of its own), `…/worker-index` (the leader is 0).
- Indexed Job: `batch.kubernetes.io/job-name` (or `job-name`) and the completion index.
- Anything else: a `RANK` environment variable with a literal value, job from `job-name`.

The node is `spec.nodeName` (the agent DaemonSet runs there, so it is the host name the
agent posts under); GPUs per pod from `nvidia.com/gpu` limits. A job is registered again
when its placement changes, and a restart (a higher restart attempt, or a rank moving to
another pod) posts `job_restart`.
"""

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

log = logging.getLogger("faultgraph.k8s")

JOBSET = "jobset.sigs.k8s.io/"
KUBEFLOW = "training.kubeflow.org/"
LWS = "leaderworkerset.sigs.k8s.io/"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
GPU_RESOURCE = "nvidia.com/gpu"
_REPLICA_ORDER = {"master": 0, "launcher": 0, "worker": 1}


@dataclass(frozen=True)
class PodSlot:
    """Where one pod of a training job runs, and its place in the rank order."""

    job: str  # namespace/name of the training workload (LWS: one per group)
    order: tuple  # sorts the job's pods into rank order
    node: str
    gpus: int
    restart: int
    uid: str


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _gpus(spec: Mapping[str, Any]) -> int:
    total = 0
    for container in spec.get("containers") or []:
        limits = (container.get("resources") or {}).get("limits") or {}
        total += _int(limits.get(GPU_RESOURCE))
    return total


def _env_rank(spec: Mapping[str, Any]) -> int | None:
    for container in spec.get("containers") or []:
        for env in container.get("env") or []:
            if env.get("name") == "RANK" and str(env.get("value", "")).isdigit():
                return int(env["value"])
    return None


def slot_of(pod: Mapping[str, Any]) -> PodSlot | None:
    """The training-job slot a pod (API JSON) fills, or None: not scheduled, finished, or
    not part of a training workload this recognises."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    node = spec.get("nodeName")
    if not node or status.get("phase") in ("Succeeded", "Failed") or meta.get("deletionTimestamp"):
        return None
    labels, notes = meta.get("labels") or {}, meta.get("annotations") or {}
    namespace = meta.get("namespace", "default")
    index = _int(notes.get(COMPLETION_INDEX, labels.get(COMPLETION_INDEX)))
    restarts = sum(_int(c.get("restartCount")) for c in status.get("containerStatuses") or [])
    common = {"node": node, "gpus": _gpus(spec), "uid": meta.get("uid", meta.get("name", ""))}
    if f"{JOBSET}jobset-name" in labels:
        return PodSlot(f"{namespace}/{labels[f'{JOBSET}jobset-name']}",
                       (labels.get(f"{JOBSET}replicatedjob-name", ""), _int(labels.get(f"{JOBSET}job-index")), index),
                       restart=_int(labels.get(f"{JOBSET}restart-attempt")), **common)
    if f"{KUBEFLOW}job-name" in labels:
        kind = str(labels.get(f"{KUBEFLOW}replica-type", "worker")).lower()
        return PodSlot(f"{namespace}/{labels[f'{KUBEFLOW}job-name']}",
                       (_REPLICA_ORDER.get(kind, 2), _int(labels.get(f"{KUBEFLOW}replica-index"))),
                       restart=restarts, **common)
    if f"{LWS}name" in labels:
        group = _int(labels.get(f"{LWS}group-index"))
        return PodSlot(f"{namespace}/{labels[f'{LWS}name']}-{group}", (_int(labels.get(f"{LWS}worker-index")),),
                       restart=restarts, **common)
    job_name = labels.get("batch.kubernetes.io/job-name") or labels.get("job-name")
    if job_name and (COMPLETION_INDEX in notes or COMPLETION_INDEX in labels):
        return PodSlot(f"{namespace}/{job_name}", (index,), restart=restarts, **common)
    rank = _env_rank(spec)
    if job_name and rank is not None:
        return PodSlot(f"{namespace}/{job_name}", (rank,), restart=restarts, **common)
    return None


def job_id(workload: str) -> str:
    """`default/llama` → `k8s-default-llama` (a job id is one name, no slash)."""
    return "k8s-" + workload.replace("/", "-")


def registration(workload: str, slots: Iterable[PodSlot], *, now: datetime) -> dict[str, Any]:
    """The job as `POST /v1/jobs` takes it: hosts in rank order when every pod has the
    whole of its node's share, explicit ranks when pods share a node or differ in GPUs."""
    ordered = sorted(slots, key=lambda s: s.order)
    gpus = {s.gpus for s in ordered}
    body: dict[str, Any] = {"id": job_id(workload), "start": now.isoformat(), "scheduler": "kubernetes",
                            "workload": workload, "restarts": max((s.restart for s in ordered), default=0)}
    nodes = [s.node for s in ordered]
    if len(gpus) == 1 and len(set(nodes)) == len(nodes):
        body["hosts"], body["gpus_per_host"] = nodes, max(1, gpus.pop())
        return body
    ranks: list[dict[str, Any]] = []
    used: dict[str, int] = {}
    for slot in ordered:
        for _ in range(max(1, slot.gpus)):
            gpu = used.get(slot.node, 0)
            used[slot.node] = gpu + 1
            ranks.append({"rank": len(ranks), "host": slot.node, "gpu": gpu})
    body["ranks"] = ranks
    return body


Post = Callable[[str, Any], None]


@dataclass
class Tracker:
    """The pods seen so far, by workload; `sync` posts what changed since the last sync."""

    post: Post
    settle_s: float = 5.0  # a job's pods come up one by one: register once they stop changing
    clock: Callable[[], float] = time.monotonic
    pods: dict[str, dict[str, PodSlot]] = field(default_factory=dict)  # workload -> pod uid -> slot
    changed: dict[str, float] = field(default_factory=dict)  # workload -> when it last changed
    posted: dict[str, tuple] = field(default_factory=dict)  # workload -> (placement, restart) posted

    def observe(self, kind: str, pod: Mapping[str, Any]) -> None:
        """One watch event (`ADDED`, `MODIFIED`, `DELETED`) on a pod."""
        meta = pod.get("metadata") or {}
        uid = meta.get("uid", meta.get("name", ""))
        slot = None if kind == "DELETED" else slot_of(pod)
        for workload, slots in list(self.pods.items()):
            if uid in slots and (slot is None or slot.job != workload):
                del slots[uid]
                self.changed[workload] = self.clock()
        if slot is not None and self.pods.setdefault(slot.job, {}).get(uid) != slot:
            self.pods[slot.job][uid] = slot
            self.changed[slot.job] = self.clock()

    def resync(self, pods: Iterable[Mapping[str, Any]]) -> None:
        """The full list of pods as a fresh list call answers it: pods not in it are gone
        (their DELETED events may have been missed while no watch was open)."""
        present = set()
        for pod in pods:
            meta = pod.get("metadata") or {}
            present.add(meta.get("uid", meta.get("name", "")))
            self.observe("ADDED", pod)
        for workload, slots in list(self.pods.items()):
            for uid in [uid for uid in slots if uid not in present]:
                del slots[uid]
                self.changed[workload] = self.clock()

    def sync(self, *, now: datetime | None = None, force: bool = False) -> list[str]:
        """Register every workload whose pods settled and whose placement or restart
        count differs from what was posted; answer the job ids posted."""
        now = now or datetime.now(UTC)
        done = []
        for workload, when in list(self.changed.items()):
            if not force and self.clock() - when < self.settle_s:
                continue
            del self.changed[workload]
            slots = list(self.pods.get(workload, {}).values())
            if not slots:
                continue
            body = registration(workload, slots, now=now)
            placement = (tuple(body.get("hosts") or ()), body.get("gpus_per_host"),
                         tuple((r["host"], r["gpu"]) for r in body.get("ranks") or ()))
            previous = self.posted.get(workload)
            if previous == (placement, body["restarts"]):
                continue
            restarted = previous is not None
            kind = "job_restart" if restarted else "job_start"
            reason = "pods rescheduled by Kubernetes" if restarted else "started under Kubernetes"
            event = {"id": f"{body['id']}-{kind}-{now.timestamp():.3f}", "time": now.isoformat(), "host": slots[0].node,
                     "kind": kind, "job": body["id"], "attrs": {"reason": reason}}
            try:
                self.post("/v1/jobs", body)
                self.post("/v1/events", [event])
            except Exception as exc:  # noqa: BLE001  (whatever the poster raises: the service is away, retry at the next sync)
                log.warning("k8s: registering %s failed (%s); will retry", body["id"], exc)
                self.changed[workload] = when
                continue
            self.posted[workload] = (placement, body["restarts"])
            done.append(body["id"])
        return done


def watch(tracker: Tracker, *, namespace: str | None = None, label_selector: str | None = None,
          sync_every_s: float = 1.0, stop: Callable[[], bool] = lambda: False) -> None:
    """Follow pods with the official client (in-cluster config, else ~/.kube/config) until `stop()`.

    As an informer does: list the pods (the tracker forgets those gone), then watch from the
    list's resourceVersion; when the watch fails (410 Gone after a compaction, the API server
    away) list again. A job's pods settle while the stream is quiet, so a thread syncs every
    `sync_every_s` (the tracker under one lock with the stream)."""
    from kubernetes import client, config
    from kubernetes import watch as k8s_watch
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config()
    core, api = client.CoreV1Api(), client.ApiClient()
    lister = (lambda **kw: core.list_namespaced_pod(namespace, **kw)) if namespace else core.list_pod_for_all_namespaces
    lock, finished = threading.Lock(), threading.Event()

    def sync_while_quiet() -> None:
        while not finished.wait(sync_every_s):
            with lock:
                tracker.sync()

    syncer = threading.Thread(target=sync_while_quiet, name="k8s-sync", daemon=True)
    syncer.start()
    try:
        while not stop():
            try:
                listed = lister(label_selector=label_selector)
                with lock:
                    tracker.resync(api.sanitize_for_serialization(pod) for pod in listed.items)
                version = listed.metadata.resource_version if listed.metadata else None  # None: the watch starts by sending every pod as ADDED
                stream = k8s_watch.Watch()
                for event in stream.stream(lister, label_selector=label_selector, resource_version=version,
                                           timeout_seconds=int(max(1, sync_every_s * 30))):
                    with lock:
                        tracker.observe(event["type"], api.sanitize_for_serialization(event["object"]))
                    if stop():
                        break
            except (ApiException, HTTPError, OSError) as exc:
                log.warning("k8s: the pod watch ended (%s); listing the pods again", getattr(exc, "status", None) or exc)
                time.sleep(sync_every_s)
    finally:
        finished.set()
        syncer.join()
        with lock:
            tracker.sync()
