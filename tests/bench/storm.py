"""Storm benchmark: one XID 79 on a 2,048-host, 16,384-rank job, then every other rank's
watchdog timeout ten minutes later, posted as fast as the client can — as 2,048 agents
would, each parsing its own lines and posting its own batch.

    python tests/bench/storm.py [--hosts 2048] [--concurrency 16]

Prints the time from the last event posted to the incident being available with the
right root cause (polling GET /v1/incidents, as a dashboard would), beside the time the
posting itself took, and the server's peak RSS.
"""

import argparse
import asyncio
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conftest import peak_rss_mib, start_server  # noqa: E402

from faultgraph.attribution.simulate import storm  # noqa: E402
from faultgraph.ingest.parse import parse_line  # noqa: E402


def agent_batches(scenario) -> list[list[dict]]:
    """Each host's records as its agent would post them: parsed at the edge, one batch."""
    by_host: dict[str, list[dict]] = defaultdict(list)
    for record in scenario.records:
        if record["type"] == "log":
            event = parse_line(record["line"], host=record["host"], source=record["source"],
                               received=datetime.fromisoformat(record["time"].replace("Z", "+00:00")))
            if event is None:
                continue
            event["time"] = event["time"].isoformat()
        else:
            event = record["event"]
        by_host[event["host"]].append(event)
    return list(by_host.values())


async def post_all(url: str, batches: list[list[dict]], concurrency: int) -> float:
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    for batch in batches:
        queue.put_nowait(orjson.dumps(batch))

    async def worker(client: httpx.AsyncClient) -> None:
        while not queue.empty():
            body = queue.get_nowait()
            while (answer := await client.post("/v1/events", content=body, headers={"content-type": "application/json"})).status_code == 503:
                await asyncio.sleep(float(answer.headers.get("retry-after", "1")))
            answer.raise_for_status()

    async with httpx.AsyncClient(base_url=url, timeout=120, limits=httpx.Limits(max_connections=concurrency)) as client:
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
    return time.perf_counter()



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=2048)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()

    scenario = storm(hosts=args.hosts)
    [truth] = scenario.truth
    batches = agent_batches(scenario)
    events = sum(len(b) for b in batches)
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(f"duckdb:///{Path(tmp) / 'storm.duckdb'}")
        try:
            client = server.client
            client.put("/v1/topology", content=orjson.dumps(scenario.topology),
                       headers={"content-type": "application/json"}).raise_for_status()
            for job in scenario.jobs:
                client.post("/v1/jobs", json=job).raise_for_status()
            started = time.perf_counter()
            last_posted = asyncio.run(post_all(server.url, batches, args.concurrency))
            while True:
                found = client.get("/v1/incidents").json()["incidents"]
                if any(i["root_cause"]["component"] == truth["root_component"] and i["symptoms"] >= events - 2 for i in found):
                    break
                time.sleep(0.05)
            available = time.perf_counter()
            rss = peak_rss_mib(server.process.pid)
            [incident] = found
        finally:
            server.stop()
    print(f"events posted              {events:>10,} from {len(batches):,} agents ({args.concurrency} connections)")
    print(f"posting took               {last_posted - started:>10.2f} s")
    print(f"last post → right incident {available - last_posted:>10.2f} s  (target < 2 s)")
    print(f"root cause                 {incident['root_cause']['component']} ({incident['root_cause']['cause']}), "
          f"confidence {incident['root_cause']['confidence']}, action {incident['action']['kind']} {incident['action']['target']}")
    print(f"server peak RSS            {rss:>10,.0f} MiB  (target < 2 GiB)")


if __name__ == "__main__":
    main()
