"""`require(role)`: the FastAPI dependency every route declares.

    @router.get("/v1/things", dependencies=[Depends(require("reader"))])

or, when the route needs to know who is calling (a host-bound agent token):

    def post(principal: Annotated[Principal, Depends(require("agent"))]): ...

The `Authenticate` middleware has already refused (401) any request without a valid token
and left the caller on `request.state`; this answers 403 to a caller without the role.
"""

from collections.abc import Awaitable, Callable
from functools import cache
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from faultgraph.service.auth.models import ROLES, Principal

# Declared so that /docs offers an "Authorize" button and the OpenAPI names the scheme.
bearer = HTTPBearer(auto_error=False, description="`Authorization: Bearer fg_…` from `faultgraph token create`")


@cache  # one callable per role, so FastAPI resolves it once per request however often declared
def require(role: str) -> Callable[..., Awaitable[Principal]]:
    """A dependency that admits callers holding `role` and returns who they are."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")

    async def dependency(request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> Principal:
        principal: Principal | None = getattr(request.state, "principal", None)
        if principal is None:  # the middleware is missing: fail closed
            raise HTTPException(401, "a valid bearer token is required", headers={"WWW-Authenticate": "Bearer"})
        if not principal.may(role):
            raise HTTPException(403, "this token's role does not allow this request")
        return principal

    dependency.__name__ = f"require_{role}"
    return dependency
