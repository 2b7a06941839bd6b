"""The schema of release 0.1.0, as its `metadata.create_all` made it: the baseline.

Revision ID: 0001
Revises:
"""

revision = "0001"
down_revision = None


def upgrade() -> None:
    """Nothing to do: release 0.1.0's stores are stamped here."""
