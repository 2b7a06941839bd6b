"""`faultgraph agent --inventory`: run the discovery tools at start and once a day and post
their outputs (`POST /v1/inventory`), so the service's topology follows a swapped GPU or a
moved cable without anyone re-running `topology discover`.

Each command runs with a timeout; one that is missing or fails is left out (the service
builds what the others describe). Nothing is posted when the outputs are the same as the
last post's: the service would store no new version anyway.
"""

import hashlib
import logging
import ssl
import subprocess
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

import httpx
import orjson

log = logging.getLogger("faultgraph.agent.inventory")

# File name (as SPEC §3 names them) → the command that writes it.
COMMANDS: Mapping[str, tuple[str, ...]] = {
    "nvidia-smi-topo-m.txt": ("nvidia-smi", "topo", "-m"),
    "nvidia-smi-q.xml": ("nvidia-smi", "-q", "-x"),
    "ibdev2netdev.txt": ("ibdev2netdev",),
    "ibstat.txt": ("ibstat",),
    "lspci.txt": ("lspci", "-D"),
    "ip-addr.json": ("ip", "-j", "addr"),
}
DAY_S = 86_400.0

Runner = Callable[[tuple[str, ...], float], str | None]


def run_command(command: tuple[str, ...], timeout: float) -> str | None:
    """The command's standard output, or None when it is missing, fails or hangs."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.info("inventory: %s not collected: %s", command[0], exc)
        return None
    if done.returncode != 0:
        log.info("inventory: %s exited %d: %s", " ".join(command), done.returncode, done.stderr.strip()[:200])
        return None
    return done.stdout


def collect(commands: Mapping[str, tuple[str, ...]] = COMMANDS, *, runner: Runner = run_command,
            timeout: float = 60.0) -> dict[str, str]:
    """The outputs of whichever commands ran, by file name."""
    files = {}
    for name, command in commands.items():
        output = runner(command, timeout)
        if output is not None and output.strip():
            files[name] = output
    return files


class InventoryReporter:
    """Collects and posts at start, then every `interval_s`, until stopped."""

    def __init__(self, url: str, host: str, *, token: str | None = None, interval_s: float = DAY_S,
                 commands: Mapping[str, tuple[str, ...]] = COMMANDS, runner: Runner = run_command,
                 verify: ssl.SSLContext | str | bool = True) -> None:
        self.url, self.host, self.interval_s = url.rstrip("/"), host, interval_s
        self.commands, self.runner, self.verify = commands, runner, verify
        self.headers = {"content-type": "application/json", **({"authorization": f"Bearer {token}"} if token else {})}
        self.last_digest: str | None = None

    def report_once(self) -> dict | None:
        """Collect and post; the service's answer, or None when unchanged or not delivered."""
        files = collect(self.commands, runner=self.runner)
        if not files:
            log.warning("inventory: none of %s ran on this host", ", ".join(c[0] for c in self.commands.values()))
            return None
        digest = hashlib.sha256(orjson.dumps(files, option=orjson.OPT_SORT_KEYS)).hexdigest()
        if digest == self.last_digest:
            return None
        body = {"host": self.host, "collected": datetime.now(UTC).isoformat(), "files": files}
        try:
            answer = httpx.post(f"{self.url}/v1/inventory", content=orjson.dumps(body), headers=self.headers,
                                timeout=60, verify=self.verify)
        except httpx.HTTPError as exc:
            log.warning("inventory: post failed (%s); retrying at the next round", exc)
            return None
        if not answer.is_success:
            log.warning("inventory: the service refused it (%d): %s", answer.status_code, answer.text[:300])
            return None
        self.last_digest = digest
        result = answer.json()
        if result.get("changed"):
            log.info("inventory: topology version %s stored: %s", result.get("version"), result.get("changes"))
        return result

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.report_once()
            except Exception:  # a bad round must not end the agent's other work
                log.exception("inventory: round failed")
            stop.wait(self.interval_s)

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(target=self.run, args=(stop,), name="inventory", daemon=True)
        thread.start()
        return thread
