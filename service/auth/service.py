"""Tokens: create, list, rotate, revoke, and check a presented bearer token against the store.

A token reads `fg_<id>_<secret>`: the id is public (it names the token in `token list` and
`token revoke`), the secret is 32 random bytes of which only the SHA-256 is stored. A
high-entropy secret needs no slow password hash; the comparison is constant-time.

Rotation without downtime: `rotate` makes a new token with the old one's name, role and
bindings, and cuts the old one's life to an overlap window, so during the window both are
valid and the fleet can be handed the new one host by host.
"""

import hashlib
import hmac
import ipaddress
import logging
import math
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fnmatch import fnmatchcase

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from faultgraph.service.auth.models import ANONYMOUS, ROLES, Principal, TokenInfo, tokens
from faultgraph.service.batches import Decoded

PREFIX = "fg"
HOST_PATTERN = re.compile(r"^[A-Za-z0-9._:*?\[\]!-]{1,253}$")
CERT_NAME = re.compile(r"^[A-Za-z0-9._@:-]{1,253}$")
DURATION = re.compile(r"^\s*(\d{1,6})\s*([smhdw])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
MAX_DURATION = timedelta(days=3650)  # past this a date overflows soon enough to matter; no expiry is clearer
LAST_USED_PRECISION_S = 60.0  # last use is written back at most this often per token

log = logging.getLogger(__name__)


def parse_duration(text: str) -> timedelta:
    """`30d`, `12h`, `90m`, `45s`, `2w` → a timedelta; ValueError naming the expected form."""
    match = DURATION.match(text or "")
    if not match:
        raise ValueError(f"duration {text!r}: expected a number and a unit s, m, h, d or w (e.g. 30d)")
    duration = timedelta(seconds=int(match[1]) * _UNIT_SECONDS[match[2]])
    if duration > MAX_DURATION:
        raise ValueError(f"duration {text!r} is longer than {MAX_DURATION.days} days; leave the expiry out instead")
    return duration


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _info(row: sa.Row) -> TokenInfo:
    return TokenInfo(row.id, row.name, row.role, row.host_pattern, row.created, row.revoked,
                     row.expires, row.cert_name, row.last_used)


def create(conn: Connection, *, role: str, name: str | None = None, host_pattern: str | None = None,
           cert_name: str | None = None, expires_in: timedelta | None = None,
           now: datetime | None = None) -> tuple[str, TokenInfo]:
    """A new token of `role`; returns the token (shown once, never stored) and its record.

    `host_pattern` (a shell glob such as `node00*`) binds an agent token to the hosts it
    may post events for, so a compromised host cannot write another host's history;
    `cert_name` makes it work only over mutual TLS from a client certificate of that name;
    `expires_in` ends its life (from `now`, naive UTC, default the current time).
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    if host_pattern is not None:
        if role != "agent":
            raise ValueError("only agent tokens can be bound to a host pattern")
        if not HOST_PATTERN.match(host_pattern):
            raise ValueError(f"host pattern {host_pattern!r} must be a shell glob over host-name characters")
    if cert_name is not None and not CERT_NAME.match(cert_name):
        raise ValueError(f"certificate name {cert_name!r} must be a host name or common name (letters, digits, . _ - @ :)")
    if name is not None and not 0 < len(name) <= 256:
        raise ValueError("name must be 1 to 256 characters")
    if expires_in is not None and expires_in <= timedelta(0):
        raise ValueError("expiry must be in the future")
    created = now or _now()
    expires = created + expires_in if expires_in is not None else None
    token_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
    info = TokenInfo(token_id, name, role, host_pattern, created, None, expires, cert_name)
    conn.execute(tokens.insert().values(
        id=token_id, name=name, role=role, host_pattern=host_pattern, secret_sha256=_digest(secret),
        created=created, revoked=None, expires=expires, cert_name=cert_name,
    ))
    return f"{PREFIX}_{token_id}_{secret}", info


def rotate(conn: Connection, *, token_id: str, overlap: timedelta, expires_in: timedelta | None = None,
           now: datetime | None = None) -> tuple[str, TokenInfo, TokenInfo] | None:
    """Replace a live token: a new one with its name, role and bindings, while the old one
    stays valid for `overlap` more (or less, if it was to expire sooner). Returns the new
    token, its record and the old one's updated record; None when no live token has the id."""
    now = now or _now()
    old = conn.execute(sa.select(tokens).where(tokens.c.id == token_id, tokens.c.revoked.is_(None))).first()
    if old is None or (old.expires is not None and old.expires <= now):
        return None
    if overlap < timedelta(0):
        raise ValueError("overlap cannot be negative")
    token, info = create(conn, role=old.role, name=old.name, host_pattern=old.host_pattern,
                         cert_name=old.cert_name, expires_in=expires_in, now=now)
    cut = now + overlap if old.expires is None else min(old.expires, now + overlap)
    conn.execute(tokens.update().where(tokens.c.id == token_id).values(expires=cut))
    retired = conn.execute(sa.select(tokens).where(tokens.c.id == token_id)).one()
    return token, info, _info(retired)


def resolve_id(conn: Connection, reference: str) -> str:
    """A token's id from its id, the token itself, or its name when exactly one live token
    has that name (ValueError otherwise), so operators can say `token rotate rack-7`."""
    if reference.startswith(PREFIX + "_"):
        return reference.split("_", 2)[1]
    if conn.execute(sa.select(tokens.c.id).where(tokens.c.id == reference)).first() is not None:
        return reference
    named = conn.execute(sa.select(tokens.c.id).where(tokens.c.name == reference, tokens.c.revoked.is_(None))).fetchall()
    if len(named) > 1:
        raise ValueError(f"{len(named)} live tokens are named {reference!r}: give the id (see `token list`)")
    return named[0].id if named else reference


def get_all(conn: Connection, *, include_revoked: bool = False, now: datetime | None = None) -> list[TokenInfo]:
    """Tokens in creation order, without their secrets; `include_revoked` adds the revoked
    and the expired ones."""
    query = sa.select(tokens).order_by(tokens.c.created, tokens.c.id)
    if not include_revoked:
        query = query.where(tokens.c.revoked.is_(None), _unexpired(now or _now()))
    return [_info(row) for row in conn.execute(query)]


def _unexpired(now: datetime) -> sa.ColumnElement[bool]:
    return sa.or_(tokens.c.expires.is_(None), tokens.c.expires > now)


def revoke(conn: Connection, *, token_id: str) -> bool:
    """Revoke one token; False when no live token has that id."""
    done = conn.execute(
        tokens.update().where(tokens.c.id == token_id, tokens.c.revoked.is_(None)).values(revoked=_now())
    )
    return done.rowcount > 0


def count(conn: Connection, *, include_revoked: bool = False) -> int:
    """Live tokens (not revoked, not expired); with `include_revoked`, every token ever made."""
    query = sa.select(sa.func.count()).select_from(tokens)
    if not include_revoked:
        query = query.where(tokens.c.revoked.is_(None), _unexpired(_now()))
    return conn.execute(query).scalar_one()


def record_use(conn: Connection, used: dict[str, datetime]) -> None:
    """Write back when tokens were last used (the authenticator batches these)."""
    for token_id, when in used.items():
        conn.execute(tokens.update().where(tokens.c.id == token_id).values(last_used=when))


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
class _Live:
    digest: str  # SHA-256 of the secret
    principal: Principal
    expires: float  # epoch seconds; inf when it never expires


@dataclass(frozen=True)
class _Snapshot:
    ever: bool  # a token was ever created: the server no longer runs open
    live: dict[str, _Live]
    loaded: float


class Authenticator:
    """Checks bearer tokens against an in-memory copy of the live tokens.

    The copy is reloaded at most every `ttl` seconds (another process may have created or
    revoked a token) and at once after a change made through this object, so a flood of
    requests, or of forged tokens, costs no database reads. Each reload also writes back
    when tokens were last used, at most once a minute per token. `clock` (epoch seconds)
    decides expiry; tests give a fixed one.
    """

    def __init__(self, engine: Engine, *, open_without_tokens: bool, ttl: float = 2.0,
                 clock: Callable[[], float] = time.time) -> None:
        self._engine = engine
        self._open_without_tokens = open_without_tokens
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._used: dict[str, float] = {}  # token id → epoch seconds of its last use
        self._written: dict[str, float] = {}  # token id → the last use already stored
        self._snapshot = self._load()

    @property
    def stale(self) -> bool:
        return time.monotonic() - self._snapshot.loaded > self._ttl

    def reload(self) -> None:
        with self._lock:
            self._reload()

    def refresh(self) -> None:
        """Reload if still stale once the lock is ours (a reload under way is waited for)."""
        with self._lock:
            if self.stale:
                self._reload()

    def refresh_soon(self) -> None:
        """Start one reload in the background unless one is under way: a storm's requests go
        on with the current copy instead of queueing for the database. A token the copy does
        not know waits for the reload (`refresh`) before it is refused."""
        if self._lock.acquire(blocking=False):
            threading.Thread(target=self._reload_and_release, name="faultgraph-tokens", daemon=True).start()

    def _reload_and_release(self) -> None:
        try:
            self._reload()
        except Exception:
            log.exception("reloading tokens failed; the current copy stays until the next try")
        finally:
            self._lock.release()

    def _reload(self) -> None:
        """Write recorded uses back, then read every token afresh (the caller holds the lock)."""
        self._write_back()
        self._snapshot = self._load()

    def _write_back(self) -> None:
        due = {token_id: when for token_id, when in list(self._used.items())
               if when - self._written.get(token_id, 0.0) >= LAST_USED_PRECISION_S}
        if not due:
            return
        with self._engine.begin() as conn:
            record_use(conn, {token_id: datetime.fromtimestamp(when, UTC).replace(tzinfo=None) for token_id, when in due.items()})
        self._written.update(due)

    def _load(self) -> _Snapshot:
        with self._engine.connect() as conn:
            ever = count(conn, include_revoked=True) > 0
            rows = conn.execute(sa.select(tokens).where(tokens.c.revoked.is_(None))).fetchall()
        live = {
            row.id: _Live(row.secret_sha256, Principal(row.id, row.name, row.role, row.host_pattern, row.cert_name),
                          row.expires.replace(tzinfo=UTC).timestamp() if row.expires else math.inf)
            for row in rows
        }
        return _Snapshot(ever, live, time.monotonic())

    def authenticate(self, token: str | None, *, peer_names: frozenset[str] = frozenset()) -> Principal | None:
        """The caller presenting this bearer token (None: no token), or None when it proves
        nothing: unknown, wrong secret, expired, or bound to a client certificate name that
        is not among `peer_names` (the verified client certificate's names on this connection).
        Tokens are compared by their SHA-256, in constant time."""
        snapshot = self._snapshot
        if not snapshot.ever:
            return ANONYMOUS if self._open_without_tokens else None
        parts = (token or "").strip().split("_", 2)
        if len(parts) != 3 or parts[0] != PREFIX or parts[1] not in snapshot.live:
            return None
        live = snapshot.live[parts[1]]
        if not hmac.compare_digest(live.digest, _digest(parts[2])):
            return None
        now = self._clock()
        if now >= live.expires:
            return None
        if live.principal.cert_name is not None and live.principal.cert_name not in peer_names:
            return None
        self._used[parts[1]] = now
        return live.principal


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
