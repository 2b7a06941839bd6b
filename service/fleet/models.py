"""Fleet: no table of its own. A component's state is replayed from what is stored — its
`component_state` events and the incidents that name it as root — so re-analysis,
on-call's confirmations and late events are always reflected, and history is never lost.
These are the query vocabularies the routes check."""

from faultgraph.attribution.fleet import STATES

# Which units the fleet statistics count: a slot (the component id, e.g. node0042/gpu3)
# or the serial of the board fitted there (a GPU that moves keeps its record).
UNITS: tuple[str, ...] = ("slot", "serial")

__all__ = ["STATES", "UNITS"]
