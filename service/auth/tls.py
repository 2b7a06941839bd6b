"""HTTPS for `faultgraph serve`, and the client certificate's names for the authenticator.

With a client CA the server requires a certificate the CA signed (mutual TLS): a host
without one never gets as far as HTTP. The names in a verified client certificate (its
common name and DNS subject-alternative names) go to every request on that connection, so
a token bound to a certificate name (`token create --cert-name node0042`) is only accepted
from that host, and the ingest limits can tell hosts apart that share a token.
"""

import asyncio
import ssl
from pathlib import Path
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

# Key of the connection's verified certificate names in each request's `scope["state"]`.
PEER_NAMES = "tls_peer_names"


def server_context(cert: Path, key: Path | None = None, client_ca: Path | None = None) -> ssl.SSLContext:
    """The server's TLS context (TLS 1.2 or newer); with `client_ca`, client certificates
    signed by it are required. Raises OSError/ssl.SSLError naming a file that will not load."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise OSError(f"certificate {cert}{f' with key {key}' if key else ''}: {exc.strerror or exc}") from None
    if client_ca is not None:
        try:
            context.load_verify_locations(cafile=client_ca)
        except (OSError, ssl.SSLError) as exc:
            raise OSError(f"client CA {client_ca}: {exc.strerror or exc}") from None
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def peer_names(certificate: dict[str, Any] | None) -> frozenset[str]:
    """A verified certificate's names (`getpeercert()`'s dict): CN and DNS SANs."""
    if not certificate:
        return frozenset()
    names = {value for rdn in certificate.get("subject", ()) for key, value in rdn if key == "commonName"}
    names |= {value for kind, value in certificate.get("subjectAltName", ()) if kind == "DNS"}
    return frozenset(names)


# uvicorn declares AutoHTTPProtocol as a variable (httptools or h11 picked at import): mypy
# cannot take it as a base class.
class PeerNameProtocol(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
    """uvicorn's HTTP protocol, plus the client certificate's names in each request's
    state (uvicorn copies its `app_state` into every request's `scope["state"]`)."""

    app_state: dict[str, Any]  # set by uvicorn's protocol (its base is untyped here: see above)

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)
        names = peer_names(transport.get_extra_info("peercert"))
        if names:
            self.app_state = {**self.app_state, PEER_NAMES: names}
