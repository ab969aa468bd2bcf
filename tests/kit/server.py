"""One loopback HTTP server for the tests: 127.0.0.1 only, a deep accept queue, serving a folder
statically or misbehaving on purpose (forced statuses, flaky paths, no ranges, basic auth, TLS,
and the hostile ones: bodies trickled a byte at a time, requests never answered, long
Retry-After waits, encodings nobody asked for); and a loopback nginx for the publishing tests."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import pwd
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class ServerState:
    root: Path
    #: path -> status code forced for every request to it
    fail: dict[str, int] = field(default_factory=dict)
    #: path -> number of failures (503) before it succeeds
    flaky: dict[str, int] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    #: a plain static file server (http.server's: listings, guessed types), no tricks
    static: bool = False
    prefer_json: bool = True
    ranges: bool = True
    credentials: tuple[str, str] | None = None
    cache_control: str | None = None
    #: path -> seconds between the pieces of its body (the headers come at once)
    trickle: dict[str, float] = field(default_factory=dict)
    #: the size of each trickled piece
    trickle_bytes: int = 1
    #: paths whose requests are read and never answered
    stall: set[str] = field(default_factory=set)
    #: path -> the Retry-After value of the 503 that every request to it gets
    retry_after: dict[str, str] = field(default_factory=dict)
    #: path -> a Content-Encoding header sent with the file's bytes as they are on disk
    content_encoding: dict[str, str] = field(default_factory=dict)
    #: seconds every request is held before it is answered (so that concurrent ones overlap)
    hold: float = 0.0
    #: the most requests being answered at once, and how many are now
    peak: int = 0
    in_flight: int = 0
    counting: threading.Lock = field(default_factory=threading.Lock)
    #: set when the server stops: ends the stalls and trickles
    stopping: threading.Event = field(default_factory=threading.Event)


class _Handler(SimpleHTTPRequestHandler):
    server_version = "fitwheel-tests"
    state: ServerState

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, directory=str(self.state.root), **kwargs)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _resolve(self) -> tuple[Path, str] | None:
        # the path percent-decoded, as web servers read it (``%2B`` is ``+``; a ``+`` stays)
        path = urllib.parse.unquote(self.path.split("?", 1)[0].split("#", 1)[0])
        target = (self.state.root / path.lstrip("/")).resolve()
        if not str(target).startswith(str(self.state.root.resolve())):
            return None
        if target.is_dir():
            accept = self.headers.get("Accept", "")
            if (
                self.state.prefer_json
                and "vnd.pypi.simple.v1+json" in accept
                and (target / "index.json").exists()
            ):
                return target / "index.json", "application/vnd.pypi.simple.v1+json"
            if (target / "index.html").exists():
                return target / "index.html", "text/html"
            return None
        if target.is_file():
            ctype = "application/json" if target.suffix == ".json" else "application/octet-stream"
            return target, ctype
        return None

    def _serve(self, body_wanted: bool) -> None:
        state = self.state
        with state.counting:
            state.in_flight += 1
            state.peak = max(state.peak, state.in_flight)
        try:
            if state.hold:
                state.stopping.wait(state.hold)
            self._answer(body_wanted)
        finally:
            with state.counting:
                state.in_flight -= 1

    def _answer(self, body_wanted: bool) -> None:
        state = self.state
        path = self.path.split("?", 1)[0]
        state.requests.append((self.command, path, {k.lower(): v for k, v in self.headers.items()}))
        if state.credentials is not None:
            expected = base64.b64encode(":".join(state.credentials).encode()).decode()
            if self.headers.get("Authorization") != f"Basic {expected}":
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="index"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        if path in state.stall:
            state.stopping.wait()
            return
        if path in state.retry_after:
            self.send_response(503)
            self.send_header("Retry-After", state.retry_after[path])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if path in state.fail:
            self.send_response(state.fail[path])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if state.flaky.get(path, 0) > 0:
            state.flaky[path] -= 1
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        found = self._resolve()
        if found is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        file, ctype = found
        data = file.read_bytes()
        etag = '"' + hashlib.sha256(data).hexdigest()[:16] + '"'
        if self.headers.get("If-None-Match") == etag:
            self.send_response(304)
            self.send_header("ETag", etag)
            self.end_headers()
            return
        status = 200
        rng = self.headers.get("Range")
        if rng and state.ranges and rng.startswith("bytes="):
            start_s, _, end_s = rng[6:].partition("-")
            start, end = int(start_s), min(int(end_s or len(data) - 1), len(data) - 1)
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
            data = data[start : end + 1]
            status = 206
        else:
            self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("ETag", etag)
        if state.ranges:
            self.send_header("Accept-Ranges", "bytes")
        if state.cache_control:
            self.send_header("Cache-Control", state.cache_control)
        if path in state.content_encoding:
            self.send_header("Content-Encoding", state.content_encoding[path])
        self.end_headers()
        if body_wanted and path in state.trickle:
            self._trickle(data, state.trickle[path])
        elif body_wanted:
            self.wfile.write(data)

    def _trickle(self, data: bytes, interval: float) -> None:
        step = self.state.trickle_bytes
        for offset in range(0, len(data), step):
            if self.state.stopping.wait(interval):
                return
            try:
                self.wfile.write(data[offset : offset + step])
                self.wfile.flush()
            except OSError:
                return

    def do_GET(self) -> None:
        if self.state.static:
            super().do_GET()
        else:
            self._serve(True)

    def do_HEAD(self) -> None:
        if self.state.static:
            super().do_HEAD()
        else:
            self._serve(False)


def self_signed_cert(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (made with the openssl command)."""
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


class _Server(ThreadingHTTPServer):
    # socketserver's default backlog of 5 drops the SYNs of a client that opens many
    # connections at once (uv does); each dropped one costs a 1 s retransmit
    request_queue_size = 256
    daemon_threads = True


@contextlib.contextmanager
def serve(
    root: Path, tls: tuple[Path, Path] | None = None, port: int = 0, **options: Any
) -> Iterator[tuple[str, ServerState]]:
    """Serve ``root`` on 127.0.0.1 (``port``, else a free one), over TLS when ``tls`` gives
    (cert, key); yields (base URL, state). ``options`` set the ServerState: the ways to
    misbehave (``fail``, ``flaky``, ``ranges``, ``credentials``...) or ``static``."""
    state = ServerState(root=root, **options)
    handler = type("Handler", (_Handler,), {"state": state})
    server = _Server(("127.0.0.1", port), handler)
    scheme = "http"
    if tls is not None:
        import ssl

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(tls[0]), str(tls[1]))
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}", state
    finally:
        state.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join()


@contextlib.contextmanager
def serve_static(root: Path) -> Iterator[str]:
    """Serve ``root`` as plain static files (as a web server would) on 127.0.0.1; yields the
    base URL."""
    with serve(root, static=True) as (url, _state):
        yield url


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def nginx_binary() -> str | None:
    found = shutil.which("nginx")
    if found:
        return found
    return "/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None


NGINX_SERVER_BLOCK = """
    map $http_accept $simple_index {{
        default index.html;
        "~application/vnd\\.pypi\\.simple\\.v1\\+json" index.json;
    }}
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location /simple/ {{
            index $simple_index;
            add_header Vary Accept;
            types {{ application/vnd.pypi.simple.v1+json json; text/html html; }}
        }}
        location /files/ {{ }}
    }}
"""


@contextlib.contextmanager
def serve_nginx(
    root: Path, workdir: Path, *, negotiate: bool, max_age: int | None = None
) -> Iterator[str]:
    """Run nginx on 127.0.0.1 over ``root``; with ``negotiate``, PEP 691 content negotiation;
    with ``max_age``, every answer says ``Cache-Control: max-age=N`` (as public indexes do for
    their pages)."""
    binary = nginx_binary()
    assert binary is not None
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    if negotiate:
        server = NGINX_SERVER_BLOCK.format(port=port, root=root)
    else:
        server = (
            f"server {{ listen 127.0.0.1:{port}; root {root}; location / {{ index index.html; }} }}"
        )
    if max_age is not None:
        server = server.replace("listen 127.0.0.1", f"expires {max_age}s; listen 127.0.0.1", 1)
    conf = workdir / "nginx.conf"
    # Started as root, nginx would drop its workers to "nobody", who cannot read a private
    # temporary folder; keep them as the user running the tests.
    user = f"user {pwd.getpwuid(os.geteuid()).pw_name};" if os.geteuid() == 0 else ""
    conf.write_text(
        f"""
{user}
daemon off;
worker_processes 1;
pid {workdir}/nginx.pid;
error_log {workdir}/error.log;
events {{ worker_connections 64; }}
http {{
    types {{ text/html html; application/json json; application/octet-stream whl; }}
    default_type application/octet-stream;
    access_log off;
    client_body_temp_path {workdir}/body;
    proxy_temp_path {workdir}/proxy;
    fastcgi_temp_path {workdir}/fastcgi;
    uwsgi_temp_path {workdir}/uwsgi;
    scgi_temp_path {workdir}/scgi;
    {server}
}}
"""
    )
    proc = subprocess.Popen(
        [binary, "-c", str(conf), "-p", str(workdir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise RuntimeError(f"nginx did not start: {err}")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def gzip_bomb(size: int) -> bytes:
    """A gzip stream of about ``size`` zero bytes (rounded up to MiB) in about ``size / 1000``
    bytes, made in milliseconds: one fully flushed block of a MiB of zeros, repeated. It has no
    trailer (nothing reads that far)."""
    import zlib

    zeros = bytes(1 << 20)
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = packer.compress(zeros) + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(zeros) + packer.flush(zlib.Z_FULL_FLUSH)
    return first + block * max(0, -(-size // (1 << 20)) - 1)
