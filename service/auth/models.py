"""The tokens table and the shapes that describe a token.

Only a hash of each token's secret is stored: a copy of the database does not let anyone
post as an agent. The public `id` is part of the token itself, so a request is checked by
one primary-key lookup and one constant-time comparison.

A token may expire (`expires`), and may be bound to the name in a client certificate
(`cert_name`): then it only works over a mutual-TLS connection from that certificate, so a
token copied off a host is useless elsewhere. `last_used` is kept to within a minute.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import sqlalchemy as sa

from faultgraph.service.store import metadata

Role = Literal["agent", "reader", "admin"]
ROLES: tuple[str, ...] = ("agent", "reader", "admin")

# What each role may do; admin holds every role (SPEC §9).
GRANTS: dict[str, frozenset[str]] = {
    "agent": frozenset({"agent"}),
    "reader": frozenset({"reader"}),
    "admin": frozenset(ROLES),
}

tokens = sa.Table(
    "tokens",
    metadata,
    sa.Column("id", sa.String, primary_key=True),
    sa.Column("name", sa.String),
    sa.Column("role", sa.String, nullable=False),
    sa.Column("host_pattern", sa.String),
    sa.Column("secret_sha256", sa.String, nullable=False),
    sa.Column("created", sa.DateTime, nullable=False),
    sa.Column("revoked", sa.DateTime),
    sa.Column("expires", sa.DateTime),
    sa.Column("cert_name", sa.String),
    sa.Column("last_used", sa.DateTime),
)


@dataclass(frozen=True)
class Principal:
    """The caller a request was authenticated as (an open loopback server's is `anonymous`)."""

    token_id: str | None
    name: str | None
    role: str
    host_pattern: str | None = None
    cert_name: str | None = None

    @property
    def actor(self) -> str:
        """Who this is in the audit trail: the token's name, else its id."""
        return self.name or self.token_id or "anonymous"

    def may(self, role: str) -> bool:
        return role in GRANTS[self.role]


ANONYMOUS = Principal(token_id=None, name="anonymous", role="admin")


@dataclass(frozen=True)
class TokenInfo:
    """A stored token as `token list` shows it: never the secret."""

    id: str
    name: str | None
    role: str
    host_pattern: str | None
    created: datetime
    revoked: datetime | None
    expires: datetime | None = None
    cert_name: str | None = None
    last_used: datetime | None = None
