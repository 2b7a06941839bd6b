"""HTTPS and mutual TLS on a real `faultgraph serve`, with certificates made at test time
(trustme: a throwaway CA, a server certificate for 127.0.0.1, client certificates)."""

import os
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
import pytest
import trustme
from conftest import free_port
from typer.testing import CliRunner

from faultgraph.attribution.generators import rail_optimized
from faultgraph.ingest.agent.client import Sender, tls_context
from faultgraph.ingest.agent.spool import Spool
from faultgraph.service import client, store
from faultgraph.service.auth import service as tokens
from faultgraph.service.cli import app

T0 = "2026-11-29T08:00:00Z"


@dataclass
class Pki:
    """Files of a test PKI: the CA, the server's certificate and key, two hosts' client
    certificates (CN and DNS name node0042 / node0043), and a stranger CA with a client."""

    ca: Path
    server_cert: Path
    server_key: Path
    node42: Path  # certificate and key in one PEM file
    node43: Path
    other_ca: Path
    stranger: Path  # a client certificate from the other CA


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Pki:
    root = tmp_path_factory.mktemp("pki")
    ca, other = trustme.CA(), trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    paths = Pki(*(root / name for name in ("ca.pem", "server.pem", "server.key", "node0042.pem", "node0043.pem",
                                           "other-ca.pem", "stranger.pem")))
    ca.cert_pem.write_to_path(paths.ca)
    other.cert_pem.write_to_path(paths.other_ca)
    server.cert_chain_pems[0].write_to_path(paths.server_cert)
    server.private_key_pem.write_to_path(paths.server_key)
    ca.issue_cert("node0042", common_name="node0042").private_key_and_cert_chain_pem.write_to_path(paths.node42)
    ca.issue_cert("node0043", common_name="node0043").private_key_and_cert_chain_pem.write_to_path(paths.node43)
    other.issue_cert("node0042", common_name="node0042").private_key_and_cert_chain_pem.write_to_path(paths.stranger)
    return paths


def trusting(pki: Pki, cert: Path | None = None, ca: Path | None = None) -> ssl.SSLContext:
    return tls_context(ca_file=ca or pki.ca, cert=cert)


@dataclass
class TlsServer:
    url: str
    db_url: str
    process: subprocess.Popen

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


def start_tls_server(db_url: str, pki: Pki, *, client_ca: bool, env: dict[str, str] | None = None) -> TlsServer:
    """`faultgraph serve` over HTTPS (key in its own file), waiting until /healthz answers."""
    port = free_port()
    args = ["--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key)]
    if client_ca:
        args += ["--tls-client-ca", str(pki.ca)]
    process = subprocess.Popen(
        [sys.executable, "-m", "faultgraph.service.cli", "serve", "--port", str(port), "--db", db_url, *args],
        env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"https://127.0.0.1:{port}"
    context = trusting(pki, pki.node42 if client_ca else None)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {process.stdout.read().decode(errors='replace')}")
        try:
            if httpx.get(url + "/healthz", verify=context, timeout=1).status_code == 200:
                return TlsServer(url, db_url, process)
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("TLS server did not become healthy in 30 s")


@pytest.fixture
def tls_server(db_url, pki) -> Iterator[TlsServer]:
    srv = start_tls_server(db_url, pki, client_ca=False)
    yield srv
    srv.stop()


@pytest.fixture
def mtls_server(db_url, pki) -> Iterator[tuple[TlsServer, dict[str, str]]]:
    """A mutual-TLS server whose store holds an admin token, an unbound agent token and an
    agent token bound to the certificate name node0042."""
    engine = store.make_engine(db_url)
    store.init_schema(engine)
    with engine.begin() as conn:
        made = {
            "admin": tokens.create(conn, role="admin", name="ops")[0],
            "agent": tokens.create(conn, role="agent", name="fleet")[0],
            "bound": tokens.create(conn, role="agent", name="node0042", cert_name="node0042")[0],
        }
    engine.dispose()
    srv = start_tls_server(db_url, pki, client_ca=True)
    yield srv, made
    srv.stop()


def event(host: str = "node0042", **fields) -> dict:
    return {"time": T0, "host": host, "kind": "host_oom", **fields}


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def refused(url: str, **options) -> bool:
    """Whether the TLS handshake (or the request right after it) fails."""
    try:
        httpx.get(url + "/healthz", timeout=5, **options)
    except (httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError):
        return True
    return False


def test_https_without_client_certificates(tls_server, pki):
    http = httpx.Client(base_url=tls_server.url, verify=trusting(pki))
    assert http.post("/v1/events", json=[event(id="a")]).json()["accepted"] == 1  # loopback, no tokens: open
    assert http.get("/v1/events").json()["events"][0]["id"] == "a"
    http.close()
    assert refused(tls_server.url)  # the system's CAs do not know the test CA
    assert refused(tls_server.url, verify=trusting(pki, ca=pki.other_ca))  # a wrong CA
    assert refused(tls_server.url.replace("https", "http"))  # plain HTTP to the TLS port


def test_mutual_tls_requires_a_certificate_from_the_client_ca(mtls_server, pki):
    srv, made = mtls_server
    assert refused(srv.url, verify=trusting(pki))  # no client certificate
    assert refused(srv.url, verify=trusting(pki, pki.stranger))  # a certificate from another CA
    assert refused(srv.url, verify=trusting(pki, pki.node42, ca=pki.other_ca))  # client does not trust the server
    answer = httpx.get(srv.url + "/v1/tokens", headers=bearer(made["admin"]), verify=trusting(pki, pki.node42))
    assert answer.status_code == 200
    assert {t["cert_name"] for t in answer.json()["tokens"]} == {None, "node0042"}


def test_a_certificate_bound_token_works_only_from_that_certificate(mtls_server, pki):
    srv, made = mtls_server
    as42 = httpx.Client(base_url=srv.url, verify=trusting(pki, pki.node42))
    as43 = httpx.Client(base_url=srv.url, verify=trusting(pki, pki.node43))
    assert as42.post("/v1/events", json=[event(id="b1")], headers=bearer(made["bound"])).json()["accepted"] == 1
    stolen = as43.post("/v1/events", json=[event(id="b2")], headers=bearer(made["bound"]))
    wrong = as43.post("/v1/events", json=[event(id="b3")], headers=bearer(made["bound"][:-2] + "xx"))
    assert stolen.status_code == wrong.status_code == 401 and stolen.text == wrong.text  # nothing to tell them apart
    assert as43.post("/v1/events", json=[event(id="b4")], headers=bearer(made["agent"])).status_code == 200
    ids = {e["id"] for e in as42.get("/v1/events", headers=bearer(made["admin"])).json()["events"]}
    assert ids == {"b1", "b4"}
    as42.close()
    as43.close()


def test_cli_and_agent_talk_mutual_tls(mtls_server, pki, tmp_path, monkeypatch):
    srv, made = mtls_server
    runner = CliRunner()
    try:
        plain = runner.invoke(app, ["incidents", "--url", srv.url, "--token", made["admin"]])
        assert plain.exit_code == 1 and "cannot reach" in plain.stderr
        flags = runner.invoke(app, ["--ca-file", str(pki.ca), "--cert", str(pki.node42),
                                    "incidents", "--url", srv.url, "--token", made["admin"], "--json"])
        assert flags.exit_code == 0, flags.stderr
        monkeypatch.setenv("FAULTGRAPH_CA_FILE", str(pki.ca))
        monkeypatch.setenv("FAULTGRAPH_CERT", str(pki.node43))
        client.use_tls(client.Tls.from_env())
        assert client.get(srv.url, "/v1/incidents", token=made["admin"])["incidents"] == []
        missing = runner.invoke(app, ["--ca-file", str(tmp_path / "nope.pem"), "incidents", "--url", srv.url])
        # the message names the file, however deep the temporary folder (wrapped at 80 columns)
        assert missing.exit_code == 1 and "nope.pem" in "".join(missing.stderr.split())
        topology = tmp_path / "topology.json"
        topology.write_bytes(orjson.dumps(rail_optimized(hosts=2)))
        upload = runner.invoke(app, ["topology", "upload", str(topology), "--url", srv.url, "--token", made["admin"]])
        assert upload.exit_code == 0 and orjson.loads(upload.stdout)["version"] == 1  # TLS from the environment
    finally:
        client.use_tls(client.Tls())
    spool = Spool(tmp_path / "spool.sqlite", max_events=100)
    spool.commit([event(id="from-agent")], {})
    sender = Sender(url=srv.url, token=made["bound"], spool=spool, dead_letter=tmp_path / "dead.ndjson",
                    tls=tls_context(ca_file=pki.ca, cert=pki.node42))
    assert sender.send_once() == 0.0 and sender.delivered == 1 and len(spool) == 0
    sender.close()
    spool.close()
    agent = runner.invoke(app, ["agent", "--url", srv.url, "--file", str(tmp_path / "*.log"), "--state-dir", str(tmp_path / "state"),
                                "--ca-file", str(pki.ca), "--cert", "no-such.pem"])
    assert agent.exit_code == 2 and "no-such.pem" in agent.stderr


def test_serve_names_a_tls_file_that_will_not_load(db_url, pki, tmp_path):
    runner = CliRunner()
    missing = runner.invoke(app, ["serve", "--port", "1", "--db", db_url, "--tls-cert", str(tmp_path / "none.pem")])
    assert missing.exit_code == 2 and "none.pem" in missing.stderr
    swapped = runner.invoke(app, ["serve", "--port", "1", "--db", db_url, "--tls-cert", str(pki.server_key)])
    assert swapped.exit_code == 2 and "cannot serve HTTPS" in swapped.stderr
    lonely = runner.invoke(app, ["serve", "--port", "1", "--db", db_url, "--tls-client-ca", str(pki.ca)])
    assert lonely.exit_code == 2 and "need --tls-cert" in lonely.stderr
