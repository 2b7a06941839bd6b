"""`POST /v1/inventory` and `faultgraph agent --inventory`: a new topology version only when
a host's tool outputs change the graph, and `/v1/topology/versions` saying what changed."""

from pathlib import Path

import pytest
from conftest import InProcessServer, Server, serve_in_process

from faultgraph.attribution.generators import rail_optimized
from faultgraph.ingest.agent import inventory as agent_inventory
from faultgraph.service import store
from faultgraph.service.auth import service as tokens

DATA = Path(__file__).parent / "data" / "discover"
HOST = "node0001"
SERIAL = "1651323018291"  # GPU 0's serial in the real h800-nvidia-smi-q.txt


def files(**replace: str) -> dict[str, str]:
    smi = (DATA / "h800-nvidia-smi-q.txt").read_text()
    for old, new in replace.items():
        smi = smi.replace(old, new)
    return {"nvidia-smi-topo-m.txt": (DATA / "h800-nvidia-smi-topo-m.txt").read_text(), "nvidia-smi-q.txt": smi}


def test_versions_only_when_something_changed(server: InProcessServer) -> None:
    client = server.client
    assert client.put("/v1/topology", json=rail_optimized(2, hosts_per_su=2)).status_code == 200
    first = client.post("/v1/inventory", json={"host": HOST, "files": files()})
    assert first.status_code == 200, first.text
    assert first.json()["changed"] is True and first.json()["version"] == 2
    # discovered: node0001's GPU 0 now carries the real serial, its NICs keep their cables
    gpu = client.get(f"/v1/topology/components/{HOST}/gpu0").json()
    assert gpu["attrs"]["serial"] == SERIAL
    assert any(n.startswith("leaf-") for n in client.get(f"/v1/topology/components/{HOST}/nic0").json()["neighbours"])

    again = client.post("/v1/inventory", json={"host": HOST, "files": files()})
    assert again.json() == {"host": HOST, "version": 2, "changed": False, "problems": []}

    swapped = client.post("/v1/inventory", json={"host": HOST, "files": files(**{SERIAL: "1651323099999"})})
    assert (swapped.json()["changed"], swapped.json()["version"]) == (True, 3)
    versions = {v["version"]: v for v in client.get("/v1/topology/versions").json()["versions"]}
    assert versions[3]["changes"]["source"] == f"inventory:{HOST}"
    assert versions[3]["changes"]["attrs_changed"] == [
        {"component": f"{HOST}/gpu0", "attr": "serial", "old": SERIAL, "new": "1651323099999"}]
    assert "changes" not in versions[1]  # an admin's upload


def test_a_cable_moved_in_the_fabric_dump_shows_as_links(server: InProcessServer) -> None:
    client = server.client
    dump = (DATA / "ibnetdiscover-topograph.txt").read_text()
    host = "a08-p1-dgx-04-c01"  # named by its HCA description (mlx5_5) in the real dump
    assert client.post("/v1/inventory", json={"host": host, "files": {"ibnetdiscover.txt": dump}}).json()["changed"]
    # the cable of its mlx5_5 moved from port 1 of leaf 04-04 to the free port 5 of leaf 04-02,
    # edited into both ends' records of the real dump
    moved = dump.replace('[1]\t"H-e09d7303007a4bd8"[1](e09d7303007a4bd8) \t\t# "a08-p1-dgx-04-c01 mlx5_5" lid 647 4xNDR\n', "")
    moved = moved.replace("\n[35]\t\"S-2c5eab0300c26280\"[15]", "\n[5]\t\"H-e09d7303007a4bd8\"[1](e09d7303007a4bd8) \t\t# "
                          "\"a08-p1-dgx-04-c01 mlx5_5\" lid 647 4xNDR\n[35]\t\"S-2c5eab0300c26280\"[15]", 1)
    moved = moved.replace('[1](e09d7303007a4bd8) \t"S-2c5eab0300b87b40"[1]\t\t# lid 647 lmc 0 "MF0;A09-P1-IBLEAF-04-04:MQM9701/U1"',
                          '[1](e09d7303007a4bd8) \t"S-2c5eab0300b87bc0"[5]\t\t# lid 647 lmc 0 "MF0;A09-P1-IBLEAF-04-02:MQM9701/U1"')
    answer = client.post("/v1/inventory", json={"host": host, "files": {"ibnetdiscover.txt": moved}}).json()
    assert answer["changed"], answer
    assert answer["changes"]["links_removed"] == [f"{host}/nic5~a09-p1-ibleaf-04-04"]
    assert answer["changes"]["links_added"] == [f"{host}/nic5~a09-p1-ibleaf-04-02"]


@pytest.mark.parametrize(("body", "status"), [
    ({"host": HOST, "files": {"notes.txt": "x"}}, 422),
    ({"host": HOST, "files": {}}, 422),
    ({"files": {"ibstat.txt": "x"}}, 422),
])
def test_bad_inventories_are_refused_by_name(server: InProcessServer, body: dict, status: int) -> None:
    answer = server.client.post("/v1/inventory", json=body)
    assert answer.status_code == status and "not an inventory" in answer.json()["detail"]


def test_a_body_that_is_not_json_is_a_4xx(server: InProcessServer) -> None:
    answer = server.client.post("/v1/inventory", content=b"{not json", headers={"content-type": "application/json"})
    assert answer.status_code == 422 and "not an inventory" in answer.json()["detail"]


def test_an_unreadable_file_is_named_and_the_rest_used(server: InProcessServer) -> None:
    answer = server.client.post("/v1/inventory", json={"host": HOST, "files": {**files(), "ibstat.txt": "garbage"}}).json()
    assert answer["changed"] and any("ibstat.txt" in p for p in answer["problems"])


def test_the_agent_collects_what_runs_and_posts_only_changes(live_server: Server) -> None:
    """The agent's reporter posting over HTTP to a server process."""
    outputs = {"nvidia-smi": (DATA / "h800-nvidia-smi-topo-m.txt").read_text(),
               "ibstat": (DATA / "mooncake-ibstat.txt").read_text()}

    def runner(command: tuple[str, ...], timeout: float) -> str | None:
        return outputs.get(command[0]) if command[1:] in ((), ("topo", "-m")) else None

    commands = {"nvidia-smi-topo-m.txt": ("nvidia-smi", "topo", "-m"), "ibstat.txt": ("ibstat",),
                "lspci.txt": ("lspci", "-D")}
    reporter = agent_inventory.InventoryReporter(live_server.url, HOST, commands=commands, runner=runner)
    first = reporter.report_once()
    assert first["changed"] and f"{HOST}/nic1" in first["changes"]["components_added"]
    assert reporter.report_once() is None  # same outputs: nothing posted
    assert agent_inventory.run_command(("false",), 5) is None
    assert agent_inventory.run_command(("no-such-tool-here",), 5) is None
    assert agent_inventory.run_command(("echo", "ok"), 5) == "ok\n"


def test_roles_and_host_bound_tokens(tmp_path) -> None:
    db_url = f"duckdb:///{tmp_path / 'secured.duckdb'}"
    engine = store.make_engine(db_url)
    store.init_schema(engine)
    with engine.begin() as conn:
        bound = tokens.create(conn, role="agent", host_pattern="node00*")[0]
        reader = tokens.create(conn, role="reader")[0]
    engine.dispose()
    srv = serve_in_process(db_url)
    try:
        body = {"host": HOST, "files": files()}
        assert srv.client.post("/v1/inventory", json=body).status_code == 401
        assert srv.client.post("/v1/inventory", json=body, headers={"authorization": f"Bearer {reader}"}).status_code == 403
        other = srv.client.post("/v1/inventory", json={**body, "host": "gpu-a1"}, headers={"authorization": f"Bearer {bound}"})
        assert other.status_code == 403 and "node00*" in other.json()["detail"]
        assert srv.client.post("/v1/inventory", json=body, headers={"authorization": f"Bearer {bound}"}).json()["changed"]
    finally:
        srv.stop()
