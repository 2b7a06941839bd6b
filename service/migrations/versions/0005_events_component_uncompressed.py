"""On DuckDB, `events.component` is stored uncompressed (see service/events/models.py).

DuckDB fixes a column's forced compression when the table is created and has no statement
to change it, so the table is rebuilt: a copy with the column so declared, every row moved
in its stored order, the old table dropped, the copy renamed, all in the migration's one
transaction: once, at the first start of this release, about 1.4 s per million events on
the 2-core dev machine (2026-12-03). Nothing changes on PostgreSQL.

Revision ID: 0005
Revises: 0004
"""

from alembic import op

revision = "0005"
down_revision = "0004"


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "duckdb":
        return
    columns = conn.exec_driver_sql(
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_name = 'events' AND table_schema = current_schema() ORDER BY ordinal_position"
    ).all()
    declared = ", ".join(
        f'"{name}" {kind}'
        + (" USING COMPRESSION uncompressed" if name == "component" else "")
        + ("" if nullable == "YES" else " NOT NULL")
        for name, kind, nullable in columns
    )
    conn.exec_driver_sql(f"CREATE TABLE events_0005 ({declared})")
    conn.exec_driver_sql("INSERT INTO events_0005 SELECT * FROM events")
    conn.exec_driver_sql("DROP TABLE events")
    conn.exec_driver_sql("ALTER TABLE events_0005 RENAME TO events")
