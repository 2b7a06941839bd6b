"""How a client reaches the service over TLS: the flags the host agent and the on-call CLI share.

Here, below both, so the agent (`faultgraph agent`, light) and the CLI (`service/client.py`)
spell `--ca-file/--cert/--key` and their variables once without the agent importing the
service package.
"""

from pathlib import Path
from typing import Annotated

import typer

CaFileOption = Annotated[Path | None, typer.Option(
    "--ca-file", envvar="FAULTGRAPH_CA_FILE", help="CA certificate(s) to verify an https:// server with; default the system's.")]
CertOption = Annotated[Path | None, typer.Option(
    "--cert", envvar="FAULTGRAPH_CERT", help="Client certificate for mutual TLS.")]
KeyOption = Annotated[Path | None, typer.Option(
    "--key", envvar="FAULTGRAPH_KEY", help="Its private key, if not in the --cert file.")]
