"""Runtime settings: one typed class for every `FAULTGRAPH_*` variable, read once.

Flags win over the environment (`Settings(db_url=…)`); the table in service/README.md is
rendered from this class (`faultgraph settings`), so the documentation cannot drift.
"""

from pathlib import Path

from platformdirs import user_data_dir
from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

MiB = 1024 * 1024


def default_db_url() -> str:
    """A DuckDB file in the user's data directory, so `faultgraph serve` needs no flags."""
    path = Path(user_data_dir("faultgraph")) / "faultgraph.duckdb"
    return f"duckdb:///{path}"


def _env(name: str) -> AliasChoices:
    """Accept the variable's documented name and the field's own name (flags, tests)."""
    return AliasChoices(f"FAULTGRAPH_{name}", name.lower())


class Settings(BaseSettings):
    # An empty variable counts as unset, as `os.environ.get(...) or default` read it before.
    model_config = SettingsConfigDict(env_prefix="FAULTGRAPH_", frozen=True, populate_by_name=True,
                                      extra="ignore", env_ignore_empty=True)

    db_url: str = Field(default_factory=default_db_url, validation_alias=AliasChoices("FAULTGRAPH_DB", "db_url"),
                        description="Database URL (`duckdb:///path` or `postgresql://…`); default a DuckDB file "
                                    "in the user's data directory.")
    max_body_bytes: int = Field(16 * MiB, validation_alias=_env("MAX_BODY_BYTES"), gt=0, description="Largest request body, except PUT /v1/topology.")
    max_topology_bytes: int = Field(256 * MiB, validation_alias=_env("MAX_TOPOLOGY_BYTES"), gt=0,
                                    description="Largest PUT /v1/topology body (4,096 hosts are ~35 MB of JSON).")
    max_batch_events: int = Field(100_000, validation_alias=_env("MAX_BATCH_EVENTS"), gt=0, description="Most events in one posted batch (413 past it).")
    writer_queue_batches: int = Field(512, gt=0, validation_alias=_env("WRITER_QUEUE"),
                                      description="Batches waiting for the single writer; past this the service "
                                                  "answers 503 + Retry-After.")
    heartbeat_timeout_s: float = Field(60.0, gt=0, validation_alias=_env("HEARTBEAT_TIMEOUT"),
                                       description="Seconds of silence after which a host whose agent sent "
                                                   "heartbeats is marked lost.")
    group_commit_rows: int = Field(50_000, validation_alias=_env("GROUP_COMMIT_ROWS"), gt=0, description="Rows one group commit may gather from queued batches.")
    webhooks: str = Field("", validation_alias=_env("WEBHOOKS"), description="Alert targets, comma-separated: a URL (generic JSON), `slack=URL`, "
                                          "`pagerduty`.")
    pagerduty_routing_key: str | None = Field(None, validation_alias=_env("PAGERDUTY_ROUTING_KEY"), description="PagerDuty Events v2 routing key (needed by a "
                                                                "`pagerduty` target).")
    public_url: str | None = Field(None, validation_alias=_env("PUBLIC_URL"), description="The UI's address as on-call reaches it, for links in alerts.")
    alert_attempts: int = Field(6, validation_alias=_env("ALERT_ATTEMPTS"), ge=1, description="Deliveries tried per alert before it is dropped.")
    alert_backoff_seconds: float = Field(2.0, validation_alias=_env("ALERT_BACKOFF_SECONDS"), ge=0, description="First retry delay of an alert; doubles each try.")
    # Fair ingest (service/auth/limits.py), per caller (token × client certificate or address).
    ingest_rate_per_s: float = Field(20.0, gt=0, validation_alias=_env("INGEST_RATE"),
                                     description="Requests a second one caller may sustain on the ingest routes "
                                                 "(each INGEST_REQUEST_BYTES of body counts one more).")
    ingest_burst: float = Field(40.0, gt=0, validation_alias=_env("INGEST_BURST"),
                                description="Requests one caller may send at once before the rate applies.")
    ingest_request_bytes: int = Field(16 * 1024, gt=0, validation_alias=_env("INGEST_REQUEST_BYTES"),
                                      description="Body bytes that count as one more request.")
    ingest_queue_share: float = Field(0.05, gt=0, le=1, validation_alias=_env("INGEST_QUEUE_SHARE"),
                                      description="Share of the writer queue one caller may hold with requests in "
                                                  "flight (429 + Retry-After past it).")
    # A DuckDB store's own limits (service/store.py), set rather than left to DuckDB's defaults.
    duckdb_memory: str = Field("512MB", min_length=1, validation_alias=_env("DUCKDB_MEMORY"),
                               description="DuckDB's `memory_limit`; past it DuckDB spills to a temporary "
                                           "directory beside the file.")
    duckdb_threads: int = Field(2, gt=0, validation_alias=_env("DUCKDB_THREADS"), description="DuckDB's worker threads.")
    # Remediation (service/remediation/): nothing acts unless an operator opts in.
    remediate: str = Field("", validation_alias=_env("REMEDIATE"),
                           description="Actuators to run, comma-separated: `slurm`, `kubernetes`, `webhook` "
                                       "(empty: remediation off).")
    remediate_live: bool = Field(False, validation_alias=_env("REMEDIATE_LIVE"),
                                 description="Really act; otherwise every decision is recorded as a dry run.")
    remediate_max_hosts: int = Field(2, ge=0, validation_alias=_env("REMEDIATE_MAX_HOSTS"),
                                     description="Hosts drained per rolling hour at most.")
    remediate_max_percent: float = Field(1.0, ge=0, le=100, validation_alias=_env("REMEDIATE_MAX_PERCENT"),
                                         description="… and at most this % of the fleet's hosts per rolling hour.")
    remediate_tolerance_s: float = Field(300.0, ge=0, validation_alias=_env("REMEDIATE_TOLERANCE_S"),
                                         description="Seconds a component must stay faulty before its host is drained.")
    remediate_webhook: str | None = Field(None, validation_alias=_env("REMEDIATE_WEBHOOK"),
                                          description="URL the `webhook` actuator POSTs each drain and resume to.")
    remediate_page: str | None = Field(None, validation_alias=_env("REMEDIATE_PAGE"),
                                       description="URL POSTed when the cap stops an action (page a human).")
    remediate_taint: str = Field("faultgraph.io/faulty", min_length=1, validation_alias=_env("REMEDIATE_TAINT"),
                                 description="The Kubernetes taint key put on a drained node.")
    remediate_k8s_evict: bool = Field(False, validation_alias=_env("REMEDIATE_K8S_EVICT"),
                                      description="Also evict a drained node's pods (Eviction API, budgets honoured).")
    remediate_every_s: float = Field(10.0, ge=0, validation_alias=_env("REMEDIATE_EVERY_S"),
                                     description="Seconds between remediation passes at least (each after an engine pass).")


class ClientSettings(BaseSettings):
    """What the CLI reads from the environment to reach a server over TLS (service/client.py);
    `--ca-file/--cert/--key` win. The host agent reads the same three variables through its
    options (ingest/agent/connection.py) and does not import this module: pydantic-settings
    would cost `faultgraph agent` several times its command-line parser's import time."""

    model_config = SettingsConfigDict(frozen=True, populate_by_name=True, extra="ignore", env_ignore_empty=True)

    ca_file: Path | None = Field(default=None, validation_alias=_env("CA_FILE"),
                                 description="Clients: CA certificate(s) to verify an https:// server with; default the system's.")
    cert: Path | None = Field(default=None, validation_alias=_env("CERT"), description="Clients: certificate for mutual TLS.")
    key: Path | None = Field(default=None, validation_alias=_env("KEY"), description="Clients: its private key, if not in the certificate file.")


def settings_table() -> str:
    """The server's settings, then the clients', as a Markdown table (variable, default,
    meaning), for the README."""
    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    for name, field in (Settings.model_fields | ClientSettings.model_fields).items():
        alias = field.validation_alias
        assert isinstance(alias, AliasChoices), f"{name} needs its variable's name"
        variable = alias.choices[0]
        default = "user data dir" if field.default_factory else repr(field.default)
        rows.append(f"| `{variable}` | {default} | {field.description} |")
    return "\n".join(rows)
