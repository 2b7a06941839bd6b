"""A degradation incident carries `slowdown`, the fraction of its job's speed lost.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"


def upgrade() -> None:
    op.add_column("incidents", sa.Column("slowdown", sa.Float))
