"""Remediation settings: nothing acts unless an operator opts in, action by action.

The FAULTGRAPH_REMEDIATE* variables are fields of the one settings class
(`service/config.py`, documented in service/README.md's settings table); this is the plan
they describe.
"""

from dataclasses import dataclass

from faultgraph.service.config import Settings

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
    def from_settings(cls, settings: Settings) -> "RemediationConfig":
        """The plan the FAULTGRAPH_REMEDIATE* settings describe (their ranges are the settings
        class's); ValueError names an unknown actuator or a webhook without its URL."""
        actuators = tuple(a.strip() for a in settings.remediate.split(",") if a.strip())
        unknown = [a for a in actuators if a not in ACTUATORS]
        if unknown:
            raise ValueError(f"FAULTGRAPH_REMEDIATE: {', '.join(unknown)} not one of {', '.join(ACTUATORS)}")
        if "webhook" in actuators and not settings.remediate_webhook:
            raise ValueError("FAULTGRAPH_REMEDIATE names webhook: set FAULTGRAPH_REMEDIATE_WEBHOOK")
        return cls(
            actuators=actuators,
            live=settings.remediate_live,
            max_hosts_per_hour=settings.remediate_max_hosts,
            max_percent_per_hour=settings.remediate_max_percent,
            tolerance_s=settings.remediate_tolerance_s,
            webhook_url=settings.remediate_webhook or None,
            page_url=settings.remediate_page or None,
            taint_key=settings.remediate_taint,
            every_s=settings.remediate_every_s,
            evict_pods=settings.remediate_k8s_evict,
        )
