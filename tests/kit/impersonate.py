"""An HTTPS proxy on 127.0.0.1 that answers for one host name from a folder of files.

Some peers hard-code an index host (uv's ``--torch-backend`` asks PyTorch's download host and
nothing else). ``impersonate(root, host, workdir)`` starts a proxy that accepts ``CONNECT`` for
``host``, speaks TLS with a certificate for it signed by a throwaway CA, and serves ``root``
(static files, ``index.html`` for folders). Point the peer at it with ``HTTPS_PROXY`` and trust
the CA with ``SSL_CERT_FILE``; every other host is refused. Nothing leaves the machine.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def ca_and_cert(folder: Path, host: str) -> tuple[Path, Path, Path]:
    """A throwaway CA and a certificate for ``host`` it signed: (ca.pem, cert.pem, key.pem)."""
    folder.mkdir(parents=True, exist_ok=True)
    ca, ca_key = folder / "ca.pem", folder / "ca.key"
    cert, key, csr = folder / "cert.pem", folder / "key.pem", folder / "cert.csr"
    ext = folder / "ext.cnf"
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        "-subj", "/CN=fitwheel test CA", "-keyout", str(ca_key), "-out", str(ca),
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={host}",
        "-keyout", str(key), "-out", str(csr),
    )  # fmt: skip
    ext.write_text(
        f"subjectAltName=DNS:{host}\nbasicConstraints=CA:FALSE\n"
        "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
    )
    _openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
        "-CAcreateserial", "-days", "2", "-out", str(cert), "-extfile", str(ext),
    )  # fmt: skip
    return ca, cert, key


class _Files(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Proxy(http.server.BaseHTTPRequestHandler):
    host: str
    context: ssl.SSLContext
    root: Path
    #: (method, host, path) of every request seen through the tunnel
    seen: list[str]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_CONNECT(self) -> None:
        name, _, _port = self.path.partition(":")
        if name != self.host:
            self.send_error(403, f"this proxy answers for {self.host} only")
            return
        self.send_response(200, "Connection established")
        self.end_headers()
        try:
            tls = self.context.wrap_socket(self.connection, server_side=True)
        except (ssl.SSLError, OSError):
            self.close_connection = True
            return
        seen = self.seen

        class Files(_Files):
            def parse_request(self) -> bool:
                ok = super().parse_request()
                seen.append(f"{self.command} {self.path}")
                return ok

        handler = functools.partial(Files, directory=str(self.root))
        with contextlib.suppress(OSError, ssl.SSLError):
            handler(tls, self.client_address, self.server)
        self.close_connection = True


@contextlib.contextmanager
def impersonate(root: Path, host: str, workdir: Path) -> Iterator[tuple[str, Path, list[str]]]:
    """Yields (proxy URL, CA bundle, requests seen)."""
    ca, cert, key = ca_and_cert(workdir, host)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    seen: list[str] = []
    handler = type(
        "Proxy", (_Proxy,), {"host": host, "context": context, "root": root, "seen": seen}
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", ca, seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


__all__ = ["ca_and_cert", "impersonate"]
