"""`train_progress` rows carry `through_seq`, so an import can tell a row it already holds.

The rows stored before it were partial sums with nothing to tell them apart; each step's
are merged into one row (the series is their sum by step, so it does not change), marked
with the fold cursor they were folded under: later passes fold past it, so no later row
shares its key. The table is rebuilt rather than altered (DuckDB alters no table with an
index). A store whose table the models just created (one upgraded from 0.1.0, which had
none) already has the column.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"


def upgrade() -> None:
    conn = op.get_bind()
    columns = conn.exec_driver_sql(
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_name = 'train_progress' AND table_schema = current_schema()"
    ).scalars().all()
    if "through_seq" in columns:
        return
    cursor = conn.exec_driver_sql("SELECT last_seq FROM engine_state WHERE name = 'degradations'").scalar() or 0
    conn.exec_driver_sql(
        "CREATE TEMPORARY TABLE train_progress_0006 AS SELECT job, step, max(time) AS time, "
        "sum(reports) AS reports, sum(duration_ms) AS duration_ms FROM train_progress GROUP BY job, step"
    )
    op.drop_table("train_progress")
    op.create_table(
        "train_progress",
        sa.Column("job", sa.String, nullable=False, index=True),
        sa.Column("step", sa.BigInteger, nullable=False),
        sa.Column("time", sa.DateTime, nullable=False),
        sa.Column("reports", sa.Integer, nullable=False),
        sa.Column("duration_ms", sa.Float, nullable=False),
        sa.Column("through_seq", sa.BigInteger, nullable=False),
    )
    conn.execute(sa.text(
        "INSERT INTO train_progress (job, step, time, reports, duration_ms, through_seq) "
        "SELECT job, step, time, reports, duration_ms, :cursor FROM train_progress_0006"
    ), {"cursor": cursor})
    conn.exec_driver_sql("DROP TABLE train_progress_0006")
