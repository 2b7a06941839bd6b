"""No event the API accepts can make the engine raise: every documented attr of every kind,
in each form its type allows (a flag or a word, a number or null, a list), through the
incident pass and the fail-slow localiser. One accepted event that raised there (a
`gpu_thermal` whose `throttle` was a flag) once stopped every later pass, so no incident
opened anywhere."""

from datetime import UTC, datetime, timedelta
from typing import get_type_hints

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from faultgraph.attribution import engine, stragglers
from faultgraph.attribution.cluster import ClusterSnapshot
from faultgraph.attribution.generators import rail_optimized
from faultgraph.attribution.placement import Placement
from faultgraph.attribution.topology import Topology
from faultgraph.service.events.models import KINDS, SERVICE_KINDS, OneEvent
from faultgraph.service.events.service import default_severity

T0 = datetime(2026, 11, 29, 8, tzinfo=UTC)
HOSTS = ["node0000", "node0001"]
JOB = {"id": "j", "start": (T0 - timedelta(hours=1)).isoformat(), "gpus_per_host": 8, "hosts": HOSTS}
TOPOLOGY = Topology.from_dict(rail_optimized(2))

# A value of every JSON shape, and words the attrs' types name: each union type met in each
# of its forms (a flag or a word, a number or null, a list of reasons).
# The largest numbers the schema takes too: a watchdog's wait of 2**63 - 1 ms once put a
# start before year 1 and failed every pass.
FORMS = [True, False, 0, 3, 2.5, -1, None, "hw_thermal", "down", "fatal", "dbe", "lost", "x", ["hw_thermal"], ["x"], [],
         {"a": 1}, 2**63 - 1, -(2**63), 10**14, 1e300, -1e300]
words = st.sampled_from(["hw_slowdown", "hw_thermal", "sw_power_cap", "down", "up", "fatal", "corrected", "dbe", "sbe",
                         "row_remap", "ok", "lost", "loss_spike", "nan", "faulty", "healthy", "gpu_hbm", "ALLREDUCE",
                         "ib", "node0001/gpu3", "node0001", "0000:3b:00", "mlx5_2", "sw_thermal_slowdown"])
values = st.sampled_from(FORMS) | st.integers(-2, 2**20) | st.floats(-1e6, 1e6, allow_nan=False) | words \
    | st.text(max_size=8) | st.lists(words, max_size=3)
POSTABLE = sorted(set(KINDS) - SERVICE_KINDS)
# What each kind requires, under the attr whose forms are tried.
REQUIRED = {"component_state": {"state": "faulty"}, "host_heartbeat": {"state": "lost"}, "train_anomaly": {"type": "nan"},
            "train_step": {"step": 1, "duration_ms": 100.0},
            "flight_recorder": {"pg": "0", "seq": 7, "op": "ALLREDUCE", "reason": "never_entered"}}


def stored(posted: dict, event_id: str) -> dict | None:
    """The event as the store hands it to the engine (severity and component filled, the
    component resolved as ingest resolves it), or None when validation refuses it."""
    try:
        event = OneEvent.validate_python(posted)
    except ValidationError:
        return None
    event = {**event, "id": event_id, "severity": event.get("severity") or default_severity(event)}
    event["component"] = CLUSTER.resolver.canonical(event["component"]) if event.get("component") \
        else CLUSTER.resolver.resolve(event, CLUSTER.placement("j")) or event["host"]
    return event


CLUSTER = ClusterSnapshot(TOPOLOGY, [JOB])


def engine_passes(events: list[dict]) -> None:
    """The incident pass over `events`, and the fail-slow localiser with them as the health
    reports around a slowdown of rank 0's GPU (node0000/gpu0)."""
    events = sorted(events, key=lambda e: (e["time"], e["id"]))
    for draft in engine.analyse(events, ClusterSnapshot(TOPOLOGY, [JOB])):
        assert draft.root_cause["cause"]
    placement = Placement.from_job(JOB)
    before = {r: stragglers.RankTiming(r, placement.host_of(r), 100.0, 90.0, 10.0) for r in range(placement.world_size)}
    during = {**before, 0: stragglers.RankTiming(0, placement.host_of(0), 130.0, 120.0, 10.0)}
    episode = stragglers.Episode(10, T0, None, None, T0 + timedelta(minutes=5), 100.0, 130.0)
    assert stragglers.localise(before, during, placement, TOPOLOGY, events, episode).component


@pytest.mark.parametrize("kind", POSTABLE)
def test_every_accepted_form_of_every_attr_goes_through_the_engine(kind: str) -> None:
    events = []
    for name in sorted(get_type_hints(KINDS[kind][0])) or [None]:
        for n, form in enumerate(FORMS):
            for component in ("node0000/gpu0", None):
                posted = {"time": T0 + timedelta(seconds=n), "host": "node0000", "kind": kind, "job": "j", "rank": 0,
                          "attrs": {**REQUIRED.get(kind, {}), **({} if name is None else {name: form})}, **({"component": component} if component else {})}
                if (event := stored(posted, f"{name}-{n}-{component}")) is not None:
                    events.append(event)
    assert events, f"no {kind} event accepted: FORMS lacks what its attrs take"
    for event in events:  # each alone (one event stops a pass), then all together
        engine_passes([event])
    engine_passes(events)


@st.composite
def accepted_event(draw: st.DrawFn) -> dict | None:
    kind = draw(st.sampled_from(POSTABLE))
    names = sorted(get_type_hints(KINDS[kind][0]))
    attrs = {**REQUIRED.get(kind, {}),
             **({name: draw(values) for name in draw(st.lists(st.sampled_from(names), unique=True))} if names else {})}
    posted = {"time": T0 + timedelta(seconds=draw(st.integers(0, 900))), "host": draw(st.sampled_from(HOSTS)),
              "kind": kind, "attrs": attrs, "job": draw(st.sampled_from([None, "j"])),
              "rank": draw(st.sampled_from([None, 0, 9, 15])), "component": draw(st.sampled_from([None, "node0000/gpu0"]))}
    return stored({k: v for k, v in posted.items() if v is not None}, f"e{draw(st.integers(0, 10**9))}")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=st.lists(accepted_event(), min_size=1, max_size=25))
def test_any_mix_of_accepted_events_goes_through_the_engine(drawn: list[dict | None]) -> None:
    engine_passes([e for e in drawn if e is not None])
