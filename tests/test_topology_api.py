"""The cluster graph over HTTP: upload, versions, component lookup, and resolution of
raw identifiers on ingest — the app in this process over a real DuckDB file; the CLI against
a real server process."""

import copy
import uuid

import orjson
import pytest
from conftest import InProcessServer, Server, serve_in_process
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultgraph.attribution.generators import gb200_nvl72, heterogeneous_example, rail_optimized

T0 = "2026-11-29T08:00:00Z"


@pytest.fixture(scope="module")
def small() -> dict:
    """Four DGX-style hosts in two scalable units: leaves and a spine tier to cross."""
    return rail_optimized(4, hosts_per_su=2)


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory) -> InProcessServer:
    """One server for the tests whose uploads all fail (or do not care about versions)."""
    server = serve_in_process(f"duckdb:///{tmp_path_factory.mktemp('fuzz') / 'faultgraph.duckdb'}")
    yield server
    server.stop()


def put(server: InProcessServer, body) -> object:
    return server.client.put("/v1/topology", content=orjson.dumps(body))


def normal(body: dict) -> tuple[list, list]:
    """Components and links in a comparable order."""
    return (
        sorted(body["components"], key=lambda c: c["id"]),
        sorted(body["links"], key=lambda lk: (lk["a"], lk["b"])),
    )


def stored_component(server: InProcessServer, event: dict) -> str:
    posted = {"time": T0, "id": f"probe-{uuid.uuid4().hex}", **event}
    answer = server.client.post("/v1/events", json=[posted]).json()
    assert answer["accepted"] == 1, answer
    found = server.client.get("/v1/events", params={"kind": event["kind"]}).json()["events"]
    return next(e["component"] for e in found if e["id"] == posted["id"])


def test_round_trip_and_versions(server: InProcessServer, small: dict) -> None:
    assert server.client.get("/v1/topology").status_code == 404

    first = put(server, small)
    assert first.status_code == 200, first.text
    assert first.json() | {"created": None} == {
        "version": 1, "created": None, "components": len(small["components"]),
        "links": len(small["links"]), "hosts": 4, "gpus": 32,
    }
    got = server.client.get("/v1/topology").json()
    assert got["version"] == 1
    assert normal(got) == normal(small)

    mixed = heterogeneous_example()
    assert put(server, mixed).json()["version"] == 2
    assert normal(server.client.get("/v1/topology").json()) == normal(mixed)
    assert normal(server.client.get("/v1/topology", params={"version": 1}).json()) == normal(small)
    assert [v["version"] for v in server.client.get("/v1/topology/versions").json()["versions"]] == [2, 1]
    missing = server.client.get("/v1/topology", params={"version": 7})
    assert missing.status_code == 404 and "7" in missing.json()["detail"]

    # What GET answers can be PUT back as it is.
    assert put(server, got).json()["version"] == 3
    assert normal(server.client.get("/v1/topology").json()) == normal(small)


def test_invalid_graph_names_offenders_and_stores_nothing(server: InProcessServer, small: dict) -> None:
    bad = copy.deepcopy(small)
    bad["components"][0]["type"] = "toaster"
    bad["components"].append(copy.deepcopy(bad["components"][1]))
    bad["links"].append({"a": "node0000/gpu0", "b": "node0099/gpu0", "type": "nvlink"})
    answer = put(server, bad)
    assert answer.status_code == 422
    detail = answer.json()["detail"]
    assert "toaster" in detail
    assert f"duplicate component id: {bad['components'][1]['id']}" in detail
    assert "node0099/gpu0" in detail and "dangling" in detail
    assert len(answer.json()["problems"]) == 3
    assert server.client.get("/v1/topology").status_code == 404


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (b"{not json", 400, "not valid JSON"),
        (b"[1, 2]", 422, "body must be an object"),
        (b'{"components": {}}', 422, "`components` must be a list"),
        (b'{"components": [{"id": "a~b", "type": "gpu"}]}', 422, "containing '~'"),
    ],
)
def test_malformed_bodies(shared_server: InProcessServer, body: bytes, status: int, words: str) -> None:
    answer = shared_server.client.put("/v1/topology", content=body)
    assert answer.status_code == status
    assert words in answer.json()["detail"]


def test_body_limit_is_its_own_setting(db_url: str, small: dict) -> None:
    server = serve_in_process(db_url, env={"FAULTGRAPH_MAX_TOPOLOGY_BYTES": "1000"})
    try:
        answer = put(server, small)
        assert answer.status_code == 413 and "1000" in answer.json()["detail"]
    finally:
        server.stop()


def test_component_lookup(server: InProcessServer, small: dict) -> None:
    put(server, small)
    gpu = server.client.get("/v1/topology/components/node0001/gpu3").json()
    assert gpu["type"] == "gpu" and gpu["host"] == "node0001" and gpu["kind"] == "component"
    assert {f"node0001/nvswitch{i}" for i in range(4)} <= set(gpu["neighbours"])
    assert "node0001/gpu3~node0001/nvswitch0" in {lk["id"] for lk in gpu["links"]}
    assert gpu["attrs"]["pci"] in gpu["aliases"] and gpu["topology_version"] == 1

    nic = server.client.get("/v1/topology/components/node0001/mlx5_2").json()
    assert nic["id"] == "node0001/nic2"
    assert set(nic["neighbours"]) == {"node0001/pciesw1", "leaf-s0-r2"}

    link = server.client.get("/v1/topology/components/node0001/nic2~leaf-s0-r2").json()
    assert link["kind"] == "link" and link["id"] == "leaf-s0-r2~node0001/nic2" and link["type"] == "ib"

    host = server.client.get("/v1/topology/components/node0001").json()
    assert {f"node0001/gpu{i}" for i in range(8)} | {f"node0001/nic{i}" for i in range(8)} <= set(host["parts"])
    assert "node0001" not in host["parts"] and gpu["parts"] == [] and link["parts"] == []

    unknown = server.client.get("/v1/topology/components/node0001/gpu42")
    assert unknown.status_code == 404 and "node0001/gpu42" in unknown.json()["detail"]


def test_component_shows_its_latest_events(server: InProcessServer, small: dict) -> None:
    put(server, small)
    gpu = server.client.get("/v1/topology/components/node0002/gpu5").json()
    events = [
        {"time": f"2026-11-29T08:0{i}:00Z", "host": "node0002", "kind": "gpu_xid", "attrs": {"xid": 79 + i, "pci": gpu["attrs"]["pci"]}}
        for i in range(3)
    ]
    events.append({"time": T0, "host": "node0002", "kind": "gpu_xid", "attrs": {"xid": 1, "pci": "0000:18:00"}})
    assert server.client.post("/v1/events", json=events).json()["accepted"] == 4
    shown = server.client.get("/v1/topology/components/node0002/gpu5", params={"events": 2}).json()["events"]
    assert [e["attrs"]["xid"] for e in shown] == [81, 80]
    assert all(e["component"] == "node0002/gpu5" for e in shown)
    host = server.client.get("/v1/topology/components/node0002").json()["events"]
    assert len(host) == 4  # a host's events include those of its parts


def test_raw_identifiers_resolve_on_ingest(server: InProcessServer, small: dict) -> None:
    put(server, small)
    topology = {c["id"]: c for c in small["components"]}
    nic = topology["node0003/nic6"]["attrs"]
    gpu = topology["node0003/gpu1"]["attrs"]
    cases = [
        ({"host": "node0003", "kind": "gpu_xid", "attrs": {"xid": 79, "pci": "0000:" + gpu["pci"][5:].upper() + ".0"}}, "node0003/gpu1"),
        ({"host": "node0003", "kind": "gpu_xid", "attrs": {"xid": 48, "uuid": gpu["uuid"]}}, "node0003/gpu1"),
        ({"host": "node0003", "kind": "nic_link", "attrs": {"device": nic["device"], "state": "down"}}, "node0003/nic6"),
        ({"host": "node0003", "kind": "nic_error", "attrs": {"device": nic["netdev"], "count": 3}}, "node0003/nic6"),
        # an Xid whose bus id is a NIC's (a wrong or stale graph) is the host's, never the NIC's
        ({"host": "node0003", "kind": "gpu_xid", "attrs": {"xid": 79, "pci": nic["pci"]}}, "node0003"),
        ({"host": "node0003", "kind": "pcie_aer", "attrs": {"bdf": nic["pci"] + ".0", "severity": "fatal"}}, "node0003/nic6"),
        ({"host": "node0003", "kind": "nccl_error", "attrs": {"ip": nic["ip"]}}, "node0003/nic6"),
        ({"host": "node0003", "kind": "nvswitch_error", "attrs": {"sxid": 20034, "nvswitch": 2}}, "node0003/nvswitch2"),
        ({"host": "node0003", "kind": "host_mce", "component": "node0003/mlx5_4"}, "node0003/nic4"),
        ({"host": "node0003.cluster.local", "kind": "host_kernel"}, "node0003"),
        ({"host": "node0003", "kind": "host_oom", "component": "node0003/fan7"}, "node0003/fan7"),
    ]
    for event, component in cases:
        assert stored_component(server, event) == component, event


def test_event_filter_takes_any_name_a_component_answers_to(server: InProcessServer, small: dict) -> None:
    put(server, small)
    nic = next(c for c in small["components"] if c["id"] == "node0003/nic6")
    leaf = next(lk["b"] if lk["a"] == "node0003/nic6" else lk["a"] for lk in small["links"]
                if "node0003/nic6" in (lk["a"], lk["b"]) and lk["type"] == "ib")
    flapped = {"time": T0, "host": "node0003", "kind": "nic_link", "attrs": {"device": nic["attrs"]["device"], "state": "down"}}
    on_link = {"time": T0, "host": "node0003", "kind": "nic_error", "component": f"{leaf}~node0003/nic6", "attrs": {"count": 1}}
    assert server.client.post("/v1/events", json=[flapped, on_link]).json()["accepted"] == 2

    def found(component: str) -> list[str]:
        return [e["kind"] for e in server.client.get("/v1/events", params={"component": component}).json()["events"]]

    assert found("node0003/nic6") == ["nic_link"]
    assert found(f"node0003/{nic['attrs']['device']}") == ["nic_link"]  # the device name
    assert found(f"node0003/nic6~{leaf}") == found(f"{leaf}~node0003/nic6") == ["nic_error"]  # either order
    assert found("node0003/nic99") == []  # unknown to the topology: matched as given


def test_restart_keeps_the_topology(db_url: str, small: dict) -> None:
    server = serve_in_process(db_url)
    try:
        put(server, small)
        put(server, heterogeneous_example())
    finally:
        server.stop()
    server = serve_in_process(db_url)
    try:
        assert server.client.get("/v1/topology").json()["version"] == 2
        event = {"host": "pcie01", "kind": "nic_link", "attrs": {"device": "eth1", "state": "down"}}
        assert stored_component(server, event) == "pcie01/nic1"
        assert server.client.get("/v1/topology/components/pcie01/gpu2").json()["type"] == "gpu"
    finally:
        server.stop()


def test_without_topology_naming_conventions_apply(server: InProcessServer) -> None:
    assert stored_component(server, {"host": "node0042", "kind": "nic_link", "attrs": {"device": "mlx5_3", "state": "down"}}) == "node0042/nic3"
    assert stored_component(server, {"host": "node0042", "kind": "gpu_xid", "attrs": {"xid": 79, "pci": "0000:3b:00"}}) == "node0042"
    answer = server.client.get("/v1/topology/components/node0042")
    assert answer.status_code == 404 and "no topology" in answer.json()["detail"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["id", "type", "host", "a", "b", "attrs", "tier"]), inner, max_size=4),
    max_leaves=12,
)
bodies = st.fixed_dictionaries({"components": st.lists(json_values, max_size=4), "links": json_values}) | json_values


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=bodies)
def test_no_body_gets_a_5xx(shared_server: InProcessServer, body) -> None:
    answer = shared_server.client.put("/v1/topology", content=orjson.dumps(body))
    assert answer.status_code in (200, 400, 422), answer.text
    if answer.status_code != 200:
        assert answer.json()["detail"]


def test_cli_generate_and_upload(live_server: Server, tmp_path) -> None:
    """`faultgraph topology generate | upload`, the upload over HTTP to a server process."""
    from typer.testing import CliRunner

    from faultgraph.service.cli import app

    def cli(*args: str):
        return CliRunner().invoke(app, ["topology", *args])

    generated = cli("generate", "rail-optimized", "--hosts", "6", "--hosts-per-su", "4")
    assert generated.exit_code == 0, generated.stderr
    body = orjson.loads(generated.stdout)
    assert sum(c["type"] == "gpu" for c in body["components"]) == 48
    path = tmp_path / "topo.json"
    path.write_text(generated.stdout)
    uploaded = cli("upload", str(path), "--url", live_server.url)
    assert uploaded.exit_code == 0, uploaded.stderr
    assert orjson.loads(uploaded.stdout)["gpus"] == 48
    assert normal(live_server.client.get("/v1/topology").json()) == normal(body)

    path.write_bytes(b'{"components": [{"id": "x", "type": "toaster"}]}')
    refused = cli("upload", str(path), "--url", live_server.url)
    assert refused.exit_code == 1 and "toaster" in refused.stderr
    wrong = cli("generate", "heterogeneous-example", "--hosts", "3")
    assert wrong.exit_code != 0 and "--hosts" in wrong.stderr



def test_racks_route_lists_the_nvl72_racks(server: InProcessServer, small: dict) -> None:
    """GET /v1/topology/racks: what the UI's rack lanes read; none on a DGX cluster."""
    assert server.client.get("/v1/topology/racks").status_code == 404
    assert server.client.put("/v1/topology", json=small).status_code == 200
    assert server.client.get("/v1/topology/racks").json()["racks"] == []
    assert server.client.put("/v1/topology", json=gb200_nvl72(racks=2)).status_code == 200
    answer = server.client.get("/v1/topology/racks").json()
    assert answer["topology_version"] == 2 and [r["id"] for r in answer["racks"]] == ["rack00", "rack01"]
    parts = server.client.get("/v1/topology/components/rack01").json()["parts"]
    assert {f"node{i:04d}" for i in range(18, 36)} | {f"rack01/nvswitch{i}" for i in range(18)} <= set(parts)
    assert "rack01/pdu1" in parts and not any(p.startswith(("rack00", "node0017")) for p in parts)
    rack = answer["racks"][1]
    assert [t["host"] for t in rack["compute_trays"]] == [f"node{i:04d}" for i in range(18, 36)]
    assert rack["switch_trays"][6] == {"tray": 6, "host": "rack01-nvsw6", "chips": ["rack01/nvswitch12", "rack01/nvswitch13"]}
