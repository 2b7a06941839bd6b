"""Slurm registers its jobs (SPEC §4): the hooks alone, then under a real slurmctld + slurmd."""

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
import pytest
from conftest import Server, empty_store, start_server, store_token
from slurm import SlurmCluster, slurm_cluster, start_slurm  # noqa: F401  (fixture)

from faultgraph.service.schedulers import slurm, spool

NOW = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
HOOK = [sys.executable, "-m", "faultgraph.service.schedulers.cli", "slurm"]


@pytest.fixture
def server(live_server: Server) -> Server:
    """The hooks post over HTTP from Slurm's own processes: a real server, one per module."""
    return live_server


@pytest.mark.parametrize(("nodelist", "hosts"), [
    ("node[0001-0003,0070],gpu-a[1-3]",
     ["node0001", "node0002", "node0003", "node0070", "gpu-a1", "gpu-a2", "gpu-a3"]),
    ("r[1-2]n[08-10]", ["r1n08", "r1n09", "r1n10", "r2n08", "r2n09", "r2n10"]),  # two bracket groups
    ("a1,b2,node[007-008]", ["a1", "b2", "node007", "node008"]),
    ("dgx[099-101]", ["dgx099", "dgx100", "dgx101"]),  # zero padding kept past a carry
])
def test_hostlists_expand_in_slurm_order(nodelist: str, hosts: list[str]) -> None:
    assert slurm.hosts_of({"SLURM_JOB_NODELIST": nodelist}) == hosts


def test_prolog_registers_the_job_and_its_start() -> None:
    env = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NAME": "llama", "SLURM_JOB_NODELIST": "node[0001-0002]",
           "SLURM_GPUS_ON_NODE": "8"}
    job, events = slurm.prolog(env, now=NOW)
    assert job.path == "/v1/jobs"
    assert job.body == {"id": "slurm-4242", "start": NOW.isoformat(), "hosts": ["node0001", "node0002"],
                        "scheduler": "slurm", "restarts": 0, "gpus_per_host": 8, "name": "llama"}
    [event] = events.body
    assert (event["kind"], event["job"], event["host"]) == ("job_start", "slurm-4242", "node0001")


def test_a_requeued_job_registers_a_restart_from_either_variable() -> None:
    for variable in ("SLURM_RESTART_COUNT", "SLURM_JOB_RESTART_COUNT"):  # batch script / prolog names
        env = {"SLURM_JOB_ID": "7", "SLURM_NODELIST": "n1", variable: "2"}
        [event] = slurm.prolog(env, now=NOW, gpus_per_host=4)[1].body
        assert (event["kind"], event["id"]) == ("job_restart", "slurm-7-job_restart-2")


@pytest.mark.parametrize(("status", "kind"), [("0:0", "job_end"), ("3:0", "job_fail"), ("0:9", "job_fail"), (None, "job_end")])
def test_epilog_reads_the_exit_status(status: str | None, kind: str) -> None:
    env = {"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "n1", **({"SLURM_JOB_EXIT_CODE2": status} if status else {})}
    [post] = slurm.epilog(env, now=NOW)
    assert post.body[0]["kind"] == kind


def test_missing_or_bad_variables_are_named() -> None:
    with pytest.raises(slurm.SlurmEnvError, match="SLURM_JOB_ID"):
        slurm.prolog({"SLURM_JOB_NODELIST": "n1"}, now=NOW)
    with pytest.raises(slurm.SlurmEnvError, match="hostlist"):
        slurm.prolog({"SLURM_JOB_ID": "1", "SLURM_JOB_NODELIST": "node[1-"}, now=NOW)


def _hook_env(**slurm_vars: str) -> dict[str, str]:
    return {**os.environ, **slurm_vars}


def test_service_down_spools_and_exits_zero_then_the_next_hook_delivers(tmp_path: Path, server: Server) -> None:
    spool_dir = tmp_path / "spool"
    with socket.socket() as silent:  # accepts connections, never answers: the worst case
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        dead = f"http://127.0.0.1:{silent.getsockname()[1]}"
        env = _hook_env(SLURM_JOB_ID="11", SLURM_JOB_NODELIST="node[0001-0002]")
        done = subprocess.run([*HOOK, "prolog", "--url", dead, "--spool-dir", str(spool_dir), "--gpus-per-host", "8"],
                              env=env, capture_output=True, text=True, check=False, timeout=20)
    assert done.returncode == 0, done.stderr
    assert "2 spooled" in done.stderr
    assert [orjson.loads(p.read_bytes())["path"] for p in spool.pending(spool_dir)] == ["/v1/jobs", "/v1/events"]

    env = _hook_env(SLURM_JOB_ID="11", SLURM_JOB_NODELIST="node[0001-0002]", SLURM_JOB_EXIT_CODE2="0:0")
    done = subprocess.run([*HOOK, "epilog", "--url", server.url, "--spool-dir", str(spool_dir)],
                          env=env, capture_output=True, text=True, check=False, timeout=20)
    assert done.returncode == 0, done.stderr
    assert spool.pending(spool_dir) == []
    job = server.client.get("/v1/jobs/slurm-11").json()
    assert job["hosts"] == ["node0001", "node0002"] and job["state"] == "ended"
    kinds = [e["kind"] for e in server.client.get("/v1/events", params={"job": "slurm-11"}).json()["events"]]
    assert kinds == ["job_start", "job_end"]


def test_a_refused_post_is_kept_apart_not_retried_forever(tmp_path: Path, server: Server) -> None:
    outcome = spool.deliver([spool.Post("/v1/jobs", {"id": "x", "hosts": ["a"], "ranks": []})],
                            url=server.url, token=None, spool_dir=tmp_path)
    assert (len(outcome.refused), outcome.spooled) == (1, 0)
    assert outcome.refused[0].status == 422 and outcome.refused[0].path == "/v1/jobs"
    assert spool.pending(tmp_path) == [] and len(spool.pending(tmp_path / "rejected")) == 1


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    """A real server whose store holds tokens (so every request needs one), and a reader's."""
    stores = empty_store(tmp_path_factory.mktemp("secured"), "faultgraph")
    db_url = next(stores)
    reader = store_token(db_url, role="reader", name="slurm-test-reader")
    srv = start_server(db_url)
    yield srv, reader
    srv.stop()
    stores.close()


@pytest.mark.parametrize(("token", "status", "detail"), [
    ("not-a-token", 401, "a valid bearer token is required"),
    (None, 403, "this token's role does not allow this request"),  # None: the reader's token
])
def test_a_post_refused_for_good_is_named_and_not_spooled(tmp_path: Path, secured: tuple[Server, str],
                                                          token: str | None, status: int, detail: str) -> None:
    """Retrying cannot mend a wrong token or role: the hook says so, with the server's detail,
    instead of spooling the posts for every later hook to resend, and still exits 0 (a failed
    hook would requeue the job or drain the node)."""
    server, reader = secured
    spool_dir = tmp_path / "spool"
    env = _hook_env(SLURM_JOB_ID="12", SLURM_JOB_NODELIST="node[0001-0002]", FAULTGRAPH_TOKEN=token or reader)
    done = subprocess.run([*HOOK, "prolog", "--url", server.url, "--spool-dir", str(spool_dir), "--gpus-per-host", "8"],
                          env=env, capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"refused POST /v1/jobs with {status}: {detail}" in done.stderr
    assert "0 spooled" in done.stderr and spool.pending(spool_dir) == []
    assert len(spool.pending(spool_dir / "rejected")) == 2


class _Answering(BaseHTTPRequestHandler):
    """Answers every post with the server's `status` (a stand-in for an overloaded service)."""

    def do_POST(self) -> None:  # noqa: N802  (http.server's name)
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(self.server.status)  # type: ignore[attr-defined]
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503])
def test_a_post_refused_for_now_stays_spooled(tmp_path: Path, status: int) -> None:
    with ThreadingHTTPServer(("127.0.0.1", 0), _Answering) as answering:
        answering.status = status  # type: ignore[attr-defined]
        threading.Thread(target=answering.serve_forever, daemon=True).start()
        outcome = spool.deliver(slurm.prolog({"SLURM_JOB_ID": "13", "SLURM_JOB_NODELIST": "n1"}, now=NOW),
                                url=f"http://127.0.0.1:{answering.server_address[1]}", token="t",
                                spool_dir=tmp_path, budget_s=5)
        answering.shutdown()
    assert (outcome.sent, outcome.spooled, outcome.refused) == (0, 2, [])
    assert len(spool.pending(tmp_path)) == 2


def test_a_closed_port_leaves_the_posts_spooled(tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: the connection is refused
        outcome = spool.deliver(slurm.epilog({"SLURM_JOB_ID": "13", "SLURM_JOB_NODELIST": "n1"}, now=NOW),
                                url=f"http://127.0.0.1:{port}", token=None, spool_dir=tmp_path, budget_s=5)
    assert (outcome.spooled, outcome.refused) == (1, [])


def _hook_script(path: Path, command: str, url: str, spool_dir: Path) -> str:
    """A Slurm hook: Slurm runs it with an almost empty environment, so it names everything.
    Its budget is 10 s, not the 0.5 s default: on a loaded CI machine a post could take longer,
    be spooled, and wait for a later hook (a closed port's spooling is tested above), while
    what these tests ask is that a real Slurm runs the hooks and the service hears them."""
    path.write_text(f"#!/bin/sh\nexec {' '.join(HOOK)} {command} --url {url} --spool-dir {spool_dir} --budget 10 "
                    f"{'--gpus-per-host 8' if command == 'prolog' else ''}\n")
    path.chmod(0o755)
    return str(path)


def test_a_real_slurm_job_registers_itself_through_prolog_and_epilog(tmp_path: Path, server: Server) -> None:
    spool_dir = tmp_path / "spool"
    hooks = {
        "PrologSlurmctld": _hook_script(tmp_path / "prolog-ctld.sh", "prolog", server.url, spool_dir),
        "Prolog": _hook_script(tmp_path / "prolog.sh", "prolog", server.url, spool_dir),  # runs too: stored once
        "EpilogSlurmctld": _hook_script(tmp_path / "epilog-ctld.sh", "epilog", server.url, spool_dir),
        "PrologFlags": "Alloc",
    }
    with start_slurm(tmp_path, conf=hooks) as cluster:
        ok = cluster.sbatch("-J", "pretrain", "--wrap", "srun true")
        bad = cluster.sbatch("-J", "broken", "--wrap", "exit 3")
        assert cluster.wait(ok)["JobState"] == "COMPLETED"
        assert cluster.wait(bad)["JobState"] == "FAILED"
        job = server.client.get(f"/v1/jobs/slurm-{ok}").json()
        assert (job["hosts"], job["world_size"]) == ([cluster.node], 8)
        _wait_for_state(server, f"slurm-{bad}", "failed")
        _wait_for_state(server, f"slurm-{ok}", "ended")
        kinds = [e["kind"] for e in server.client.get("/v1/events", params={"job": f"slurm-{ok}"}).json()["events"]]
        assert kinds == ["job_start", "job_end"]  # the node's Prolog and PrologSlurmctld: one start

        running = cluster.sbatch("-J", "long", "--wrap", "sleep 60")
        cluster.wait(running, states=frozenset({"RUNNING"}))
        cluster.scontrol("requeue", running)
        cluster.wait(running, states=frozenset({"PENDING"}))
        # Skip Slurm's requeue delay, but not all of it: slurmd revoked the first run's
        # credential at one-second resolution, and a credential issued in that same second
        # is refused ("Job credential revoked"), which fails the job instead of restarting it.
        time.sleep(2)
        cluster.scontrol("update", f"JobId={running}", "StartTime=now")
        fields = cluster.wait(running, states=frozenset({"RUNNING"}))
        assert fields["Restarts"] == "1"
        _wait_for_event(server, f"slurm-{running}", "job_restart")
        cluster.run("scancel", running)
    assert spool.pending(spool_dir) == []


def _wait_for_state(server: Server, job: str, state: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while (got := server.client.get(f"/v1/jobs/{job}").json().get("state")) != state:
        assert time.monotonic() < deadline, f"{job} is {got}, not {state}"
        time.sleep(0.2)


def _wait_for_event(server: Server, job: str, kind: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while kind not in [e["kind"] for e in server.client.get("/v1/events", params={"job": job}).json()["events"]]:
        assert time.monotonic() < deadline, f"no {kind} for {job}"
        time.sleep(0.2)
