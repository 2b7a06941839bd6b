"""deploy/: every Kubernetes manifest validates against the Kubernetes schemas (offline, from
kubernetes-validate), and every command, file, service and name the manifests, the compose
file, the Dockerfile and the systemd units refer to exists."""

import shlex
import tomllib
from dataclasses import fields
from pathlib import Path

import kubernetes_validate
import pytest
import sqlalchemy as sa
import typer
import yaml

from faultgraph.service.app import create_app
from faultgraph.service.cli import app as cli_app

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
MANIFESTS = sorted((DEPLOY / "kubernetes").glob("*.yaml"))
COMPOSE = DEPLOY / "compose" / "docker-compose.yml"
UNITS = sorted((DEPLOY / "systemd").glob("*.service"))
KUBERNETES_VERSION = kubernetes_validate.utils.latest_version()


def load_manifests() -> list[dict]:
    return [doc for path in MANIFESTS for doc in yaml.safe_load_all(path.read_text()) if doc]


def objects(kind: str) -> dict[str, dict]:
    return {doc["metadata"]["name"]: doc for doc in load_manifests() if doc["kind"] == kind}


def check_cli(argv: list[str]) -> None:
    """`argv` (after the program name) names a real subcommand with options it accepts.

    Duck-typed over click's classes: typer ships its own copy of click.
    """
    command = typer.main.get_command(cli_app)
    ctx = command.make_context("faultgraph", ["--help"], resilient_parsing=True)
    args = list(argv)
    while hasattr(command, "get_command"):  # a group: descend into the named subcommand
        assert args, f"faultgraph {shlex.join(argv)}: no subcommand"
        sub = command.get_command(ctx, args[0])
        assert sub is not None, f"faultgraph has no command {args[0]!r} (in {shlex.join(argv)})"
        ctx = sub.make_context(args[0], ["--help"], parent=ctx, resilient_parsing=True)
        command, args = sub, args[1:]
    try:
        command.make_context(command.name, args, parent=ctx.parent)
    except Exception as exc:  # click's UsageError and friends, from whichever copy of click
        pytest.fail(f"faultgraph {shlex.join(argv)}: {exc}")


def agent_settings_are_known(text: str, where: str) -> None:
    """An agent TOML file holds only settings the agent has, with a service URL."""
    from faultgraph.ingest.agent.run import AgentConfig

    values = tomllib.loads(text)
    unknown = set(values) - {f.name for f in fields(AgentConfig)}
    assert not unknown, f"{where}: settings the agent does not have: {unknown}"
    assert values.get("url", "").startswith("http"), f"{where}: no service url"
    AgentConfig(**values)  # raises on values the agent refuses


@pytest.mark.parametrize("argv", [["nonsense"], ["serve", "--no-such-flag"], ["serve", "--port", "eighty"], []])
def test_the_command_check_itself_refuses_what_does_not_exist(argv):
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        check_cli(argv)


# --- Kubernetes ------------------------------------------------------------------------

@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifest_validates_against_the_kubernetes_schema(path):
    docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    assert docs, f"{path.name} holds no object"
    for doc in docs:
        try:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{path.name}: {doc['kind']} {doc['metadata'].get('name')}: {exc.message} at {list(exc.path)}")


def test_manifests_hold_the_objects_a_deployment_needs():
    kinds = {(doc["kind"], doc["metadata"]["name"]) for doc in load_manifests()}
    assert {("Deployment", "faultgraph"), ("Service", "faultgraph"), ("DaemonSet", "faultgraph-agent"),
            ("ConfigMap", "faultgraph-agent"), ("Secret", "faultgraph-agent-token"), ("Namespace", "faultgraph")} <= kinds
    namespaces = set(objects("Namespace"))
    for doc in load_manifests():
        if doc["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):  # cluster-scoped
            assert doc["metadata"].get("namespace") in namespaces, f"{doc['kind']} {doc['metadata']['name']}: namespace"


def pod_specs() -> dict[str, dict]:
    return {f"{kind} {name}": doc["spec"]["template"]["spec"]
            for kind in ("Deployment", "DaemonSet") for name, doc in objects(kind).items()}


def test_probes_hit_routes_the_service_serves():
    routes = set(create_app().openapi()["paths"])
    [container] = objects("Deployment")["faultgraph"]["spec"]["template"]["spec"]["containers"]
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        http = container[probe]["httpGet"]
        assert http["path"] in routes and http["path"] == "/healthz"
        assert http["port"] in ports
    args = container["args"]
    assert ports[http["port"]] == int(args[args.index("--port") + 1])


def test_service_selects_the_deployment_pods():
    service = objects("Service")["faultgraph"]["spec"]
    deployment = objects("Deployment")["faultgraph"]["spec"]
    labels = deployment["template"]["metadata"]["labels"]
    assert service["selector"].items() <= labels.items()
    assert deployment["selector"]["matchLabels"].items() <= labels.items()
    [container] = deployment["template"]["spec"]["containers"]
    assert {p["targetPort"] for p in service["ports"]} <= {p["name"] for p in container["ports"]}


def test_containers_run_real_commands_with_real_secrets_and_config():
    secrets = {name: set(doc.get("stringData", {})) | set(doc.get("data", {})) for name, doc in objects("Secret").items()}
    configmaps = objects("ConfigMap")
    for where, spec in pod_specs().items():
        volumes = {volume["name"]: volume for volume in spec.get("volumes", [])}
        for container in spec["containers"]:
            check_cli(container["args"])
            for env in container.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    assert ref["key"] in secrets.get(ref["name"], set()), f"{where}: secret {ref}"
            for mount in container.get("volumeMounts", []):
                assert mount["name"] in volumes, f"{where}: mount of undeclared volume {mount['name']}"
        for volume in volumes.values():
            if "configMap" in volume:
                assert volume["configMap"]["name"] in configmaps, f"{where}: config map {volume['configMap']['name']}"


def test_agent_daemonset_reads_the_kernel_log_and_its_config():
    spec = objects("DaemonSet")["faultgraph-agent"]["spec"]["template"]["spec"]
    [container] = spec["containers"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes[mounts["/dev/kmsg"]]["hostPath"]["path"] == "/dev/kmsg"
    config_path = Path(container["args"][container["args"].index("--config") + 1])
    config_volume = volumes[mounts[str(config_path.parent)]]
    config = configmaps_text(config_volume["configMap"]["name"], config_path.name)
    agent_settings_are_known(config, "ConfigMap faultgraph-agent")
    values = tomllib.loads(config)
    assert values["kmsg"] is True
    for pattern in values["files"]:
        assert any(pattern.startswith(path + "/") for path in mounts), f"agent follows {pattern}, which is not mounted"
    assert values["state_dir"] in mounts


def configmaps_text(name: str, key: str) -> str:
    return objects("ConfigMap")[name]["data"][key]


def test_placeholder_database_url_is_one_the_service_accepts():
    url = sa.engine.make_url(objects("Secret")["faultgraph-db"]["stringData"]["url"])
    assert url.get_backend_name() == "postgresql"


# --- Dockerfile ------------------------------------------------------------------------

def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def test_dockerfile_copies_what_exists_and_runs_the_cli():
    import json

    instructions = dockerfile_instructions()
    for op, rest in instructions:
        if op == "COPY" and not rest.startswith("--from"):
            *sources, _ = rest.split()
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
    entrypoint = json.loads(dict(instructions)["ENTRYPOINT"])
    command = json.loads(dict(instructions)["CMD"])
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert entrypoint == ["faultgraph"] and "faultgraph" in scripts
    check_cli(command)


def test_every_image_reference_is_the_one_image():
    images = {c["image"] for spec in pod_specs().values() for c in spec["containers"]}
    compose = yaml.safe_load(COMPOSE.read_text())["services"]
    built = {service["image"] for service in compose.values() if "build" in service}
    assert images == built == {"faultgraph:0.1.0"}


# --- docker compose --------------------------------------------------------------------

def faultgraph_commands(script: str) -> list[list[str]]:
    """The arguments of each `faultgraph …` line of a shell script, up to a redirection."""
    found = []
    for line in script.splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0] == "faultgraph":
            args = []
            for word in words[1:]:
                if word.startswith((">", "<", "|", "&", ";")):
                    break
                args.append(word)
            found.append(args)
    return found


def test_compose_services_refer_to_things_that_exist():
    compose = yaml.safe_load(COMPOSE.read_text())
    services, volumes = compose["services"], set(compose.get("volumes") or {})
    assert {"postgres", "faultgraph", "prometheus", "grafana"} <= set(services)
    for name, service in services.items():
        assert "image" in service or "build" in service, name
        if "build" in service:
            context = (COMPOSE.parent / service["build"]["context"]).resolve()
            assert (context / service["build"]["dockerfile"]).is_file(), f"{name}: build file"
        for dependency in service.get("depends_on", {}):
            assert dependency in services, f"{name} depends on unknown {dependency}"
        for mount in service.get("volumes", []):
            source = mount.split(":", 1)[0]
            if source.startswith("."):
                assert (COMPOSE.parent / source).exists(), f"{name}: mounts missing {source}"
            else:
                assert source in volumes, f"{name}: undeclared volume {source}"
        database = service.get("environment", {}).get("FAULTGRAPH_DB")
        if database:
            url = sa.engine.make_url(database.replace("${FAULTGRAPH_DB_PASSWORD:-faultgraph}", "x"))
            assert url.get_backend_name() == "postgresql" and url.host in services, f"{name}: {database}"


def test_compose_faultgraph_commands_are_real():
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    checked = 0
    for service in services.values():
        if service.get("image") != "faultgraph:0.1.0":
            continue
        command = service.get("command")
        if service.get("entrypoint") == ["sh", "-c"]:
            invocations = faultgraph_commands(command[0])
        else:
            invocations = [command]
        for argv in invocations:
            check_cli(argv)
            checked += 1
    assert checked >= 3


def test_prometheus_and_grafana_point_at_compose_services():
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    prometheus = yaml.safe_load((COMPOSE.parent / "prometheus.yml").read_text())
    serve = services["faultgraph"]["command"]
    port = serve[serve.index("--port") + 1]
    [job] = prometheus["scrape_configs"]
    assert job["static_configs"][0]["targets"] == [f"faultgraph:{port}"]
    token_file = Path(job["authorization"]["credentials_file"])
    assert any(m.split(":")[1] == str(token_file.parent) for m in services["prometheus"]["volumes"])
    init = " ".join(services["faultgraph-init"]["command"])
    assert f"> {token_file}" in init
    datasources = yaml.safe_load((COMPOSE.parent / "grafana" / "datasources.yml").read_text())["datasources"]
    host = datasources[0]["url"].split("//", 1)[1].split(":")[0]
    assert host in services


# --- systemd ---------------------------------------------------------------------------

def parse_unit(path: Path) -> dict[str, dict[str, list[str]]]:
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, value = line.split("=", 1)
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def installed_example(path: str) -> Path:
    """/etc/faultgraph/X is installed from deploy/systemd/X."""
    assert path.startswith("/etc/faultgraph/"), path
    return DEPLOY / "systemd" / Path(path).name


@pytest.mark.parametrize("unit", UNITS, ids=lambda p: p.name)
def test_unit_runs_a_real_command_with_files_that_ship(unit):
    sections = parse_unit(unit)
    assert {"Unit", "Service", "Install"} <= set(sections)
    [exec_start] = sections["Service"]["ExecStart"]
    program, *argv = shlex.split(exec_start)
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert Path(program).name in scripts and Path(program).is_absolute(), program
    check_cli(argv)
    for env_file in sections["Service"].get("EnvironmentFile", []):
        example = installed_example(env_file.lstrip("-"))
        assert example.is_file(), f"{unit.name}: {env_file} has no example in deploy/systemd"
        for line in example.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                key, value = line.split("=", 1)
                assert key.startswith("FAULTGRAPH_"), f"{example.name}: {key}"
                if key == "FAULTGRAPH_DB":
                    sa.engine.make_url(value)
    if "--config" in argv:
        example = installed_example(argv[argv.index("--config") + 1])
        agent_settings_are_known(example.read_text(), example.name)
