"""Tokens: create, list, revoke, and check a presented bearer token against the store.

A token reads `fg_<id>_<secret>`: the id is public (it names the token in `token list` and
`token revoke`), the secret is 32 random bytes of which only the SHA-256 is stored. A
high-entropy secret needs no slow password hash; the comparison is constant-time.
"""

import hashlib
import hmac
import ipaddress
import re
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from fnmatch import fnmatchcase

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from faultgraph.service.auth.models import ANONYMOUS, ROLES, Principal, TokenInfo, tokens
from faultgraph.service.events.service import Decoded

PREFIX = "fg"
HOST_PATTERN = re.compile(r"^[A-Za-z0-9._:*?\[\]!-]{1,253}$")


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _info(row: sa.Row) -> TokenInfo:
    return TokenInfo(row.id, row.name, row.role, row.host_pattern, row.created, row.revoked)


def create(conn: Connection, *, role: str, name: str | None = None, host_pattern: str | None = None) -> tuple[str, TokenInfo]:
    """A new token of `role`; returns the token (shown once, never stored) and its record.

    `host_pattern` (a shell glob such as `node00*`) binds an agent token to the hosts it
    may post events for, so a compromised host cannot write another host's history.
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    if host_pattern is not None:
        if role != "agent":
            raise ValueError("only agent tokens can be bound to a host pattern")
        if not HOST_PATTERN.match(host_pattern):
            raise ValueError(f"host pattern {host_pattern!r} must be a shell glob over host-name characters")
    if name is not None and not 0 < len(name) <= 256:
        raise ValueError("name must be 1 to 256 characters")
    token_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
    info = TokenInfo(token_id, name, role, host_pattern, _now(), None)
    conn.execute(tokens.insert().values(
        id=token_id, name=name, role=role, host_pattern=host_pattern, secret_sha256=_digest(secret),
        created=info.created, revoked=None,
    ))
    return f"{PREFIX}_{token_id}_{secret}", info


def get_all(conn: Connection, *, include_revoked: bool = False) -> list[TokenInfo]:
    """Tokens in creation order, without their secrets."""
    query = sa.select(tokens).order_by(tokens.c.created, tokens.c.id)
    if not include_revoked:
        query = query.where(tokens.c.revoked.is_(None))
    return [_info(row) for row in conn.execute(query)]


def revoke(conn: Connection, *, token_id: str) -> bool:
    """Revoke one token; False when no live token has that id."""
    done = conn.execute(
        tokens.update().where(tokens.c.id == token_id, tokens.c.revoked.is_(None)).values(revoked=_now())
    )
    return done.rowcount > 0


def count(conn: Connection, *, include_revoked: bool = False) -> int:
    query = sa.select(sa.func.count()).select_from(tokens)
    if not include_revoked:
        query = query.where(tokens.c.revoked.is_(None))
    return conn.execute(query).scalar_one()


def is_loopback(host: str) -> bool:
    """Whether a listen address only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_allowed(principal: Principal, host: str) -> bool:
    """Whether this caller may post events for `host` (only host-bound agent tokens may not)."""
    return principal.host_pattern is None or fnmatchcase(host, principal.host_pattern)


@dataclass(frozen=True)
class _Snapshot:
    ever: bool  # a token was ever created: the server no longer runs open
    live: dict[str, tuple[str, Principal]]  # id → (secret digest, principal)
    loaded: float


class Authenticator:
    """Checks bearer tokens against an in-memory copy of the live tokens.

    The copy is reloaded at most every `ttl` seconds (another process may have created or
    revoked a token) and at once after a change made through this object, so a flood of
    requests, or of forged tokens, costs no database reads.
    """

    def __init__(self, engine: Engine, *, open_without_tokens: bool, ttl: float = 2.0) -> None:
        self._engine = engine
        self._open_without_tokens = open_without_tokens
        self._ttl = ttl
        self._lock = threading.Lock()
        self._snapshot = self._load()

    @property
    def stale(self) -> bool:
        return time.monotonic() - self._snapshot.loaded > self._ttl

    def reload(self) -> None:
        with self._lock:
            self._snapshot = self._load()

    def refresh(self) -> None:
        """Reload if still stale once the lock is ours: of a storm's requests that all found
        the copy stale, one reads the database and the rest wait for it."""
        with self._lock:
            if self.stale:
                self._snapshot = self._load()

    def _load(self) -> _Snapshot:
        with self._engine.connect() as conn:
            ever = count(conn, include_revoked=True) > 0
            rows = conn.execute(sa.select(tokens).where(tokens.c.revoked.is_(None))).fetchall()
        live = {row.id: (row.secret_sha256, Principal(row.id, row.name, row.role, row.host_pattern)) for row in rows}
        return _Snapshot(ever, live, time.monotonic())

    def authenticate(self, token: str | None) -> Principal | None:
        """The caller presenting this bearer token (None: no token), or None when it proves nothing.
        Tokens are compared by their SHA-256, in constant time."""
        snapshot = self._snapshot
        if not snapshot.ever:
            return ANONYMOUS if self._open_without_tokens else None
        parts = (token or "").strip().split("_", 2)
        if len(parts) != 3 or parts[0] != PREFIX or parts[1] not in snapshot.live:
            return None
        stored, principal = snapshot.live[parts[1]]
        return principal if hmac.compare_digest(stored, _digest(parts[2])) else None


def reject_foreign_hosts(decoded: Decoded, *, principal: Principal) -> None:
    """Move events for hosts this caller may not post for from `valid` to `rejected`, by
    their index in the posted batch: the rest of the batch is still stored."""
    if principal.host_pattern is None:
        return
    taken = {entry["index"] for entry in decoded.rejected}
    indices = (i for i in range(len(decoded.valid) + len(decoded.rejected)) if i not in taken)
    kept = []
    for index, event in zip(indices, decoded.valid):
        if host_allowed(principal, event["host"]):
            kept.append(event)
        else:
            decoded.rejected.append({"index": index, "error": "host: this token may not post events for this host"})
    decoded.valid = kept
    decoded.rejected.sort(key=lambda entry: entry["index"])
