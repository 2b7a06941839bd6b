"""The README's "Bring your cluster" path, step by step with the real commands: discover →
upload → Slurm prolog → a training log line names a rank, and the service puts it on the
right job and GPU with no manual step. (The agent's `--inventory` step is
tests/test_inventory.py; `k8s watch` is tests/test_k8s.py; a real Slurm running the hook
is tests/test_slurm.py.)"""

import shutil
from pathlib import Path

from click.testing import Result
from conftest import Server
from typer.testing import CliRunner

from faultgraph.service.cli import app
from faultgraph.service.schedulers import spool

DATA = Path(__file__).parent / "data" / "discover"
# A real PyTorch watchdog line (tests/test_parsers.py names its source).
WATCHDOG = ("[rank9]:[E ProcessGroupNCCL.cpp:1414] [PG 0 Rank 9] Process group watchdog thread terminated "
            "with exception: NCCL error: remote process exited or there was a network error, NCCL version 2.20.5")


def run(*args: str, env: dict | None = None) -> Result:
    """A `faultgraph` command as typed, run in this process (its HTTP calls go to the server process)."""
    done = CliRunner().invoke(app, list(args), env=env)
    assert done.exit_code == 0, done.stderr
    return done


def test_discover_upload_prolog_then_ranks_resolve(tmp_path: Path, live_server: Server) -> None:
    server = live_server
    dump = tmp_path / "dump"
    for host in ("a08-p1-dgx-04-c01", "a08-p1-dgx-04-c02"):  # two hosts the real fabric dump names
        (dump / host).mkdir(parents=True)
        shutil.copy(DATA / "h800-nvidia-smi-topo-m.txt", dump / host / "nvidia-smi-topo-m.txt")
    (dump / "fabric").mkdir()
    shutil.copy(DATA / "ibnetdiscover-topograph.txt", dump / "fabric" / "ibnetdiscover.txt")

    run("topology", "discover", str(dump), "-o", str(tmp_path / "topo.json"))
    uploaded = run("topology", "upload", str(tmp_path / "topo.json"), "--url", server.url)
    assert '"version":1' in uploaded.stdout

    run("slurm", "prolog", "--url", server.url, "--spool-dir", str(tmp_path / "spool"), "--gpus-per-host", "8",
        env={"SLURM_JOB_ID": "77", "SLURM_JOB_NAME": "pretrain", "SLURM_JOB_NODELIST": "a08-p1-dgx-04-c[01-02]"})
    # Under a loaded CI the hook's half-second budget may run out and it spools; the next hook delivers.
    spool.deliver([], url=server.url, token=None, spool_dir=tmp_path / "spool", budget_s=30)
    assert spool.pending(tmp_path / "spool") == []
    job = server.client.get("/v1/jobs/slurm-77").json()
    assert job["hosts"] == ["a08-p1-dgx-04-c01", "a08-p1-dgx-04-c02"] and job["world_size"] == 16

    posted = server.client.post("/v1/logs", json={"host": "a08-p1-dgx-04-c02", "source": "stderr", "lines": [WATCHDOG]})
    assert posted.status_code == 200, posted.text
    [event] = server.client.get("/v1/events", params={"kind": "nccl_error"}).json()["events"]
    assert (event["job"], event["rank"], event["component"]) == ("slurm-77", 9, "a08-p1-dgx-04-c02/gpu1")
