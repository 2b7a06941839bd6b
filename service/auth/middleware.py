"""Authentication before anything else: a request without a valid token is refused (401)
before routing and before its body is read, so an anonymous caller learns neither which
paths exist nor how a body is validated. Which role a route needs is `require`'s business.
"""

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from faultgraph.service.auth.service import Authenticator

# Liveness probes and the API description carry no token; nor do the web UI's static
# files (they hold no data: the page asks for a token and sends it on every API call).
OPEN_PATHS = frozenset({"/healthz", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json", "/", "/ui"})
OPEN_PREFIXES = ("/ui/",)

UNAUTHENTICATED = JSONResponse(
    {"detail": "a valid bearer token is required"}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
)


def bearer_token(headers: Headers) -> str | None:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


class Authenticate:
    """ASGI middleware: puts the caller on `request.state.principal` or answers 401."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or scope["path"].startswith(OPEN_PREFIXES):
            await self.app(scope, receive, send)
            return
        authenticator: Authenticator = scope["app"].state.auth
        if authenticator.stale:
            await run_in_threadpool(authenticator.refresh)
        principal = authenticator.authenticate(bearer_token(Headers(scope=scope)))
        if principal is None:
            await UNAUTHENTICATED(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)
