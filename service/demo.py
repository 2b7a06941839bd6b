"""What `faultgraph demo` replays: the fault simulator's scenario (simulate/scenarios.py)
on a small generated cluster, one fault of every kind it knows, ending now. The demo sends
it over the public API as `faultgraph eval` does (`faultgraph.simulate.evaluate.replay`): topology,
jobs, raw log lines through the parsers, service events, then one engine pass.
"""

from datetime import UTC, datetime, timedelta

from faultgraph.simulate import scenarios

# One of every scenario type the simulator has: each mechanism, a concurrent pair, a red herring.
FAULTS = len(scenarios.SCENARIO_TYPES)
# Records per post: small enough that the progress bar moves.
BATCH = 500


def scenario(hosts: int, *, seed: int = 0, now: datetime | None = None) -> scenarios.Scenario:
    """The simulator's scenario on `hosts` hosts, shifted so that its last record is about `now`."""
    planned = scenarios.scenario_set(FAULTS, seed=seed, hosts=hosts)
    last = datetime.fromisoformat(planned.records[-1]["time"].replace("Z", "+00:00"))
    start = scenarios.DEFAULT_START + ((now or datetime.now(UTC)) - last)
    return scenarios.scenario_set(FAULTS, seed=seed, hosts=hosts, start=start.replace(microsecond=0) - timedelta(minutes=1))
