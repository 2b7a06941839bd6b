"""Incidents gain their `type` (interruption, degradation, fault: SPEC §5) and the clock
offsets the engine estimated for their hosts. Every incident 0.1.0 stored was an
interruption.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

from faultgraph.service.store import JSON

revision = "0002"
down_revision = "0001"


def upgrade() -> None:
    op.add_column("incidents", sa.Column("type", sa.String, nullable=False, server_default="interruption"))
    op.add_column("incidents", sa.Column("clock_offsets", JSON))
