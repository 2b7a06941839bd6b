"""Inventory: the last tool outputs each host's agent posted, and what each topology
version changed (shown by `GET /v1/topology/versions`)."""

from typing import Annotated

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field, field_validator

from faultgraph.ingest.discover.build import FABRIC_FILE, HOST_FILES
from faultgraph.service.events.models import Host, Time
from faultgraph.service.store import JSON, metadata

inventories = sa.Table(
    "inventories",
    metadata,
    sa.Column("host", sa.String, primary_key=True),
    sa.Column("received", sa.DateTime, nullable=False),
    sa.Column("collected", sa.DateTime),
    sa.Column("files", JSON, nullable=False),
)

topology_changes = sa.Table(
    "topology_changes",
    metadata,
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("source", sa.String, nullable=False),
    sa.Column("changes", JSON, nullable=False),
)

# The files an inventory may carry: a host's (SPEC §3 layout) and the fabric dump.
FILE_NAMES: frozenset[str] = frozenset({name for names in HOST_FILES.values() for name in names} | {FABRIC_FILE.name})
MAX_FILE_CHARS = 16 * 1024 * 1024


class InventoryIn(BaseModel):
    """One host's tool outputs, as `faultgraph agent --inventory` collects them."""

    model_config = ConfigDict(extra="forbid")

    host: Host
    collected: Time | None = None
    files: dict[str, Annotated[str, Field(max_length=MAX_FILE_CHARS)]]

    @field_validator("files")
    @classmethod
    def known_names(cls, files: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(files) - FILE_NAMES)
        if unknown:
            raise ValueError(f"unknown file names {unknown}; known: {sorted(FILE_NAMES)}")
        if not files:
            raise ValueError("no files: expected at least one of " + ", ".join(sorted(FILE_NAMES)))
        return files
