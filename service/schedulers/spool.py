"""Deliver a hook's posts within a fixed time budget, keeping what could not be sent.

A scheduler hook (Slurm's prolog, say) must never hold a job because the service is
down or slow: every post gets what is left of one short budget; whatever fails is
written to a spool directory and sent, oldest first and before its own posts, by the
next hook that reaches the service. A post the service refuses for a reason retrying cannot
mend (a 4xx other than 408/429: malformed, or a wrong token or role) would be refused again
by every later hook, so it goes to `rejected/` with the answer instead, and the caller is
told which post, the status and the server's detail.
"""

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import orjson

RETRYABLE_4XX = frozenset({408, 429})  # a timeout or a rate limit: the next hook may get through


@dataclass(frozen=True)
class Post:
    """One request a hook wants made: `POST path` with a JSON body."""

    path: str
    body: dict | list


@dataclass(frozen=True)
class Refusal:
    """A post the service refused for good, and why, for the hook to report."""

    path: str
    status: int
    detail: str


@dataclass
class Outcome:
    sent: int = 0
    spooled: int = 0
    refused: list[Refusal] = field(default_factory=list)


def deliver(posts: list[Post], *, url: str, token: str | None, spool_dir: Path, budget_s: float = 0.5) -> Outcome:
    """Send older spooled posts, then `posts`, in order, while time is left; spool the rest.

    Order matters: a spooled registration sent after the job's end would reopen the job.
    """
    deadline = time.monotonic() + budget_s
    outcome = Outcome()
    headers = {"authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=url.rstrip("/"), headers=headers) as http:
        reachable = _drain(http, spool_dir, deadline, outcome)
        for post in posts:
            reachable = reachable and _send(http, post, deadline, spool_dir, outcome)
            if not reachable:
                _write(spool_dir, post)
                outcome.spooled += 1
    return outcome


def _send(http: httpx.Client, post: Post, deadline: float, spool_dir: Path, outcome: Outcome) -> bool:
    """True when the service answered for good (stored, or refused for good)."""
    left = deadline - time.monotonic()
    if left <= 0.05:
        return False
    try:
        answer = http.post(post.path, content=orjson.dumps(post.body),
                           headers={"content-type": "application/json"}, timeout=left)
    except httpx.HTTPError:
        return False
    if answer.is_success:
        outcome.sent += 1
        return True
    if answer.status_code < 500 and answer.status_code not in RETRYABLE_4XX:
        _write(spool_dir / "rejected", post, answer=answer.text)
        outcome.refused.append(Refusal(post.path, answer.status_code, _detail(answer)))
        return True
    return False


def _detail(answer: httpx.Response) -> str:
    """The service's `detail`, else the start of whatever a proxy in front of it answered."""
    try:
        body = answer.json()
    except ValueError:
        body = None
    detail = body.get("detail") if isinstance(body, dict) else None
    return (detail if isinstance(detail, str) else answer.text)[:300] or answer.reason_phrase


def _drain(http: httpx.Client, spool_dir: Path, deadline: float, outcome: Outcome) -> bool:
    """Send spooled posts oldest first; False when one could not be sent (the rest wait)."""
    for path in pending(spool_dir):
        try:
            data = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue  # a half-written file of a hook killed mid-write (never renamed in) or removed by a peer
        if not _send(http, Post(data["path"], data["body"]), deadline, spool_dir, outcome):
            return False
        path.unlink(missing_ok=True)
    return True


def pending(spool_dir: Path) -> list[Path]:
    """Spooled posts, oldest first (names start with the time they were written)."""
    return sorted(spool_dir.glob("*.json")) if spool_dir.is_dir() else []


def _write(directory: Path, post: Post, *, answer: str | None = None) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    name = f"{time.time_ns():020d}-{os.getpid()}"
    record = {"path": post.path, "body": post.body, **({"answer": answer} if answer is not None else {})}
    tmp = directory / f".{name}.tmp"
    tmp.write_bytes(orjson.dumps(record))
    tmp.rename(directory / f"{name}.json")  # atomic: a reader never sees half a post
