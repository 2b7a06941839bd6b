"""Token administration over HTTP (admin): the way to manage tokens while the server holds
the database (DuckDB admits one process), same operations as `faultgraph token`."""

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Request, Response
from pydantic import BaseModel, Field

from faultgraph.service.auth import service
from faultgraph.service.auth.dependencies import require

router = APIRouter(prefix="/v1", tags=["auth"], dependencies=[Depends(require("admin"))])


class TokenRequest(BaseModel):
    role: Literal["agent", "reader", "admin"]
    name: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    host_pattern: Annotated[str, Field(pattern=service.HOST_PATTERN.pattern)] | None = None


class TokenOut(BaseModel):
    id: str
    name: str | None
    role: str
    host_pattern: str | None
    created: str
    revoked: str | None


class NewToken(TokenOut):
    token: str


def _out(info: service.TokenInfo) -> dict:
    return {
        "id": info.id, "name": info.name, "role": info.role, "host_pattern": info.host_pattern,
        "created": info.created.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "revoked": info.revoked.strftime("%Y-%m-%dT%H:%M:%S.%fZ") if info.revoked else None,
    }


@router.post("/tokens", status_code=201)
def create_token(request: Request, body: TokenRequest) -> NewToken:
    """Create a token; the answer is the only time its secret is shown."""
    try:
        with request.app.state.engine.begin() as conn:
            token, info = service.create(conn, role=body.role, name=body.name, host_pattern=body.host_pattern)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    request.app.state.auth.reload()
    return NewToken(token=token, **_out(info))


@router.get("/tokens")
def list_tokens(request: Request, include_revoked: bool = False) -> dict[str, list[TokenOut]]:
    """Tokens without their secrets."""
    with request.app.state.engine.connect() as conn:
        infos = service.get_all(conn, include_revoked=include_revoked)
    return {"tokens": [TokenOut(**_out(info)) for info in infos]}


@router.delete("/tokens/{token_id}", status_code=204, responses={404: {"description": "no live token has this id"}})
def revoke_token(request: Request, token_id: str) -> Response:
    """Revoke a token; it stops working at once on this server."""
    with request.app.state.engine.begin() as conn:
        done = service.revoke(conn, token_id=token_id)
    if not done:
        raise HTTPException(404, "no live token has this id")
    request.app.state.auth.reload()
    return Response(status_code=204)
