"""The hands of remediation: each actuator drains a host out of scheduling and resumes it.

- Slurm: `scontrol update NodeName=<host> State=DRAIN Reason="faultgraph inc-…"`, and
  `State=RESUME` after repair (scontrol finds its cluster through SLURM_CONF as usual).
- Kubernetes (official client): cordon (`spec.unschedulable`) and a `NoSchedule` taint,
  sent as one JSON Patch guarded by the node's `resourceVersion`, so a concurrent change
  to the node fails the patch instead of being overwritten. Resume removes both. Optionally
  drain: evict the node's pods through the Eviction API (as `kubectl drain` does, so
  PodDisruptionBudgets are honoured; DaemonSet and mirror pods are left).
- Webhook: POST the decision as JSON to a URL (a ticketing system, a custom drainer).
Each raises `ActionFailed` with the tool's own words when the action did not happen.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from typing import Any, Protocol

import httpx
from urllib3.exceptions import HTTPError


class ActionFailed(RuntimeError):
    """The actuator tried and the target refused or could not be reached."""


class Actuator(Protocol):
    name: str

    def drain(self, host: str, reason: str) -> str: ...

    def resume(self, host: str, reason: str) -> str: ...


class Slurm:
    """Drain and resume through `scontrol`; returns the command line run."""

    name = "slurm"

    def __init__(self, scontrol: str = "scontrol", env: Mapping[str, str] | None = None, timeout: float = 30) -> None:
        self.scontrol, self.env, self.timeout = scontrol, dict(env) if env is not None else None, timeout

    def _update(self, host: str, *settings: str) -> str:
        command = [self.scontrol, "update", f"NodeName={host}", *settings]
        try:
            done = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=self.timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ActionFailed(f"{command[0]}: {exc}") from None
        if done.returncode:
            raise ActionFailed(f"scontrol exited {done.returncode}: {(done.stderr or done.stdout).strip()}")
        return " ".join(command)

    def drain(self, host: str, reason: str) -> str:
        return self._update(host, "State=DRAIN", f"Reason={reason}")

    def resume(self, host: str, reason: str) -> str:
        return self._update(host, "State=RESUME")


class Kubernetes:
    """Cordon and taint a node through the Kubernetes API (in-cluster or kubeconfig)."""

    name = "kubernetes"

    def __init__(self, api: Any = None, *, taint_key: str = "faultgraph.io/faulty", evict_pods: bool = False) -> None:
        if api is None:
            from kubernetes import client, config

            try:
                config.load_incluster_config()
            except config.ConfigException:
                config.load_kube_config()
            api = client.CoreV1Api()
        self.api, self.taint_key, self.evict_pods = api, taint_key, evict_pods

    def _patch(self, host: str, *, cordon: bool, reason: str) -> str:
        from kubernetes.client.exceptions import ApiException

        try:
            node = self.api.read_node(host)
            taints = [self.api.api_client.sanitize_for_serialization(t) for t in (node.spec.taints or [])
                      if t.key != self.taint_key]
            if cordon:
                taints.append({"key": self.taint_key, "value": "true", "effect": "NoSchedule"})
            patch = [
                {"op": "test", "path": "/metadata/resourceVersion", "value": node.metadata.resource_version},
                {"op": "add", "path": "/spec/unschedulable", "value": cordon},
                {"op": "add", "path": "/spec/taints", "value": taints},
            ]
            self.api.patch_node(host, patch)
        except ApiException as exc:
            raise ActionFailed(f"kubernetes answered {exc.status}: {exc.reason}") from None
        except (HTTPError, OSError) as exc:  # the client's connection errors come from urllib3
            raise ActionFailed(f"kubernetes: {exc}") from None
        verb = "cordoned and tainted" if cordon else "uncordoned and untainted"
        return f"node {host} {verb} ({self.taint_key}=true:NoSchedule): {reason}"

    def _evict(self, host: str) -> str:
        """Evict every pod on the node but DaemonSet and mirror pods; a 429 is a
        PodDisruptionBudget saying not now, counted and left for the next drain."""
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        evicted, blocked = [], []
        try:
            pods = self.api.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={host}").items
            for pod in pods:
                meta = pod.metadata
                if any(owner.kind == "DaemonSet" for owner in meta.owner_references or []) or \
                        "kubernetes.io/config.mirror" in (meta.annotations or {}):
                    continue
                body = client.V1Eviction(api_version="policy/v1", kind="Eviction",  # as kubectl drain sends it
                                         metadata=client.V1ObjectMeta(name=meta.name, namespace=meta.namespace))
                try:
                    self.api.create_namespaced_pod_eviction(meta.name, meta.namespace, body)
                    evicted.append(f"{meta.namespace}/{meta.name}")
                except ApiException as exc:
                    if exc.status != 429:
                        raise
                    blocked.append(f"{meta.namespace}/{meta.name}")
        except ApiException as exc:
            raise ActionFailed(f"kubernetes answered {exc.status} while evicting: {exc.reason}") from None
        return f"; evicted {len(evicted)} pods ({', '.join(evicted) or 'none'})" + (
            f", {len(blocked)} held by a disruption budget ({', '.join(blocked)})" if blocked else "")

    def drain(self, host: str, reason: str) -> str:
        done = self._patch(host, cordon=True, reason=reason)
        return done + self._evict(host) if self.evict_pods else done

    def resume(self, host: str, reason: str) -> str:
        return self._patch(host, cordon=False, reason=reason)


class Webhook:
    """POST `{"action", "host", "reason"}` to a URL; any 2xx is success."""

    name = "webhook"

    def __init__(self, url: str, *, timeout: float = 10) -> None:
        self.url, self.timeout = url, timeout

    def _post(self, action: str, host: str, reason: str) -> str:
        try:
            answer = httpx.post(self.url, json={"action": action, "host": host, "reason": reason}, timeout=self.timeout)
        except httpx.HTTPError as exc:
            raise ActionFailed(f"webhook {self.url}: {exc}") from None
        if not answer.is_success:
            raise ActionFailed(f"webhook {self.url} answered {answer.status_code}: {answer.text[:200]}")
        return f"POST {self.url} → {answer.status_code}"

    def drain(self, host: str, reason: str) -> str:
        return self._post("drain", host, reason)

    def resume(self, host: str, reason: str) -> str:
        return self._post("resume", host, reason)
