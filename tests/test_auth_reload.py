"""The token copy each server keeps (service/auth/service.py `Authenticator`): during a storm a
stale copy is reloaded in the background while requests go on, yet a token created by
another process (a replica, `faultgraph token create`) is accepted on its first use, and a
revoked one is refused once the reload is done. In-process, on a real DuckDB file."""

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from faultgraph.service.app import create_app
from faultgraph.service.auth import service as tokens
from faultgraph.service.auth.models import tokens as token_table
from faultgraph.service.config import Settings


@pytest.fixture
def client(tmp_path) -> Iterator[TestClient]:
    app = create_app(Settings(db_url=f"duckdb:///{tmp_path / 'auth.duckdb'}"))
    with TestClient(app) as client:
        with app.state.engine.begin() as conn:  # tokens exist: the server no longer runs open
            tokens.create(conn, role="admin", name="first")
        app.state.auth.reload()
        app.state.auth._ttl = 0.0  # every request finds the copy stale, as after each TTL
        yield client


def made_elsewhere(client: TestClient, role: str) -> tuple[str, str]:
    """A token written straight into the store, as another process would."""
    with client.app.state.engine.begin() as conn:
        token, info = tokens.create(conn, role=role, name="elsewhere")
    return token, info.id


def test_a_token_made_by_another_process_works_on_first_use(client):
    token, _ = made_elsewhere(client, "reader")
    answer = client.get("/v1/incidents", headers={"authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.text


def test_a_revoked_token_is_refused_once_the_background_reload_is_done(client):
    token, token_id = made_elsewhere(client, "reader")
    headers = {"authorization": f"Bearer {token}"}
    assert client.get("/v1/incidents", headers=headers).status_code == 200
    with client.app.state.engine.begin() as conn:
        conn.execute(sa.update(token_table).where(token_table.c.id == token_id)
                     .values(revoked=datetime.now(UTC).replace(tzinfo=None)))
    deadline = time.monotonic() + 10  # the next requests start a reload and go on meanwhile
    while client.get("/v1/incidents", headers=headers).status_code == 200:
        assert time.monotonic() < deadline, "a revoked token was still accepted 10 s later"
        time.sleep(0.05)
    assert client.get("/v1/incidents", headers=headers).status_code == 401


def test_an_unknown_token_is_still_refused(client):
    answer = client.get("/v1/incidents", headers={"authorization": "Bearer fg_000000000000_nope"})
    assert answer.status_code == 401
