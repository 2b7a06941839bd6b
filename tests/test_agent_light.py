"""`faultgraph agent` runs on every GPU node: it must start without the server stack."""

import subprocess
import sys

SERVER_STACK = ("fastapi", "starlette", "sqlalchemy", "duckdb", "pyarrow", "networkx", "uvicorn", "psycopg")

PROBE = """
import sys
from faultgraph.service.entry import main
sys.argv = ["faultgraph", "agent", "--help"]
try:
    main()
except SystemExit:
    pass
print("LOADED", " ".join(sorted({name.split(".")[0] for name in sys.modules})))
"""


def test_agent_help_loads_no_server_module():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Usage: faultgraph agent" in done.stdout
    loaded = set(done.stdout.rsplit("LOADED", 1)[1].split())
    assert not loaded & set(SERVER_STACK), f"the agent loaded {sorted(loaded & set(SERVER_STACK))}"


def test_every_other_command_still_has_the_full_cli():
    done = subprocess.run([sys.executable, "-c", PROBE.replace('"agent", "--help"', '"--help"')],
                          capture_output=True, text=True, timeout=60)
    assert "serve" in done.stdout and "agent" in done.stdout
