"""Loss spikes and NaNs (`train_anomaly`): where to roll back to and which data to skip.

The practice of large runs (PaLM, §5.1: restart "from a checkpoint roughly 100 steps
before the spike started, and skipped roughly 200–500 data batches"; OPT's logbook the
same): go back to the last checkpoint saved before the anomaly began and skip the batches
from that checkpoint through the anomaly plus a margin, so the replay does not meet the
same data in the same state.
"""

from collections.abc import Sequence
from typing import Any

from faultgraph.attribution.evidence import Item

# Batches skipped past the last anomalous step (PaLM skipped 200–500 in all).
SKIP_AFTER = 200


def _step(item: Item) -> int | None:
    value = (item.event.get("attrs") or {}).get("step")
    return value if isinstance(value, int) else None


def plan(job: str | None, anomalies: Sequence[Item], lifecycle: Sequence[Item]) -> dict:
    """The `rollback` action: last checkpoint_save before the onset and the steps to skip."""
    onset = min(item.time for item in anomalies)
    steps = [s for s in map(_step, anomalies) if s is not None]
    saves = [i for i in lifecycle if i.event["kind"] == "checkpoint_save" and i.event.get("job") == job and i.time < onset]
    saved = max(saves, key=lambda i: i.time) if saves else None
    saved_step = _step(saved) if saved else None
    action: dict[str, Any] = {"kind": "rollback", "target": job, "checkpoint": None, "skip_steps": None}
    if saved is not None:
        action["checkpoint"] = {"step": saved_step, "time": saved.time.isoformat().replace("+00:00", "Z"), "event": saved.id}
    if steps:
        first = (saved_step + 1) if saved_step is not None and saved_step < min(steps) else min(steps)
        action["skip_steps"] = [first, max(steps) + SKIP_AFTER]
    where = (f"the checkpoint of step {saved_step} saved at {saved.time:%H:%M:%S}" if saved is not None and saved_step is not None
             else f"the checkpoint saved at {saved.time:%H:%M:%S}" if saved is not None
             else "the last checkpoint before the anomaly (none was reported in the window)")
    skip = f" and skip data steps {action['skip_steps'][0]}–{action['skip_steps'][1]}" if action["skip_steps"] else ""
    action["detail"] = f"roll back to {where}{skip}, then resume"
    return action
