"""Remediation settings: nothing acts unless an operator opts in, action by action.

FAULTGRAPH_REMEDIATE            comma list of actuators to run: slurm, kubernetes, webhook (default: none — off)
FAULTGRAPH_REMEDIATE_LIVE       1 to really act; otherwise every decision is recorded as a dry run
FAULTGRAPH_REMEDIATE_MAX_HOSTS  hosts drained per rolling hour at most (default 2)
FAULTGRAPH_REMEDIATE_MAX_PERCENT  … and at most this % of the fleet's hosts per hour (default 1)
FAULTGRAPH_REMEDIATE_TOLERANCE_S  a component must stay faulty this long before its host is drained (default 300)
FAULTGRAPH_REMEDIATE_WEBHOOK    URL the webhook actuator POSTs each drain/resume to
FAULTGRAPH_REMEDIATE_PAGE       URL POSTed when the cap stops an action (page a human)
FAULTGRAPH_REMEDIATE_TAINT      the Kubernetes taint key (default faultgraph.io/faulty)
FAULTGRAPH_REMEDIATE_K8S_EVICT  1 to also evict the node's pods (Eviction API, budgets honoured)
FAULTGRAPH_REMEDIATE_EVERY_S    at most one pass this often, after the engine's passes (default 10)
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass

ACTUATORS: tuple[str, ...] = ("slurm", "kubernetes", "webhook")
ACTOR = "faultgraph-remediation"  # the audit events' actor


@dataclass(frozen=True)
class RemediationConfig:
    actuators: tuple[str, ...] = ()
    live: bool = False
    max_hosts_per_hour: int = 2
    max_percent_per_hour: float = 1.0
    tolerance_s: float = 300.0
    webhook_url: str | None = None
    page_url: str | None = None
    taint_key: str = "faultgraph.io/faulty"
    every_s: float = 10.0
    evict_pods: bool = False

    @property
    def enabled(self) -> bool:
        return bool(self.actuators)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "RemediationConfig":
        """Read the FAULTGRAPH_REMEDIATE* variables; ValueError names a malformed one."""
        env = os.environ if env is None else env
        actuators = tuple(a.strip() for a in env.get("FAULTGRAPH_REMEDIATE", "").split(",") if a.strip())
        unknown = [a for a in actuators if a not in ACTUATORS]
        if unknown:
            raise ValueError(f"FAULTGRAPH_REMEDIATE: {', '.join(unknown)} not one of {', '.join(ACTUATORS)}")
        try:
            config = cls(
                actuators=actuators,
                live=env.get("FAULTGRAPH_REMEDIATE_LIVE", "") in ("1", "true", "yes"),
                max_hosts_per_hour=int(env.get("FAULTGRAPH_REMEDIATE_MAX_HOSTS", 2)),
                max_percent_per_hour=float(env.get("FAULTGRAPH_REMEDIATE_MAX_PERCENT", 1.0)),
                tolerance_s=float(env.get("FAULTGRAPH_REMEDIATE_TOLERANCE_S", 300)),
                webhook_url=env.get("FAULTGRAPH_REMEDIATE_WEBHOOK") or None,
                page_url=env.get("FAULTGRAPH_REMEDIATE_PAGE") or None,
                taint_key=env.get("FAULTGRAPH_REMEDIATE_TAINT", "faultgraph.io/faulty"),
                every_s=float(env.get("FAULTGRAPH_REMEDIATE_EVERY_S", 10)),
                evict_pods=env.get("FAULTGRAPH_REMEDIATE_K8S_EVICT", "") in ("1", "true", "yes"),
            )
        except ValueError as exc:
            raise ValueError(f"FAULTGRAPH_REMEDIATE_*: {exc}") from None
        if config.max_hosts_per_hour < 0 or not 0 <= config.max_percent_per_hour <= 100 or config.tolerance_s < 0 or config.every_s < 0:
            raise ValueError("FAULTGRAPH_REMEDIATE_MAX_HOSTS ≥ 0, _MAX_PERCENT in [0, 100], _TOLERANCE_S and _EVERY_S ≥ 0")
        if "webhook" in actuators and not config.webhook_url:
            raise ValueError("FAULTGRAPH_REMEDIATE names webhook: set FAULTGRAPH_REMEDIATE_WEBHOOK")
        return config
