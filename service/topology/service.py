"""Topology: decode an uploaded graph, store it as a new version, read versions back."""

import zlib
from datetime import UTC, datetime

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from faultgraph.attribution.topology import Topology
from faultgraph.service.events.service import format_time
from faultgraph.service.topology.models import topologies

# zlib level 1: a 35 MB graph compresses ~8x in a fraction of a second; higher levels
# gain little on this repetitive JSON and cost seconds on every upload.
_COMPRESSION_LEVEL = 1


def decode(body: bytes) -> tuple[Topology, bytes]:
    """The validated graph and its JSON in normal form (`components` and `links` only).

    ValueError when the body is not JSON; TopologyError (a ValueError, with `problems`)
    when it is JSON but not a valid graph.
    """
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"body is not valid JSON: {exc}") from None
    topology = Topology.from_dict(parsed)
    graph_json = orjson.dumps({"components": parsed["components"], "links": parsed.get("links", [])})
    return topology, graph_json


def summary(topology: Topology) -> dict[str, int]:
    """The counts stored beside a version and answered to an upload."""
    return {
        "components": len(topology),
        "links": topology.graph.number_of_edges(),
        "hosts": len(topology.hosts()),
        "gpus": len(topology.of_type("gpu")),
    }


def create(conn: Connection, *, topology: Topology, graph_json: bytes) -> dict:
    """Store the graph as the next version; return the version's summary row."""
    version = conn.execute(sa.select(sa.func.coalesce(sa.func.max(topologies.c.version), 0))).scalar_one() + 1
    created = datetime.now(UTC).replace(tzinfo=None)
    row = {
        "version": version,
        "created": created,
        "body": zlib.compress(graph_json, _COMPRESSION_LEVEL),
        **summary(topology),
    }
    conn.execute(topologies.insert().values(**row))
    return describe(row)


def describe(row) -> dict:
    """A version's summary as the API answers it (the body left out)."""
    mapping = row if isinstance(row, dict) else row._mapping
    return {
        "version": mapping["version"],
        "created": format_time(mapping["created"]),
        **{key: mapping[key] for key in ("components", "links", "hosts", "gpus")},
    }


def get(conn: Connection, *, version: int | None = None) -> sa.Row | None:
    """One stored version (the latest when `version` is None), or None."""
    query = sa.select(topologies)
    if version is None:
        query = query.order_by(topologies.c.version.desc()).limit(1)
    else:
        query = query.where(topologies.c.version == version)
    return conn.execute(query).first()


def get_all(conn: Connection) -> list[dict]:
    """Every stored version's summary, newest first."""
    columns = [c for c in topologies.c if c.name != "body"]
    rows = conn.execute(sa.select(*columns).order_by(topologies.c.version.desc()))
    return [describe(row) for row in rows]


def graph_json(row: sa.Row) -> bytes:
    """The stored graph's JSON: `{"components": [...], "links": [...]}`."""
    return zlib.decompress(row.body)


def body_json(row: sa.Row) -> bytes:
    """The answer to GET: the graph with `version` and `created` in front, spliced into
    the stored JSON rather than parsed and dumped again (35 MB at 4,096 hosts)."""
    head = orjson.dumps({"version": row.version, "created": format_time(row.created)})
    return head[:-1] + b"," + graph_json(row)[1:]


def load(row: sa.Row) -> Topology:
    """The stored version as a graph (it was valid when stored)."""
    return Topology.from_dict(orjson.loads(graph_json(row)))
