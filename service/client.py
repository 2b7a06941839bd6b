"""The CLI's way to the REST API: where the server is, the bearer token, and errors as messages.

The on-call commands talk HTTP to a running `faultgraph serve`, as any dashboard would, so
they work from a laptop against the cluster's server and see exactly what the API says.
"""

from typing import Annotated, Any

import httpx
import typer

DEFAULT_URL = "http://127.0.0.1:8080"

UrlOption = Annotated[str, typer.Option("--url", envvar="FAULTGRAPH_URL", help="The faultgraph server (env FAULTGRAPH_URL).")]
TokenOption = Annotated[str | None, typer.Option(
    "--token", envvar="FAULTGRAPH_TOKEN", help="Bearer token (env FAULTGRAPH_TOKEN); not needed on a loopback server without tokens.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the API's JSON answer instead of tables.")]


class ApiError(Exception):
    """The server could not be reached or refused the request; the message says why."""


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
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    query = {name: value for name, value in (params or {}).items() if value is not None}
    try:
        response = httpx.request(method, url.rstrip("/") + path, params=query, headers=headers, json=json, timeout=timeout)
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
