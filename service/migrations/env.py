"""Alembic's entry: runs the revisions on the connection `faultgraph.service.migrations` hands it."""

from alembic import context

context.configure(connection=context.config.attributes["connection"], target_metadata=None)
with context.begin_transaction():
    context.run_migrations()
