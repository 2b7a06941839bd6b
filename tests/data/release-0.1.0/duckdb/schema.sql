CREATE TABLE engine_state("name" VARCHAR, last_seq BIGINT NOT NULL, PRIMARY KEY("name"));
CREATE TABLE events(id VARCHAR, seq BIGINT NOT NULL, "time" TIMESTAMP NOT NULL, received TIMESTAMP NOT NULL, host VARCHAR NOT NULL, kind VARCHAR NOT NULL, component VARCHAR, severity VARCHAR, job VARCHAR, rank INTEGER, message VARCHAR, attrs JSON, PRIMARY KEY(id));
CREATE TABLE incidents(id VARCHAR, number INTEGER NOT NULL, "scope" VARCHAR NOT NULL, job VARCHAR, status VARCHAR NOT NULL, status_set_by_oncall BOOLEAN NOT NULL, opened TIMESTAMP NOT NULL, closed TIMESTAMP, updated TIMESTAMP NOT NULL, "start" TIMESTAMP NOT NULL, "last" TIMESTAMP NOT NULL, symptoms INTEGER NOT NULL, hosts INTEGER NOT NULL, planned BOOLEAN NOT NULL, root_cause JSON NOT NULL, confirmed JSON, category VARCHAR NOT NULL, cause VARCHAR NOT NULL, candidates JSON NOT NULL, "action" JSON NOT NULL, gpus INTEGER NOT NULL, gpu_hours_lost FLOAT NOT NULL, failed_at TIMESTAMP NOT NULL, interruption_end TIMESTAMP, notes JSON NOT NULL, topology_version INTEGER, PRIMARY KEY(id), UNIQUE(number));
CREATE TABLE incident_events(incident_id VARCHAR NOT NULL, event_id VARCHAR NOT NULL);
CREATE TABLE jobs(id VARCHAR, "start" TIMESTAMP NOT NULL, "end" TIMESTAMP, state VARCHAR NOT NULL, state_time TIMESTAMP NOT NULL, registered TIMESTAMP NOT NULL, gpus_per_host INTEGER, hosts JSON, ranks JSON, parallelism JSON, topology_version INTEGER, attrs JSON, PRIMARY KEY(id));
CREATE TABLE schema_info("version" INTEGER NOT NULL);
CREATE TABLE tokens(id VARCHAR, "name" VARCHAR, "role" VARCHAR NOT NULL, host_pattern VARCHAR, secret_sha256 VARCHAR NOT NULL, created TIMESTAMP NOT NULL, revoked TIMESTAMP, PRIMARY KEY(id));
CREATE TABLE topologies("version" INTEGER, created TIMESTAMP NOT NULL, body BLOB NOT NULL, components INTEGER NOT NULL, links INTEGER NOT NULL, hosts INTEGER NOT NULL, gpus INTEGER NOT NULL, PRIMARY KEY("version"));
CREATE INDEX ix_incident_events_incident_id ON incident_events(incident_id);

