"""Replica benchmark: ingest rate of one `faultgraph serve` vs two on the same PostgreSQL.

    python tests/bench/replicas.py SERVER_URL [--events 200000] [--batch 1000]
                                   [--concurrency 8] [--rounds 1]

SERVER_URL is a PostgreSQL server where the user may create databases, e.g.
postgresql://postgres@127.0.0.1:5432/postgres. Each round posts the same pre-serialised
batches (tests/bench/ingest.py's event mix) twice, each time into a freshly created
database: once all through one replica, once split evenly over two replicas running side
by side; the client keeps the same number of connections open in both. Prints both rates
and their ratio (the issue's target: two replicas together at least 1.5x one).
"""

import argparse
import asyncio
import sys
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import fresh_postgres_database, start_server

from ingest import payloads, post_all  # tests/bench/ingest.py


async def post_split(urls: list[str], bodies: list[bytes], concurrency: int) -> tuple[float, int]:
    """Post `bodies` round-robin over `urls`, concurrency shared equally; wall time of all."""
    shares = [bodies[i::len(urls)] for i in range(len(urls))]
    results = await asyncio.gather(*(post_all(url, share, concurrency // len(urls))
                                     for url, share in zip(urls, shares, strict=True)))
    return max(elapsed for elapsed, _ in results), sum(accepted for _, accepted in results)


def rate(server_url: str, replicas: int, bodies: list[bytes], concurrency: int) -> float:
    """Events/s with `replicas` servers on one fresh database."""
    with fresh_postgres_database(server_url) as db_url:
        servers = []
        try:
            for _ in range(replicas):
                servers.append(start_server(db_url))
            elapsed, accepted = asyncio.run(post_split([s.url for s in servers], bodies, concurrency))
        finally:
            for server in servers:
                server.stop()
    if accepted != sum(len(orjson.loads(body)) for body in bodies):
        raise SystemExit(f"{replicas} replicas stored {accepted} events, not every one posted")
    return accepted / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("server_url")
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()

    bodies = payloads(args.events, args.batch)
    for round_number in range(1, args.rounds + 1):
        one = rate(args.server_url, 1, bodies, args.concurrency)
        two = rate(args.server_url, 2, bodies, args.concurrency)
        print(f"round {round_number}: {args.events:,} events, batches of {args.batch}, {args.concurrency} connections")
        print(f"  one replica          {one:>10,.0f} events/s")
        print(f"  two replicas         {two:>10,.0f} events/s")
        print(f"  two / one            {two / one:>10.2f}  (target >= 1.5)")


if __name__ == "__main__":
    main()
