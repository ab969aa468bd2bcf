"""Test kit for the publishing tests: real wheels built with zipfile, a loopback HTTP server, a
loopback nginx, and fresh virtual environments."""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import http.server
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

VENV_BIN = Path(sys.executable).parent
UV = VENV_BIN / "uv"
SCHEMA = "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json"

#: provider tables that uv 0.13.8 answers with its own built-in providers
UV_NVIDIA = {
    "requires": ["nvidia-variant-provider"],
    "plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin",
}


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(
    folder: Path,
    name: str = "demo_pkg",
    version: str = "1.0",
    *,
    files: Mapping[str, bytes] | None = None,
    label: str | None = None,
    variant_json: Mapping[str, Any] | None = None,
    requires_python: str | None = None,
    compression: int = zipfile.ZIP_DEFLATED,
    tag: str = "py3-none-any",
    record_content: Mapping[str, bytes] | None = None,
) -> Path:
    """A valid wheel; ``variant_json`` (a dict) is written to dist-info when given."""
    dist_info = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    if requires_python:
        meta += f"Requires-Python: {requires_python}\n"
    members: dict[str, bytes] = dict(
        files or {f"{name}/__init__.py": f"BUILD = {label or 'plain'!r}\n".encode()}
    )
    members[f"{dist_info}/METADATA"] = meta.encode()
    members[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: publish_kit\nRoot-Is-Purelib: true\nTag: {tag}\n"
    ).encode()
    if variant_json is not None:
        members[f"{dist_info}/variant.json"] = json.dumps(variant_json, indent=4).encode()
    claimed = {**members, **(record_content or {})}
    lines = [f"{k},{record_hash(v)},{len(v)}" for k, v in claimed.items()]
    lines.append(f"{dist_info}/RECORD,,")
    members[f"{dist_info}/RECORD"] = ("\n".join(lines) + "\n").encode()
    stem = f"{name}-{version}-{tag}" + (f"-{label}" if label else "")
    path = folder / f"{stem}.whl"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression) as zf:
        for member, data in members.items():
            zf.writestr(member, data)
    return path


def variant_doc(
    label: str,
    props: Mapping[str, Mapping[str, list[str]]],
    providers: Mapping[str, Any],
    namespaces: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "$schema": SCHEMA,
        "default-priorities": {"namespace": namespaces or list(providers)},
        "providers": dict(providers),
        "variants": {label: dict(props)},
    }


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {info.filename: zf.read(info) for info in zf.infolist()}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serve_static(root: Path) -> Iterator[str]:
    """Serve ``root`` on 127.0.0.1 with http.server; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


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
def serve_nginx(root: Path, workdir: Path, *, negotiate: bool) -> Iterator[str]:
    """Run nginx on 127.0.0.1 over ``root``; with ``negotiate``, PEP 691 content negotiation."""
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


def fresh_venv(path: Path) -> Path:
    """A new virtual environment (made by uv: fast, no pip inside); returns its python."""
    subprocess.run([str(UV), "venv", "-q", "--python", sys.executable, str(path)], check=True)
    return path / "bin" / "python"


def installed_build(python: Path, module: str) -> str:
    out = subprocess.run(
        [str(python), "-c", f"import {module}; print({module}.BUILD)"],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def offline_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "UV_NO_CACHE": "1",
            "UV_OFFLINE": "0",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_INPUT": "1",
        }
    )
    env.update(extra)
    return env
