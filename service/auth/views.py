"""Token administration over HTTP (admin): the way to manage tokens while the server holds
the database (DuckDB admits one process), same operations as `faultgraph token`. Each
change is written to the audit trail."""

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Response
from pydantic import BaseModel, Field

from faultgraph.service.auth import service
from faultgraph.service.auth.dependencies import require
from faultgraph.service.deps import AuditDep, AuthenticatorDep, EngineDep

router = APIRouter(prefix="/v1", tags=["auth"], dependencies=[Depends(require("admin"))])

Duration = Annotated[str, Field(pattern=service.DURATION.pattern, examples=["30d", "12h"])]


class TokenRequest(BaseModel):
    role: Literal["agent", "reader", "admin"]
    name: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    host_pattern: Annotated[str, Field(pattern=service.HOST_PATTERN.pattern)] | None = None
    cert_name: Annotated[str, Field(pattern=service.CERT_NAME.pattern)] | None = None
    expires: Duration | None = None


class RotateRequest(BaseModel):
    overlap: Duration = "24h"  # how long the old token stays valid beside the new one
    expires: Duration | None = None  # the new token's life (default: none)


class TokenOut(BaseModel):
    id: str
    name: str | None
    role: str
    host_pattern: str | None
    cert_name: str | None
    created: str
    expires: str | None
    last_used: str | None
    revoked: str | None


class NewToken(TokenOut):
    token: str


class Rotated(NewToken):
    replaces: TokenOut


def _time(value: datetime | None) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ") if value else None


def _out(info: service.TokenInfo) -> dict:
    return {
        "id": info.id, "name": info.name, "role": info.role, "host_pattern": info.host_pattern,
        "cert_name": info.cert_name, "created": _time(info.created), "expires": _time(info.expires),
        "last_used": _time(info.last_used), "revoked": _time(info.revoked),
    }


def audit_detail(info: service.TokenInfo) -> dict:
    """What the audit trail keeps of a token: never its secret."""
    return {key: value for key, value in _out(info).items() if key not in ("id", "last_used", "revoked") and value}


@router.post("/tokens", status_code=201)
def create_token(engine: EngineDep, auth: AuthenticatorDep, trail: AuditDep, body: TokenRequest) -> NewToken:
    """Create a token; the answer is the only time its secret is shown."""
    try:
        expires_in = service.parse_duration(body.expires) if body.expires else None
        with engine.begin() as conn:
            token, info = service.create(conn, role=body.role, name=body.name, host_pattern=body.host_pattern,
                                         cert_name=body.cert_name, expires_in=expires_in)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    auth.reload()
    trail.record(action="token.create", target=info.id, detail=audit_detail(info))
    return NewToken(token=token, **_out(info))


@router.get("/tokens")
def list_tokens(engine: EngineDep, include_revoked: bool = False) -> dict[str, list[TokenOut]]:
    """Tokens without their secrets; `include_revoked` adds revoked and expired ones."""
    with engine.connect() as conn:
        infos = service.get_all(conn, include_revoked=include_revoked)
    return {"tokens": [TokenOut(**_out(info)) for info in infos]}


@router.post("/tokens/{token_id}/rotate", status_code=201, responses={404: {"description": "no live token has this id"}})
def rotate_token(engine: EngineDep, auth: AuthenticatorDep, trail: AuditDep, token_id: str, body: RotateRequest | None = None) -> Rotated:
    """A new token with this one's name, role and bindings; this one stays valid for
    `overlap` more, so agents can be handed the new one without a gap."""
    body = body or RotateRequest()
    try:
        with engine.begin() as conn:
            done = service.rotate(conn, token_id=token_id, overlap=service.parse_duration(body.overlap),
                                  expires_in=service.parse_duration(body.expires) if body.expires else None)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    if done is None:
        raise HTTPException(404, "no live token has this id")
    token, info, old = done
    auth.reload()
    trail.record(action="token.rotate", target=old.id,
                 detail={"new": info.id, "old_expires": _time(old.expires), **audit_detail(info)})
    return Rotated(token=token, replaces=TokenOut(**_out(old)), **_out(info))


@router.delete("/tokens/{token_id}", status_code=204, responses={404: {"description": "no live token has this id"}})
def revoke_token(engine: EngineDep, auth: AuthenticatorDep, trail: AuditDep, token_id: str) -> Response:
    """Revoke a token; it stops working at once on this server."""
    with engine.begin() as conn:
        done = service.revoke(conn, token_id=token_id)
    if not done:
        raise HTTPException(404, "no live token has this id")
    auth.reload()
    trail.record(action="token.revoke", target=token_id)
    return Response(status_code=204)
