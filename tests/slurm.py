"""A real one-node Slurm for tests: Debian's `slurm-wlm` (slurmctld + slurmd) on loopback.

Everything lives in a temporary directory: `slurm.conf`, state, spool, logs, pid files;
the daemons talk on free loopback ports with `auth/none` (no munge daemon needed), the
single node is `node0001` (`slurmd -N`), so job node lists look like a cluster's. Use it
from a test module:

    from slurm import SlurmCluster, slurm_cluster, start_slurm   # noqa: F401 (fixture)

    def test_x(slurm_cluster):                      # a cluster without hooks
        job = slurm_cluster.sbatch("--wrap", "true")
        assert slurm_cluster.wait(job)["JobState"] == "COMPLETED"

    def test_y(tmp_path):                           # hooks, extra slurm.conf lines
        with start_slurm(tmp_path, conf={"PrologSlurmctld": "/path/to/hook"}) as cluster:
            cluster.scontrol("update", "NodeName=node0001", "State=DRAIN", "Reason=test")

The daemons run as root (slurmd must, to run the Prolog); without root, or without the
binaries, the fixture skips — except in CI (`CI` set), where that is a failure.
"""

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

NODE = "node0001"
BINARIES = ("slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "srun")
DONE_STATES = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED"})


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def unavailable() -> str | None:
    """Why a real Slurm cannot run here, or None."""
    missing = [name for name in BINARIES if shutil.which(name) is None]
    if missing:
        return f"Slurm binaries missing ({', '.join(missing)}): apt-get install slurm-wlm"
    if os.geteuid() != 0:
        return "slurmd must run as root to run a Prolog"
    return None


@dataclass
class SlurmCluster:
    """A running one-node cluster; `run` calls its client commands with its slurm.conf."""

    root: Path
    conf: Path
    node: str = NODE

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
        done = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode:
            raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}\n{self.logs()}")
        return done

    def scontrol(self, *args: str) -> str:
        return self.run("scontrol", *args).stdout

    def sbatch(self, *args: str) -> str:
        """Submit a batch job (`sbatch --parsable …`) and answer its id."""
        return self.run("sbatch", "--parsable", "-o", str(self.root / "job-%j.out"), *args).stdout.strip().split(";")[0]

    def job(self, job_id: str) -> dict[str, str]:
        """`scontrol show job -o` as a dict (JobState, Restarts, NodeList, ExitCode, …)."""
        fields: dict[str, str] = {}
        for part in self.scontrol("show", "job", "-o", job_id).split():
            key, _, value = part.partition("=")
            fields.setdefault(key, value)
        return fields

    def wait(self, job_id: str, *, states: frozenset[str] = DONE_STATES, timeout: float = 60) -> dict[str, str]:
        """Poll until the job is in one of `states` (by default: finished); answer its fields."""
        deadline = time.monotonic() + timeout
        while True:
            fields = self.job(job_id)
            if fields.get("JobState") in states:
                return fields
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {fields.get('JobState')} after {timeout} s\n{self.logs()}")
            time.sleep(0.2)

    def node_state(self) -> str:
        """The node's state as `sinfo` prints it (idle, alloc, drain, …)."""
        return self.run("sinfo", "-h", "-n", self.node, "-o", "%t").stdout.strip()

    def logs(self) -> str:
        tails = []
        for name in ("slurmctld.log", "slurmd.log"):
            path = self.root / name
            if path.exists():
                tails.append(f"--- {name}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-15:]))
        return "\n".join(tails)


def _config(root: Path, extra: Mapping[str, str]) -> str:
    settings = {
        "ClusterName": "faultgraph-test",
        "SlurmctldHost": f"{socket.gethostname()}(127.0.0.1)",
        "SlurmctldPort": str(_free_port()),
        "SlurmdPort": str(_free_port()),
        "AuthType": "auth/none",
        "CredType": "cred/none",
        "SlurmUser": "root",
        "SlurmdUser": "root",
        "StateSaveLocation": str(root / "state"),
        "SlurmdSpoolDir": str(root / "spool"),
        "SlurmctldPidFile": str(root / "slurmctld.pid"),
        "SlurmdPidFile": str(root / "slurmd.pid"),
        "SlurmctldLogFile": str(root / "slurmctld.log"),
        "SlurmdLogFile": str(root / "slurmd.log"),
        "ProctrackType": "proctrack/linuxproc",
        "TaskPlugin": "task/none",
        "SchedulerType": "sched/builtin",
        "SchedulerParameters": "sched_interval=1",  # start queued jobs within a second, not a minute
        "SelectType": "select/cons_tres",
        "SelectTypeParameters": "CR_Core",
        "ReturnToService": "2",
        "MpiDefault": "none",
        "MailProg": "/bin/true",
        **extra,
    }
    lines = [f"{key}={value}" for key, value in settings.items()]
    lines.append(f"NodeName={NODE} NodeAddr=127.0.0.1 NodeHostname={socket.gethostname()} CPUs=2 State=UNKNOWN")
    lines.append(f"PartitionName=debug Nodes={NODE} Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


@contextmanager
def start_slurm(tmp_path: Path, *, conf: Mapping[str, str] | None = None, timeout: float = 30) -> Iterator[SlurmCluster]:
    """Start slurmctld and slurmd in `tmp_path/slurm`, wait until the node is idle, stop both after.

    `conf` adds or overrides slurm.conf settings (`Prolog`, `EpilogSlurmctld`, …).
    """
    reason = unavailable()
    if reason:
        if os.environ.get("CI"):
            raise RuntimeError(f"CI needs a real Slurm: {reason}")
        pytest.skip(reason)
    root = tmp_path / "slurm"
    for sub in ("state", "spool"):
        (root / sub).mkdir(parents=True)
    cluster = SlurmCluster(root=root, conf=root / "slurm.conf")
    cluster.conf.write_text(_config(root, conf or {}))
    env = cluster.env
    pids: list[int] = []
    try:
        subprocess.run(["slurmctld", "-f", str(cluster.conf), "-i"], env=env, check=True, timeout=timeout)
        pids.append(_pid(root / "slurmctld.pid", timeout))
        subprocess.run(["slurmd", "-f", str(cluster.conf), "-N", NODE], env=env, check=True, timeout=timeout)
        pids.append(_pid(root / "slurmd.pid", timeout))
        deadline = time.monotonic() + timeout
        while cluster.node_state() != "idle":
            if time.monotonic() > deadline:
                raise RuntimeError(f"node {NODE} not idle after {timeout} s: {cluster.node_state()}\n{cluster.logs()}")
            time.sleep(0.2)
        yield cluster
    finally:
        for pid in reversed(pids):
            _stop(pid)


def _pid(path: Path, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().strip()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path} not written in {timeout} s")
        time.sleep(0.05)
    return int(path.read_text())


def _stop(pid: int) -> None:
    """SIGTERM a daemon we started, then wait for it to go (SIGKILL after 10 s)."""
    try:
        os.kill(pid, 15)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass


@pytest.fixture
def slurm_cluster(tmp_path: Path) -> Iterator[SlurmCluster]:
    """A running one-node Slurm without hooks (see `start_slurm` for hooks and settings)."""
    with start_slurm(tmp_path) as cluster:
        yield cluster
