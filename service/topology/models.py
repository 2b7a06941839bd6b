"""The stored topology (SPEC §3): one row per uploaded version, never overwritten.

Versions are kept because an incident records the topology version it was analysed on.
The body is the graph in JSON, zlib-compressed: a 4,096-host cluster is ~35 MB of JSON
and a few MB compressed. Counts are columns so listing versions needs no decompression.
"""

import sqlalchemy as sa

from faultgraph.service.store import metadata

topologies = sa.Table(
    "topologies",
    metadata,
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("created", sa.DateTime, nullable=False),
    sa.Column("body", sa.LargeBinary, nullable=False),
    sa.Column("components", sa.Integer, nullable=False),
    sa.Column("links", sa.Integer, nullable=False),
    sa.Column("hosts", sa.Integer, nullable=False),
    sa.Column("gpus", sa.Integer, nullable=False),
)
