"""Evict or restart, priced in GPU-hours.

Evicting drops the failed part's data-parallel replicas and runs on at n − k GPUs until
the part returns: it costs the k GPUs' time for that long. Restarting brings the whole
job back from its last checkpoint: it costs all n GPUs for the restart and for the
progress rolled back since that checkpoint. The cheaper one is recommended where both are
possible; a fault that breaks a communication domain (an NVSwitch, a fabric switch) leaves
only the restart.

Inputs the events do not give are assumptions and are named as such in the answer.
"""

from datetime import datetime, timedelta
from typing import Any

# How long the job runs short before the evicted replicas rejoin (assumed): a spare host
# takes the drained one's place at the job's next checkpoint restart, which at scale comes
# within hours (Llama 3 405B: 419 interruptions in 54 days, one every ~3 h).
REPAIR_HOURS: dict[str, float] = {
    "gpu": 4.0,
    "host": 4.0,
    "network": 2.0,  # a cable or transceiver swap
}
DEFAULT_REPAIR_HOURS = 4.0
# A restart's own duration when the job has not shown one (scheduling, NCCL init, load).
DEFAULT_RESTART = timedelta(minutes=10)
# Progress rolled back when no checkpoint is known: half of a common 30-minute interval.
DEFAULT_ROLLBACK = timedelta(minutes=15)


def price(*, world: int, evicted: int, category: str, failed_at: datetime, last_checkpoint: datetime | None,
          restarted_at: datetime | None) -> dict[str, Any]:
    """Both options' GPU-hours with their inputs; `cheaper` names the smaller."""
    assumed = []
    repair = REPAIR_HOURS.get(category)
    if repair is None:
        repair = DEFAULT_REPAIR_HOURS
    assumed.append(f"replicas rejoin in {repair:g} h (assumed for a {category} fault)")
    if last_checkpoint is not None and last_checkpoint <= failed_at:
        rollback = failed_at - last_checkpoint
    else:
        rollback = DEFAULT_ROLLBACK
        assumed.append(f"{DEFAULT_ROLLBACK.total_seconds() / 60:g} min rolled back (no checkpoint seen)")
    if restarted_at is not None and restarted_at > failed_at:
        restart = restarted_at - failed_at
    else:
        restart = DEFAULT_RESTART
        assumed.append(f"{DEFAULT_RESTART.total_seconds() / 60:g} min to restart (no restart seen)")
    evict_cost = evicted * repair
    restart_cost = world * (restart + rollback).total_seconds() / 3600
    return {
        "evict_gpu_hours": round(evict_cost, 2),
        "restart_gpu_hours": round(restart_cost, 2),
        "cheaper": "evict" if evict_cost <= restart_cost else "restart",
        "inputs": {"gpus": world, "evicted_gpus": evicted, "repair_hours": repair,
                   "restart_minutes": round(restart.total_seconds() / 60, 1),
                   "rolled_back_minutes": round(rollback.total_seconds() / 60, 1)},
        "assumptions": assumed,
    }
