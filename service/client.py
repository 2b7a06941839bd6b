"""The CLI's way to the REST API: where the server is, the bearer token, TLS, and errors as messages.

The on-call commands talk HTTP to a running `faultgraph serve`, as any dashboard would, so
they work from a laptop against the cluster's server and see exactly what the API says.

TLS is one setting of the process, not of each command: `faultgraph --ca-file ca.pem
[--cert c.pem --key k.pem] COMMAND …` or `FAULTGRAPH_CA_FILE` / `FAULTGRAPH_CERT` /
`FAULTGRAPH_KEY` in the environment (what a Slurm prolog or a pod has; the flags are shared with
the agent, `ingest/agent/connection.py`). Every call made
through `request`/`get`/`patch`, and every client made by `http_client`, uses it, so a
command gets HTTPS and mutual TLS by calling the API through this module.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer

from faultgraph.ingest.agent.client import tls_context
from faultgraph.service.config import ClientSettings

DEFAULT_URL = "http://127.0.0.1:8080"

UrlOption = Annotated[str, typer.Option("--url", envvar="FAULTGRAPH_URL", help="The faultgraph server.")]
TokenOption = Annotated[str | None, typer.Option(
    "--token", envvar="FAULTGRAPH_TOKEN", help="Bearer token; not needed on a loopback server without tokens.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the API's JSON answer instead of tables.")]


def counted(n: int, word: str) -> str:
    """`n` and the word, plural unless one: "1 host", "2 hosts", "1,024 lines"."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def short_time(value: str | None) -> str:
    """An API time as the CLI's tables show it: `2026-11-29 08:00:00`, seconds, no zone (UTC)."""
    return value.replace("T", " ").replace("Z", "")[:19] if value else "—"


class ApiError(Exception):
    """The server could not be reached or refused the request; the message says why."""


@dataclass(frozen=True)
class Tls:
    """Files for talking to an https:// server: a CA to trust, a client certificate to show."""

    ca_file: Path | None = None
    cert: Path | None = None
    key: Path | None = None

    @classmethod
    def from_env(cls) -> "Tls":
        """FAULTGRAPH_CA_FILE / _CERT / _KEY, through the clients' settings class."""
        settings = ClientSettings()
        return cls(settings.ca_file, settings.cert, settings.key)

    def verify(self) -> Any:
        """httpx's `verify`: the system's CAs when nothing is set, else an SSL context.
        ApiError names a file that will not load."""
        if self.ca_file is None and self.cert is None:
            return True
        try:
            return tls_context(ca_file=self.ca_file, cert=self.cert, key=self.key)
        except (OSError, ValueError) as exc:
            raise ApiError(f"TLS files ({self.describe()}): {exc}") from None

    def describe(self) -> str:
        given = {"ca-file": self.ca_file, "cert": self.cert, "key": self.key}
        return ", ".join(f"--{name} {path}" for name, path in given.items() if path) or "none"


_tls: Tls | None = None  # set once by the command line (`use_tls`); else the environment's


def use_tls(tls: Tls) -> None:
    """Make `tls` this process's TLS settings (the CLI's global --ca-file/--cert/--key)."""
    global _tls
    _tls = tls


def current_tls() -> Tls:
    return _tls if _tls is not None else Tls.from_env()


def http_client(url: str, *, token: str | None = None, timeout: float = 30.0, **options: Any) -> httpx.Client:
    """An httpx client for the server at `url` with the bearer token and this process's TLS,
    for commands that stream or make many calls (uploads, replays, scheduler hooks)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout,
                        verify=current_tls().verify(), **options)


def get(url: str, path: str, *, token: str | None = None, params: dict[str, Any] | None = None,
        timeout: float = 30.0) -> Any:
    """GET `path` from the server at `url` and return the decoded JSON answer.

    Parameters whose value is None are left out, so a command passes its options as they are.
    """
    return request("GET", url, path, token=token, params=params, timeout=timeout)


def patch(url: str, path: str, body: dict[str, Any], *, token: str | None = None, timeout: float = 30.0) -> Any:
    """PATCH `path` with a JSON body (on-call's acknowledge and resolve) and return the answer."""
    return request("PATCH", url, path, token=token, json=body, timeout=timeout)


def request(method: str, url: str, path: str, *, token: str | None = None, params: dict[str, Any] | None = None,
            json: Any = None, timeout: float = 30.0) -> Any:
    """One call to the API; ApiError says why it could not be made or was refused."""
    query = {name: value for name, value in (params or {}).items() if value is not None}
    if not url.startswith(("http://", "https://")):  # httpx read `localhost:8123` as the scheme `localhost`
        raise ApiError(f"{url}: a server's URL begins with http:// or https://, e.g. http://{url}")
    try:
        with http_client(url, token=token, timeout=timeout) as http:
            response = http.request(method, path, params=query, json=json)
    except httpx.HTTPError as exc:
        raise ApiError(f"cannot reach {url}: {exc}") from None
    if response.status_code >= 400:
        try:
            body = response.json()
        except ValueError:
            body = response.text
        detail = body.get("detail", body) if isinstance(body, dict) else body
        raise ApiError(f"{response.status_code} from {path}: {detail}")
    try:
        return response.json()
    except ValueError:
        raise ApiError(f"{path} answered something that is not JSON") from None
