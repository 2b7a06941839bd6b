"""`require(role)`: the FastAPI dependency every route declares.

    @router.get("/v1/things", dependencies=[Depends(require("reader"))])

or, when the route needs to know who is calling (a host-bound agent token):

    def post(principal: Annotated[Principal, Depends(require("agent"))]): ...

A missing or unknown token answers 401, a token without the role 403; neither says why
beyond that, so a probe learns nothing about which tokens exist.
"""

from collections.abc import Awaitable, Callable
from functools import cache
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from service.auth.models import ROLES, Principal
from service.auth.service import Authenticator

# Declared so that /docs offers an "Authorize" button and the OpenAPI names the scheme.
bearer = HTTPBearer(auto_error=False, description="`Authorization: Bearer fg_…` from `faultgraph token create`")


@cache  # one callable per role, so FastAPI resolves it once per request however often declared
def require(role: str) -> Callable[[Request], Awaitable[Principal]]:
    """A dependency that admits callers holding `role` and returns who they are."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")

    async def dependency(
        request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
    ) -> Principal:
        authenticator: Authenticator = request.app.state.auth
        if authenticator.stale:
            await run_in_threadpool(authenticator.reload)
        principal = authenticator.authenticate(credentials.credentials if credentials else None)
        if principal is None:
            raise HTTPException(401, "a valid bearer token is required", headers={"WWW-Authenticate": "Bearer"})
        if not principal.may(role):
            raise HTTPException(403, "this token's role does not allow this request")
        request.state.principal = principal
        return principal

    dependency.__name__ = f"require_{role}"
    return dependency
