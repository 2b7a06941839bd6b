"""Schema migrations (alembic): a store written by an older faultgraph opens in this one.

New tables come from the models (`metadata.create_all` creates what is missing); a change
to a table an older release already created is a revision in `versions/`. A store that
predates alembic (release 0.1.0 recorded only `schema_info`) is stamped at the first
revision and upgraded from there; a new store is created whole and stamped at the head.
"""

import logging
from pathlib import Path

from sqlalchemy.engine import Connection

# Alembic announces its plugins as it is imported ("setup plugin …") and its context at every
# start ("Context impl …"): silenced before the imports below, or a command logging at INFO
# (`faultgraph prune`) prints them. `upgrade` says when a store was migrated.
logging.getLogger("alembic").setLevel(logging.WARNING)

from alembic import command  # noqa: E402
from alembic.config import Config  # noqa: E402
from alembic.ddl.impl import DefaultImpl  # noqa: E402
from alembic.runtime.migration import MigrationContext  # noqa: E402
from alembic.script import ScriptDirectory  # noqa: E402

FIRST = "0001"

log = logging.getLogger("faultgraph")


class DuckDBImpl(DefaultImpl):
    """Alembic's operations on DuckDB: its SQL is PostgreSQL's where alembic needs it."""

    __dialect__ = "duckdb"
    transactional_ddl = True


def _config(conn: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parent))
    config.attributes["connection"] = conn
    return config


def current(conn: Connection) -> str | None:
    """The revision the store is at, or None where alembic never ran."""
    return MigrationContext.configure(conn).get_current_revision()


def known(revision: str) -> bool:
    """Whether this release knows `revision` (a newer release's store it does not)."""
    revisions = ScriptDirectory.from_config(_config()).walk_revisions()
    return any(script.revision == revision for script in revisions)


def head() -> str:
    """The newest revision this release knows."""
    found = ScriptDirectory.from_config(_config()).get_current_head()
    assert found is not None  # versions/ is never empty
    return found


def upgrade(conn: Connection, *, from_revision: str | None) -> None:
    """Bring the store to the head: stamp `from_revision` first where alembic never ran."""
    config = _config(conn)
    if from_revision is not None:
        command.stamp(config, from_revision)
    before = current(conn)
    command.upgrade(config, "head")
    after = current(conn)
    if after != before:
        log.info("store schema migrated from revision %s to %s", before, after)


def stamp_head(conn: Connection) -> None:
    """Record a store created whole by this release as being at the head."""
    command.stamp(_config(conn), "head")
