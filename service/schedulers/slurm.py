"""Slurm's prolog and epilog → a job registration and its `job_*` events (SPEC §4).

Which variables a hook sees depends on where Slurm runs it (read from Slurm 22.05's
environment, see tests/test_slurm.py): `PrologSlurmctld`/`EpilogSlurmctld` get
`SLURM_JOB_NAME`, `SLURM_JOB_NODELIST` and `SLURM_JOB_RESTART_COUNT`; the per-node
`Prolog`/`Epilog` (slurmd) get `SLURM_NODELIST` and `SLURM_JOB_RESTART_COUNT` but no job
name; a batch script sees `SLURM_JOB_NODELIST`, `SLURM_GPUS_ON_NODE` and, once requeued,
`SLURM_RESTART_COUNT`. Every one of them works: the SPEC's name first, then the others.
Event ids are derived from the job, the kind and the restart, so the same prolog run on
every node of a job stores one event.
"""

from collections.abc import Mapping
from datetime import datetime

import hostlist

from faultgraph.service.schedulers.spool import Post

NODELIST_VARS = ("SLURM_JOB_NODELIST", "SLURM_NODELIST")
RESTART_VARS = ("SLURM_RESTART_COUNT", "SLURM_JOB_RESTART_COUNT")
# EpilogSlurmctld's exit status of the job ("0:0" is status:signal in some versions).
EXIT_VARS = ("SLURM_JOB_EXIT_CODE2", "SLURM_JOB_EXIT_CODE", "SLURM_JOB_DERIVED_EC")


class SlurmEnvError(ValueError):
    """The environment lacks what a registration needs; the message names the variable."""


def _first(env: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    return next((env[name] for name in names if env.get(name, "").strip()), None)


def hosts_of(env: Mapping[str, str]) -> list[str]:
    """The job's hosts in Slurm's order (rank order for `srun`'s block distribution)."""
    nodelist = _first(env, NODELIST_VARS)
    if nodelist is None:
        raise SlurmEnvError("neither SLURM_JOB_NODELIST nor SLURM_NODELIST is set: not run by Slurm?")
    try:
        return hostlist.expand_hostlist(nodelist)
    except hostlist.BadHostlist as exc:
        raise SlurmEnvError(f"SLURM_JOB_NODELIST {nodelist!r} is not a hostlist: {exc}") from None


def _int(env: Mapping[str, str], names: tuple[str, ...], default: int | None) -> int | None:
    raw = _first(env, names)
    if raw is None:
        return default
    try:
        return int(raw.split("(")[0])  # SLURM_GPUS_ON_NODE may read "8(x2)" in heterogeneous steps
    except ValueError:
        raise SlurmEnvError(f"{names[0]}={raw!r} is not a number") from None


def job_id(env: Mapping[str, str]) -> str:
    raw = env.get("SLURM_JOB_ID", "").strip()
    if not raw:
        raise SlurmEnvError("SLURM_JOB_ID is not set: not run by Slurm?")
    return f"slurm-{raw}"


def _event(kind: str, job: str, host: str, now: datetime, suffix: str, attrs: dict) -> dict:
    return {"id": f"{job}-{kind}-{suffix}", "time": now.isoformat(), "host": host, "kind": kind,
            "job": job, "attrs": attrs}


def prolog(env: Mapping[str, str], *, now: datetime, gpus_per_host: int | None = None) -> list[Post]:
    """The registration (hosts in order, GPUs per host) and `job_start` or `job_restart`."""
    job, hosts = job_id(env), hosts_of(env)
    restarts = _int(env, RESTART_VARS, 0) or 0
    gpus = _int(env, ("SLURM_GPUS_ON_NODE",), gpus_per_host)
    registration: dict = {"id": job, "start": now.isoformat(), "hosts": hosts, "scheduler": "slurm",
                          "restarts": restarts}
    if gpus:
        registration["gpus_per_host"] = gpus
    if name := env.get("SLURM_JOB_NAME"):
        registration["name"] = name
    kind = "job_restart" if restarts else "job_start"
    reason = f"requeued by Slurm (restart {restarts})" if restarts else "started by Slurm"
    event = _event(kind, job, hosts[0], now, str(restarts), {"reason": reason})
    return [Post("/v1/jobs", registration), Post("/v1/events", [event])]


def epilog(env: Mapping[str, str], *, now: datetime) -> list[Post]:
    """`job_end`, or `job_fail` when Slurm reports a non-zero exit status."""
    job, hosts = job_id(env), hosts_of(env)
    restarts = _int(env, RESTART_VARS, 0) or 0
    status = _first(env, EXIT_VARS)
    failed = status is not None and any(part.strip() not in ("", "0") for part in status.split(":"))
    kind = "job_fail" if failed else "job_end"
    reason = f"Slurm exit status {status}" if failed else "ended under Slurm"
    return [Post("/v1/events", [_event(kind, job, hosts[0], now, str(restarts), {"reason": reason})])]
