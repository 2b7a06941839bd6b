"""Storm benchmark: one XID 79 on a 2,048-host, 16,384-rank job, then every other rank's
watchdog timeout ten minutes later — posted as 2,048 agents would: each host its own small
batch (its ~8 timeouts) on its own connection, all at once, from 32 client processes.

    python tests/bench/storm.py [--hosts 2048] [--clients 32] [--db URL] [--path /v1/events|/v1/logs]
                                [--workers N]   (N server processes: PostgreSQL only)

Prints, for the faultgraph server (engine live) and, in the same run with the same client,
a bare FastAPI endpoint that only parses the JSON (the framework's own rate):
the time from the first acknowledgement to the last (target ≤ 2 s), requests/s and their
ratio (target ≥ 0.5); then the time from the last acknowledgement to the right incident
(polling GET /v1/incidents as a dashboard would; target ≤ 2 s) and the server's peak RSS.
"""

import argparse
import asyncio
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import httpx
import orjson
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conftest import child_pids, cpu_seconds, free_port, peak_rss_mib, start_server  # noqa: E402

from faultgraph.ingest.agent.lines import Line, event_id  # noqa: E402
from faultgraph.ingest.parse import parse_line  # noqa: E402
from faultgraph.simulate.scenarios import storm  # noqa: E402

BARE_APP = """
import orjson
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

app = FastAPI()

@app.post("/v1/events")
@app.post("/v1/logs")
async def parse_only(request: Request) -> JSONResponse:
    return JSONResponse({"accepted": len(orjson.loads(await request.body())), "duplicates": 0, "rejected": []})

@app.get("/healthz")
def healthz() -> dict:
    return {"status": "ok"}
"""


def log_bodies(scenario) -> list[dict]:
    """Each host's raw lines of one source as an agent forwarding logs would post them to
    `/v1/logs` (parsed by the service); structured records go as events."""
    by_source: dict[tuple[str, str], list[str]] = defaultdict(list)
    for record in scenario.records:
        if record["type"] == "log":
            by_source[record["host"], record["source"]].append(record["line"])
    return [{"host": host, "source": source, "lines": lines} for (host, source), lines in by_source.items()]


def agent_batches(scenario) -> list[list[dict]]:
    """Each host's records as its agent would post them: parsed at the edge, one batch, each
    event with the id the agent gives it (`ingest/agent/lines.py`: host, stream and the
    line's byte offset in it; the server derives one only for events that come without)."""
    by_host: dict[str, list[dict]] = defaultdict(list)
    offsets: dict[tuple[str, str], int] = defaultdict(int)
    for record in scenario.records:
        if record["type"] == "log":
            event = parse_line(record["line"], host=record["host"], source=record["source"],
                               received=datetime.fromisoformat(record["time"].replace("Z", "+00:00")))
            stream = (record["host"], record["source"])
            offset = offsets[stream]
            offsets[stream] += len(record["line"].encode()) + 1
            if event is None:
                continue
            event["time"] = event["time"].isoformat()
            line = Line(record["line"], f"bench:{record['source']}", str(offset), resume="")
            event["id"] = event_id(host=record["host"], line=line)
        else:
            event = record["event"]
        by_host[event["host"]].append(event)
    return list(by_host.values())


async def post_raw(host: str, port: int, path: str, body: bytes) -> tuple[int, bytes]:
    """One POST on a fresh connection, written and read with asyncio streams: the cheapest
    client there is, so that 2,048 of them measure the server rather than the client."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(f"POST {path} HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\n"
                     f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode() + body)
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), None)
        answer = await (reader.readexactly(length) if length is not None else reader.read())
        return status, head + answer
    finally:
        writer.close()


def client_process(url: str, path: str, bodies: list[bytes], go: mp.Event, out: mp.Queue) -> None:
    """Post each body on its own connection, all at once; report (first send, ack times, 503s)."""
    parsed = httpx.URL(url)

    async def one(body: bytes, acks: list[float], busy: list[int]) -> None:
        while True:
            status, answer = await post_raw(parsed.host, parsed.port, path, body)
            if status != 503:
                break
            busy.append(1)
            await asyncio.sleep(1)
        if status != 200:
            raise RuntimeError(f"{status}: {answer[:300]!r}")
        acks.append(time.time())

    async def run() -> tuple[float, list[float], int]:
        acks: list[float] = []
        busy: list[int] = []
        go.wait()
        sent = time.time()
        await asyncio.gather(*(one(body, acks, busy) for body in bodies))
        return sent, acks, len(busy)

    out.put(asyncio.run(run()))


def server_cpu(pid: int, *, loop_only: bool = False) -> float:
    """CPU a server has used so far: all its threads, or (`loop_only`) only its main thread,
    the event loop that answers requests; and its workers' with `--workers`."""
    return cpu_seconds(pid, main_thread=loop_only) + sum(server_cpu(child, loop_only=loop_only) for child in child_pids(pid))


def blast(url: str, path: str, bodies: list[bytes], clients: int, pid: int) -> dict:
    """Every body posted at once from `clients` processes; times are wall-clock (one machine).
    The server's CPU per post is the figure a loaded machine disturbs least."""
    go, out = mp.Event(), mp.Queue()
    shares = [bodies[i::clients] for i in range(clients)]
    procs = [mp.Process(target=client_process, args=(url, path, share, go, out)) for share in shares]
    for proc in procs:
        proc.start()
    time.sleep(1.0)  # let every client import and get to the start line
    cpu, loop = server_cpu(pid), server_cpu(pid, loop_only=True)
    go.set()
    results = [out.get(timeout=300) for _ in procs]
    cpu, loop = server_cpu(pid) - cpu, server_cpu(pid, loop_only=True) - loop
    for proc in procs:
        proc.join()
    sent = min(r[0] for r in results)
    acks = sorted(t for r in results for t in r[1])
    return {"requests": len(acks), "first_sent": sent, "first_ack": acks[0], "last_ack": acks[-1],
            "ack_span": acks[-1] - acks[0], "rate": len(acks) / (acks[-1] - sent), "busy": sum(r[2] for r in results),
            "cpu_ms": 1000 * cpu / len(acks), "loop_ms": 1000 * loop / len(acks)}


def bare_server(tmp: Path) -> tuple[subprocess.Popen, str]:
    """The framework's own rate: FastAPI + uvicorn (same loop and parser) and orjson, nothing else."""
    (tmp / "bare_app.py").write_text(BARE_APP)
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "uvicorn", "bare_app:app", "--port", str(port),
                                "--log-level", "warning", "--no-access-log"], cwd=tmp,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            httpx.get(url + "/healthz", timeout=1)
            return process, url
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("bare server did not start")


def engine_passes(exposition: str) -> tuple[float, float]:
    """(passes over new events, their seconds) from the server's /metrics."""
    values = {sample.name: sample.value for family in text_string_to_metric_families(exposition)
              if family.name == "faultgraph_attribution_seconds" for sample in family.samples}
    return values.get("faultgraph_attribution_seconds_count", 0.0), values.get("faultgraph_attribution_seconds_sum", 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=2048)
    parser.add_argument("--clients", type=int, default=32, help="client processes")
    parser.add_argument("--db", help="database URL for the server (default: a fresh DuckDB file)")
    parser.add_argument("--workers", type=int, default=1, help="server processes (serve --workers; PostgreSQL only)")
    parser.add_argument("--path", default="/v1/events", choices=("/v1/events", "/v1/logs"),
                        help="agents post parsed events, or raw lines for the service to parse")
    args = parser.parse_args()

    scenario = storm(hosts=args.hosts)
    [truth] = scenario.truth
    if args.path == "/v1/logs":
        posted = log_bodies(scenario)
        events = sum(len(body["lines"]) for body in posted)
    else:
        posted = agent_batches(scenario)
        events = sum(len(batch) for batch in posted)
    bodies = [orjson.dumps(body) for body in posted]
    with tempfile.TemporaryDirectory() as tmp:
        bare, bare_url = bare_server(Path(tmp))
        try:
            base = blast(bare_url, args.path, bodies, args.clients, bare.pid)
        finally:
            bare.terminate()
            bare.wait()
        server = start_server(args.db or f"duckdb:///{Path(tmp) / 'storm.duckdb'}", args=("--workers", str(args.workers)))
        try:
            client = server.client
            client.put("/v1/topology", content=orjson.dumps(scenario.topology),
                       headers={"content-type": "application/json"}).raise_for_status()
            for job in scenario.jobs:
                client.post("/v1/jobs", json=job).raise_for_status()
            ours = blast(server.url, args.path, bodies, args.clients, server.process.pid)
            while True:
                found = client.get("/v1/incidents").json()["incidents"]
                if any(i["root_cause"]["component"] == truth["root_component"] and i["symptoms"] >= events - 2 for i in found):
                    break
                time.sleep(0.05)
            available = time.time()
            rss = peak_rss_mib(server.process.pid)
            passes = engine_passes(client.get("/metrics").text)
            [incident] = found
        finally:
            server.stop()
    print(f"posts                       {ours['requests']:>8,} ({events:,} events) from {args.clients} client processes, "
          f"one connection each; load {os.getloadavg()[0]:.2f}")
    print(f"bare FastAPI: first→last ack {base['ack_span']:>7.2f} s  {base['rate']:>7,.0f} requests/s")
    print(f"faultgraph:   first→last ack {ours['ack_span']:>7.2f} s  {ours['rate']:>7,.0f} requests/s  "
          f"(target ≤ 2 s)  503s {ours['busy']}")
    print(f"faultgraph / bare FastAPI   {ours['rate'] / base['rate']:>8.2f}  (target ≥ 0.5)")
    print(f"server CPU per post         {ours['cpu_ms']:>8.2f} ms  (bare FastAPI {base['cpu_ms']:.2f} ms, "
          f"ratio {base['cpu_ms'] / ours['cpu_ms']:.2f})")
    print(f"  of which the event loop     {ours['loop_ms']:>6.2f} ms  (bare FastAPI {base['loop_ms']:.2f} ms); "
          f"other threads (writer, engine, DuckDB) {ours['cpu_ms'] - ours['loop_ms']:.2f} ms")
    print(f"last ack → right incident   {available - ours['last_ack']:>8.2f} s  (target ≤ 2 s)")
    print(f"root cause                  {incident['root_cause']['component']} ({incident['root_cause']['cause']}), "
          f"confidence {incident['root_cause']['confidence']}")
    print(f"engine passes               {passes[0]:>8.0f}, {passes[1]:.2f} s in all")
    print(f"server peak RSS             {rss:>8,.0f} MiB  (target < 1 GiB)")


if __name__ == "__main__":
    main()
