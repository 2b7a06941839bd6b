"""deploy/ runs faultgraph the hardened way: HTTPS from a certificate Secret whose keys the
service really reads, a non-root user, a read-only root filesystem."""

import tomllib
from pathlib import Path

import yaml
from test_deploy import COMPOSE, DEPLOY, dockerfile_instructions, objects, parse_unit


def test_the_image_runs_as_an_unprivileged_user():
    users = [rest for op, rest in dockerfile_instructions() if op == "USER"]
    assert users and users[-1] not in ("0", "root")


def test_kubernetes_service_serves_https_from_the_tls_secret():
    spec = objects("Deployment")["faultgraph"]["spec"]["template"]["spec"]
    [container] = spec["containers"]
    assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] != 0
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    env = {item["name"]: item.get("value") for item in container["env"]}
    volumes = {volume["name"]: volume for volume in spec["volumes"]}
    mounts = {mount["mountPath"]: mount["name"] for mount in container["volumeMounts"]}
    secret = objects("Secret")["faultgraph-tls"]
    assert secret["type"] == "kubernetes.io/tls"  # what cert-manager writes
    for name in ("FAULTGRAPH_TLS_CERT", "FAULTGRAPH_TLS_KEY"):
        path = Path(env[name])
        volume = volumes[mounts[str(path.parent)]]
        assert volume["secret"]["secretName"] == "faultgraph-tls" and path.name in secret["stringData"]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["scheme"] == "HTTPS"


def test_agents_trust_the_services_ca():
    config = yaml.safe_load((DEPLOY / "kubernetes" / "configmap.yaml").read_text())["data"]["agent.toml"]
    values = tomllib.loads(config)
    assert values["url"].startswith("https://")
    spec = objects("DaemonSet")["faultgraph-agent"]["spec"]["template"]["spec"]
    [container] = spec["containers"]
    mounts = {mount["mountPath"]: mount["name"] for mount in container["volumeMounts"]}
    ca = Path(values["ca_file"])
    volume = {v["name"]: v for v in spec["volumes"]}[mounts[str(ca.parent)]]
    assert volume["secret"]["secretName"] == "faultgraph-tls"
    assert [item["path"] for item in volume["secret"]["items"]] == [ca.name]  # the CA only, not the key


def test_compose_runs_faultgraph_read_only_and_not_as_root():
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    ours = {name: service for name, service in services.items() if service.get("image") == "faultgraph:0.1.0"}
    assert len(ours) >= 2
    for name, service in ours.items():
        assert service.get("read_only") is True, name
        assert str(service.get("user", "10001")) not in ("0", "root"), name


def test_systemd_service_loads_its_tls_files_as_credentials():
    sections = parse_unit(DEPLOY / "systemd" / "faultgraph.service")
    credentials = {entry.split(":", 1)[0] for entry in sections["Service"]["LoadCredential"]}
    env = dict(line.split("=", 1) for line in (DEPLOY / "systemd" / "faultgraph.env").read_text().splitlines()
               if line and not line.startswith("#"))
    for name in ("FAULTGRAPH_TLS_CERT", "FAULTGRAPH_TLS_KEY"):
        directory, credential = env[name].rsplit("/", 1)
        assert directory == "/run/credentials/faultgraph.service" and credential in credentials
