"""`faultgraph slurm prolog|epilog` and `faultgraph k8s watch`: the schedulers' commands.

Kept apart from the main CLI module so a Slurm hook starts without importing the server
(the prolog's whole budget is about a second).
"""

import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from faultgraph.service.schedulers import slurm, spool

slurm_app = typer.Typer(help="Slurm prolog/epilog hooks that register jobs.", no_args_is_help=True)
k8s_app = typer.Typer(help="Register Kubernetes training jobs from their pods.", no_args_is_help=True)

SPOOL_DEFAULT = Path("/var/spool/faultgraph-slurm")
UrlOption = Annotated[str, typer.Option(envvar="FAULTGRAPH_URL", help="The service.")]
TokenOption = Annotated[str | None, typer.Option(envvar="FAULTGRAPH_TOKEN", help="Agent or admin token.")]
SpoolOption = Annotated[Path, typer.Option(envvar="FAULTGRAPH_SPOOL", help="Where posts wait while the service is unreachable.")]
BudgetOption = Annotated[float, typer.Option(help="Seconds the hook may spend talking to the service.")]


def _run(posts_of, url: str, token: str | None, spool_dir: Path, budget: float) -> None:
    """Build the posts from the environment, deliver or spool them. Always exit 0: a failing
    hook makes Slurm requeue the job or drain the node, and a monitoring service must not
    stop a cluster's jobs, not even with an expired token. A post the service refused for
    good (a wrong token or role, a malformed body) is said on stderr and kept apart, since
    only the operator can mend it and a spool would retry it forever."""
    try:
        posts = posts_of(os.environ, now=datetime.now(UTC))
    except slurm.SlurmEnvError as exc:
        print(f"faultgraph slurm: {exc}", file=sys.stderr)
        return
    try:
        outcome = spool.deliver(posts, url=url, token=token, spool_dir=spool_dir, budget_s=budget)
    except OSError as exc:  # an unwritable spool must not fail the job either
        print(f"faultgraph slurm: cannot spool to {spool_dir}: {exc}", file=sys.stderr)
        return
    for refusal in outcome.refused:
        print(f"faultgraph slurm: the service refused POST {refusal.path} with {refusal.status}: "
              f"{refusal.detail} (not retried)", file=sys.stderr)
    if outcome.spooled or outcome.refused:
        print(f"faultgraph slurm: {outcome.sent} sent, {outcome.spooled} spooled in {spool_dir}, "
              f"{len(outcome.refused)} refused (kept in {spool_dir / 'rejected'})", file=sys.stderr)


@slurm_app.command("prolog")
def prolog(
    url: UrlOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
    spool_dir: SpoolOption = SPOOL_DEFAULT,
    gpus_per_host: Annotated[int | None, typer.Option(help="GPUs per host when SLURM_GPUS_ON_NODE is not set (prologs do not see it).")] = None,
    budget: BudgetOption = 0.5,
) -> None:
    """Register the job (SLURM_JOB_ID, SLURM_JOB_NODELIST, …) and its start or restart."""
    _run(lambda env, now: slurm.prolog(env, now=now, gpus_per_host=gpus_per_host), url, token, spool_dir, budget)


@slurm_app.command("epilog")
def epilog(
    url: UrlOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
    spool_dir: SpoolOption = SPOOL_DEFAULT,
    budget: BudgetOption = 0.5,
) -> None:
    """Record the job's end (job_fail when Slurm reports a non-zero exit status)."""
    _run(slurm.epilog, url, token, spool_dir, budget)


@k8s_app.command("watch")
def k8s_watch(
    url: UrlOption = "http://127.0.0.1:8080",
    token: TokenOption = None,
    namespace: Annotated[str | None, typer.Option(help="Only this namespace (default: all).")] = None,
    selector: Annotated[str | None, typer.Option(help="A label selector for the pods to follow.")] = None,
    settle: Annotated[float, typer.Option(help="Seconds a job's pods must stay unchanged before it is (re)registered.")] = 5.0,
) -> None:
    """Follow JobSet, PyTorchJob, LeaderWorkerSet and Indexed Job pods; register each job with its nodes in rank order."""
    import logging

    import httpx

    from faultgraph.service.schedulers import k8s

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    http = httpx.Client(base_url=url.rstrip("/"), headers={"authorization": f"Bearer {token}"} if token else {}, timeout=30)

    def post(path: str, body: object) -> None:
        http.post(path, json=body).raise_for_status()

    k8s.watch(k8s.Tracker(post, settle_s=settle), namespace=namespace, label_selector=selector)


def run(args: list[str]) -> None:
    """`faultgraph slurm …` without the server's imports (`faultgraph.service.entry` routes here)."""
    typer.main.get_command(slurm_app).main(args=args, prog_name="faultgraph slurm")


if __name__ == "__main__":
    run(sys.argv[2:] if sys.argv[1:2] == ["slurm"] else sys.argv[1:])
