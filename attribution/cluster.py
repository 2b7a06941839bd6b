"""The cluster as the engine sees it: the graph, the resolver, the jobs.

`ClusterSnapshot` holds them in memory, built from the same JSON the API takes, for the
engine's tests, `faultgraph eval` in process and the simulator; the service's own
`service.cluster.Cluster` (persisted, updated by ingest) answers the same questions.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from faultgraph.attribution import racks
from faultgraph.attribution.placement import Placement
from faultgraph.attribution.resolve import Resolver
from faultgraph.attribution.topology import Topology


def _aware(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value if value is None or value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def fabric_reach(topology: Topology | None, hosts: Iterable[str]) -> frozenset[str]:
    """The hosts plus the fabric switches their NICs plug into: where a fault can touch them."""
    hosts = set(hosts)
    switches: set[str] = set()
    if topology is not None:
        for host in hosts:
            switches |= topology.switches_of(host)
    return frozenset(hosts | switches | racks.reach(topology, hosts))  # racks: GB200 NVL72 NVLink domains


class ClusterSnapshot:
    """Topology + jobs, with the lookups the engine and ingest enrichment need."""

    def __init__(self, topology: Topology | None = None, jobs: Iterable[Mapping[str, Any]] = ()) -> None:
        self.topology = topology
        self.resolver = Resolver(topology)
        self.jobs: dict[str, Mapping[str, Any]] = {}
        self._placements: dict[str, Placement] = {}
        self._reach: dict[str, frozenset[str]] = {}
        self._by_host: dict[str, list[tuple[str, datetime | None, datetime | None]]] = defaultdict(list)
        for job in jobs:
            self.add_job(job)

    def add_job(self, job: Mapping[str, Any]) -> None:
        """Register (or replace) a job; raises ValueError when its placement is invalid."""
        placement = Placement.from_job(job)
        self.jobs[job["id"]] = job
        self._placements[job["id"]] = placement
        self._reach.pop(job["id"], None)
        start, end = _aware(job.get("start")), _aware(job.get("end"))
        for host in placement.hosts():
            self._by_host[host] = [entry for entry in self._by_host[host] if entry[0] != job["id"]]
            self._by_host[host].append((job["id"], start, end))

    def reach(self, hosts: Iterable[str], *, job: str | None = None) -> frozenset[str]:
        """`fabric_reach` of the hosts; a job's is computed once per snapshot."""
        if job is None:
            return fabric_reach(self.topology, hosts)
        if job not in self._reach:
            self._reach[job] = fabric_reach(self.topology, hosts)
        return self._reach[job]

    def placement(self, job: str) -> Placement | None:
        return self._placements.get(job)

    def jobs_on(self, host: str, at: datetime) -> list[str]:
        """Jobs that had `host` in their placement at time `at`."""
        return sorted(
            job for job, start, end in self._by_host.get(host, ())
            if (start is None or start <= at) and (end is None or at <= end)
        )

    def resolve(self, event: Mapping[str, Any], placement: Placement | None = None) -> str | None:
        return self.resolver.resolve(event, placement)

    def peer(self, peer: str, placement: Placement | None = None) -> str | None:
        return self.resolver.peer(peer, placement)

    def job_of(self, host: str, rank: int | None, at: datetime) -> str | None:
        """The job a training-process line belongs to: the one running `rank` on `host` then."""
        for job in self.jobs_on(host, at):
            placement = self._placements[job]
            if rank is None or placement.host_of(rank) == host:
                return job
        return None
