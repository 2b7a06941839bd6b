"""Authentication before anything else: a request without a valid token is refused (401)
before routing and before its body is read, so an anonymous caller learns neither which
paths exist nor how a body is validated. Which role a route needs is `require`'s business.

Then the ingest limits (`limits.py`) for agent tokens, the ones spread over thousands of
hosts: a caller over its share of ingest gets 429 with `Retry-After`, also before its body
is read. Admin tokens (an operator's import or replay) and the open loopback server's
anonymous caller are not limited.
"""

from collections.abc import Hashable

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from faultgraph.service.auth.limits import IngestLimiter, retry_after
from faultgraph.service.auth.models import Principal
from faultgraph.service.auth.service import Authenticator
from faultgraph.service.auth.tls import PEER_NAMES

# Liveness probes and the API description carry no token; nor do the web UI's static
# files (they hold no data: the page asks for a token and sends it on every API call).
OPEN_PATHS = frozenset({"/healthz", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json", "/", "/ui"})
OPEN_PREFIXES = ("/ui/",)
# Writes every agent makes: these share the writer queue, so these are what is limited.
INGEST_PATHS = frozenset({"/v1/events", "/v1/logs", "/v1/jobs"})

UNAUTHENTICATED = JSONResponse(
    {"detail": "a valid bearer token is required"}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
)


def bearer_token(headers: Headers) -> str | None:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def caller_key(principal: Principal, peer_names: frozenset[str], client: tuple[str, int] | None) -> Hashable:
    """Whom the ingest limits count a request against: a certificate-bound token is its
    host; otherwise the token from one client certificate name, else one client address."""
    if principal.cert_name is not None:
        return principal.token_id, principal.cert_name
    if peer_names:
        return principal.token_id, min(peer_names)
    return principal.token_id, client[0] if client else None


class Authenticate:
    """ASGI middleware: puts the caller on `request.state.principal` or answers 401; holds
    agents to their share of ingest (429)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or scope["path"].startswith(OPEN_PREFIXES):
            await self.app(scope, receive, send)
            return
        state = scope["app"].state
        authenticator: Authenticator = state.auth
        stale = authenticator.stale
        if stale:
            authenticator.refresh_soon()
        peer_names = scope.get("state", {}).get(PEER_NAMES, frozenset())
        token = bearer_token(Headers(scope=scope))
        principal = authenticator.authenticate(token, peer_names=peer_names)
        if principal is None and stale:  # perhaps a token another replica has just created
            await run_in_threadpool(authenticator.refresh)
            principal = authenticator.authenticate(token, peer_names=peer_names)
        if principal is None:
            await UNAUTHENTICATED(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        if principal.role != "agent" or scope["method"] != "POST" or scope["path"] not in INGEST_PATHS:
            await self.app(scope, receive, send)
            return
        await self._limited(state.limiter, caller_key(principal, peer_names, scope.get("client")), scope, receive, send)

    async def _limited(self, limiter: IngestLimiter, key: Hashable, scope: Scope, receive: Receive, send: Send) -> None:
        wait = limiter.admit(key)
        if wait is not None:
            # Closing the connection spares the event loop the refused body still on its way.
            refused = JSONResponse(
                {"detail": f"this caller is over its ingest share; retry in {retry_after(wait)} s"},
                status_code=429, headers={"Retry-After": retry_after(wait), "Connection": "close"},
            )
            await refused(scope, receive, send)
            return
        read = 0

        async def counting() -> Message:
            nonlocal read
            message = await receive()
            read += len(message.get("body", b""))
            return message

        try:
            await self.app(scope, counting, send)
        finally:
            limiter.release(key, read)
