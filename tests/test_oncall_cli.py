"""The on-call CLI end to end against a running service, and `faultgraph demo`."""

import json
import os
import re
import subprocess
import sys
import threading
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
import typer.main
from conftest import free_port
from rich.console import Console
from test_incidents_api import T0, gpu_falls_off, planned_maintenance
from typer.testing import CliRunner

from faultgraph.service import demo, oncall_cli
from faultgraph.service.cli import app

runner = CliRunner()


def cli(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, list(args), env=env, catch_exceptions=False)


@pytest.fixture(scope="module")
def loaded(live_server) -> dict:
    """One resolved incident (job a) and one open one (job b), in a server process the
    CLI reaches over HTTP; shared by the module's tests in file order (the last one
    acknowledges and resolves b)."""
    server = live_server
    server.client.post("/v1/events", json=gpu_falls_off("job-a", "node0042"))
    server.client.post("/v1/events", json=[e for e in gpu_falls_off("job-b", "node0103", at=T0 + timedelta(hours=1), first=100)
                                           if e["kind"] != "job_restart"])
    server.client.post("/v1/analyze")
    incidents = {i["job"]: i for i in server.client.get("/v1/incidents").json()["incidents"]}
    return {"url": server.url, "client": server.client, "a": incidents["job-a"], "b": incidents["job-b"]}


def test_incidents_table_json_and_filters(loaded):
    result = cli("incidents", "--url", loaded["url"])
    assert result.exit_code == 0, result.output
    assert loaded["a"]["id"] in result.output and loaded["b"]["id"] in result.output
    assert "gpu_fell_off_bus [gpu] on node0103/gpu3" in result.output and "2 incident(s)" in result.output
    # the address from the environment, JSON for scripts, filters passed through
    result = cli("incidents", "--status", "open", "--json", env={"FAULTGRAPH_URL": loaded["url"]})
    assert [i["id"] for i in json.loads(result.output)["incidents"]] == [loaded["b"]["id"]]
    result = cli("incidents", "--job", "nosuch", "--status", "open", "--url", loaded["url"])
    assert result.exit_code == 0 and result.output == "No incident matches --status open --job nosuch.\n", result.output
    result = cli("incidents", "--category", "nonsense", "--url", loaded["url"])
    assert result.exit_code == 1 and "400 from /v1/incidents" in result.output and "category" in result.output


def test_show_and_timeline(loaded, monkeypatch):
    incident = loaded["a"]
    result = cli("show", incident["id"], "--url", loaded["url"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "evict node0042" in text and "63 on 8 hosts" in text and "resolved" in text
    assert "gpu_fell_off_bus [gpu] on node0042/gpu3" in text
    assert json.loads(cli("show", incident["id"], "--json", "--url", loaded["url"]).output)["id"] == incident["id"]
    result = cli("timeline", incident["id"], "--url", loaded["url"])
    assert result.exit_code == 0, result.output
    assert "gpu_xid" in result.output and "NVRM: Xid" in result.output
    # at 100 columns every column but the message whole, each message cut to its one line
    monkeypatch.setattr(oncall_cli, "console", Console(width=100))  # a terminal's width (160 when piped)
    narrow = cli("timeline", incident["id"], "--url", loaded["url"]).output
    xid = next(line for line in narrow.splitlines() if "gpu_xid" in line)
    assert "node0042 " in xid and "node0042/gpu3" in xid and re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", xid), xid
    assert xid.rstrip().endswith("… │"), xid
    # the root's host in full, the other seven hosts' timeouts summarised
    assert "… and 56 nccl_timeout on 7 other hosts" in result.output
    events = json.loads(cli("timeline", incident["id"], "--json", "--url", loaded["url"]).output)
    assert len(events) == 64 and events[0]["kind"] == "gpu_xid"
    assert cli("timeline", incident["id"], "--all", "--url", loaded["url"]).output.count("nccl_timeout") == 63


def test_ack_and_resolve_with_cause(loaded):
    incident = loaded["b"]
    result = cli("ack", incident["id"], "--note", "draining node0103", "--url", loaded["url"])
    assert result.exit_code == 0 and "acknowledged" in result.output
    stored = loaded["client"].get(f"/v1/incidents/{incident['id']}").json()
    assert stored["status"] == "acknowledged" and stored["notes"][-1]["text"] == "draining node0103"
    result = cli("resolve", incident["id"], "--cause", "gpu_hbm", "--note", "HBM per nvidia-smi", "--url", loaded["url"])
    assert result.exit_code == 0, result.output
    assert "resolved: gpu_hbm [gpu] (confirmed) on node0103/gpu3" in result.output
    stored = loaded["client"].get(f"/v1/incidents/{incident['id']}").json()
    assert stored["status"] == "resolved" and stored["root_cause"]["cause"] == "gpu_hbm" and stored["root_cause"]["confirmed"]
    result = cli("resolve", incident["id"], "--cause", "gremlins", "--url", loaded["url"])
    assert result.exit_code == 1 and "expected one of" in result.output
    result = cli("ack", "inc-999999", "--url", loaded["url"])
    assert result.exit_code == 1 and "404 from" in result.output


def _commands(group, path="faultgraph"):
    """Every command and sub-command of `group`, with the words that call it."""
    for name, command in getattr(group, "commands", {}).items():
        yield f"{path} {name}", command
        yield from _commands(command, f"{path} {name}")


def test_no_help_paragraph_is_wrapped_in_its_docstring():
    """Typer's rich mode prints a docstring's paragraphs with their line breaks kept (the
    listing's summaries and a command's own --help alike): a paragraph wrapped in the source
    comes out broken mid-sentence wherever the terminal's width differs."""
    wrapped = [path for path, command in _commands(typer.main.get_command(app))
               if any("\n" in paragraph.strip() for paragraph in (command.help or "").split("\n\n"))]
    assert wrapped == []


def test_an_option_read_from_the_environment_is_named_once_in_its_help():
    """Typer adds `[env var: X]` to an option declared with `envvar`; its help saying so too
    printed the variable twice."""
    repeated = [f"{path} {param.opts[0]}" for path, command in _commands(typer.main.get_command(app))
                for param in command.params
                if isinstance(param.envvar, str) and param.envvar in (getattr(param, "help", None) or "")]
    assert repeated == []


def test_no_help_cites_a_document_the_user_does_not_have():
    """The contract's section numbers ("SPEC §4") mean nothing to someone reading --help: the
    contract is not shipped with the package."""
    citing = [f"{path} {name}" for path, command in _commands(typer.main.get_command(app))
              for name, text in [("", command.help), *((p.opts[0], getattr(p, "help", None)) for p in command.params)]
              if "SPEC" in (text or "")]
    assert citing == []


def test_unreachable_server_is_one_line_not_a_traceback():
    result = cli("incidents", "--url", f"http://127.0.0.1:{free_port()}")
    assert result.exit_code == 1 and "cannot reach" in result.output and "Traceback" not in result.output
    result = cli("incidents", "--url", "localhost:8123")  # was "unsupported protocol 'localhost://'"
    assert result.exit_code == 1 and "begins with http:// or https://, e.g. http://localhost:8123" in " ".join(result.output.split())


def test_token_goes_out_as_bearer():
    seen: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            seen.append(self.headers.get("Authorization"))
            body = b'{"incidents": [], "next": null}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        assert cli("incidents", "--url", url, "--token", "t-flag").exit_code == 0
        assert cli("incidents", "--url", url, env={"FAULTGRAPH_TOKEN": "t-env"}).exit_code == 0
    finally:
        server.shutdown()
    assert seen == ["Bearer t-flag", "Bearer t-env"]


@pytest.mark.slow
def test_demo_serves_a_simulated_day(tmp_path):
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "faultgraph.service.cli", "demo", "--port", str(port), "--hosts", "8"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "COLUMNS": "200", "TMPDIR": str(tmp_path)})  # its default store's directory there
    try:
        output = []
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            output.append(line)
            if line.startswith("first incident:"):
                break
        text = "".join(output)
        assert f"UI:             http://127.0.0.1:{port}/ui/" in text, text
        assert f"CLI:            FAULTGRAPH_URL=http://127.0.0.1:{port} faultgraph incidents" in text
        first = text.split("first incident:")[1].strip()
        assert httpx.get(first).status_code == 200
        incidents = httpx.get(f"http://127.0.0.1:{port}/v1/incidents").json()["incidents"]
        assert first.endswith(incidents[-1]["id"])  # the oldest
        truth = {fault["cause"] for fault in demo.scenario(8).truth}
        found = {incident["root_cause"]["cause"] for incident in incidents}
        assert len(incidents) >= 6 and "gpu_fell_off_bus" in found
        assert len(found & truth) >= 4, (found, truth)
        assert len(list(tmp_path.glob("faultgraph-demo-*/demo.duckdb"))) == 1
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert list(tmp_path.glob("faultgraph-demo-*")) == []  # stopped, it leaves nothing behind


def test_planned_maintenance_reads_as_no_action(loaded):
    """SPEC's action kind `none` names the maintained host as its target; on-call reads "no
    action", not "none node0200". Runs after the tests above, which count two incidents."""
    loaded["client"].post("/v1/events", json=planned_maintenance("job-m", "node0200", T0 + timedelta(hours=3)))
    loaded["client"].post("/v1/analyze")
    [planned] = [i for i in loaded["client"].get("/v1/incidents").json()["incidents"] if i["job"] == "job-m"]
    assert planned["action"]["kind"] == "none" and planned["planned"]
    listing = " ".join(cli("incidents", "--url", loaded["url"]).output.split())
    shown = " ".join(cli("show", planned["id"], "--url", loaded["url"]).output.split())
    assert "no action" in listing and "action no action: the job resumes when the maintenance ends" in shown
    # the explanation says "planned maintenance" once, the action's detail does not repeat it
    assert planned["root_cause"]["explanation"].count("planned maintenance") == 1
    assert "none node0200" not in listing + shown
