"""What `faultgraph demo` replays: the fault simulator's scenario (attribution/simulate.py)
on a small generated cluster, one fault of every kind it knows, ending now.

The demo replays it over the public API as `faultgraph eval` does (`service.evaluate.replay`).
A server that does not have the topology, jobs or raw-log routes yet gets the cluster
straight into its snapshot, and the log lines through the same parsers here, so the demo
runs against whichever routes exist.
"""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from attribution import simulate
from attribution.cluster import ClusterSnapshot
from attribution.topology import Topology
from ingest.parse import parse_line

# One of every scenario type the simulator has: each mechanism, a concurrent pair, a red herring.
FAULTS = len(simulate.SCENARIO_TYPES)


def scenario(hosts: int, *, seed: int = 0, now: datetime | None = None) -> simulate.Scenario:
    """The simulator's scenario on `hosts` hosts, shifted so that its last record is `now`."""
    planned = simulate.scenario_set(FAULTS, seed=seed, hosts=hosts)
    last = datetime.fromisoformat(planned.records[-1]["time"].replace("Z", "+00:00"))
    start = simulate.DEFAULT_START + ((now or datetime.now(UTC)) - last)
    return simulate.scenario_set(FAULTS, seed=seed, hosts=hosts, start=start.replace(microsecond=0) - timedelta(minutes=1))


def in_process(app: Any, sent: simulate.Scenario) -> list[dict]:
    """Install the scenario's cluster on `app` directly (snapshot and ingest enrichment) and
    return its records as events: log lines through the parsers, service events as they are."""
    cluster = ClusterSnapshot(Topology.from_dict(sent.topology), sent.jobs)
    app.state.cluster, app.state.enrich = cluster, enricher(cluster)
    events: list[dict] = []
    for record in sent.records:
        if record["type"] == "event":
            events.append(record["event"])
            continue
        event = parse_line(record["line"], host=record["host"], source=record["source"])
        if event is not None:
            event["time"] = event["time"].isoformat()
            events.append(event)
    return events


def enricher(cluster: ClusterSnapshot) -> Callable[[dict], None]:
    """Fill an event's component from the topology and its job from the rank's placement."""

    def enrich(event: dict) -> None:
        if not event.get("job") and event.get("rank") is not None:
            event["job"] = cluster.job_of(event["host"], event["rank"], event["time"])
        if not event.get("component"):
            placement = cluster.placement(event["job"]) if event.get("job") else None
            event["component"] = cluster.resolve(event, placement)

    return enrich
