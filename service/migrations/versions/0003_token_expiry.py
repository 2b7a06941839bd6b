"""Tokens may expire, may be bound to a client certificate's name, and record when they
were last used (SPEC §10). Tokens 0.1.0 made never expire and are bound to no certificate.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    op.add_column("tokens", sa.Column("expires", sa.DateTime))
    op.add_column("tokens", sa.Column("cert_name", sa.String))
    op.add_column("tokens", sa.Column("last_used", sa.DateTime))
