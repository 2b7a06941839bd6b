"""The tokens table and the shapes that describe a token.

Only a hash of each token's secret is stored: a copy of the database does not let anyone
post as an agent. The public `id` is part of the token itself, so a request is checked by
one primary-key lookup and one constant-time comparison.
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
)


@dataclass(frozen=True)
class Principal:
    """The caller a request was authenticated as (an open loopback server's is `anonymous`)."""

    token_id: str | None
    name: str | None
    role: str
    host_pattern: str | None = None

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
