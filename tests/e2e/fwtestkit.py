"""Test kit for the installer's tests: real wheels built with zipfile, static simple indexes and
loopback HTTP servers that can misbehave on purpose."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import json
import os
import shutil
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

FIXTURES = Path(__file__).resolve().parents[1] / "variants" / "data" / "published"


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def make_wheel(
    folder: Path,
    name: str,
    version: str,
    *,
    requires: Sequence[str] = (),
    files: Mapping[str, str | bytes] | None = None,
    label: str | None = None,
    variant: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    tag: str = "py3-none-any",
    requires_python: str | None = None,
    entry_points: Mapping[str, str] | None = None,
    extras: Mapping[str, Sequence[str]] | None = None,
    data_files: Mapping[str, str | bytes] | None = None,
    corrupt: bool = False,
    variant_doc: Mapping[str, Any] | None = None,
) -> Path:
    """Build ``{name}-{version}-{tag}[-{label}].whl`` in ``folder``; returns its path.

    ``files`` are paths under purelib (default: one module ``{name}/__init__.py``); ``variant``
    gives the label's properties (ns -> feature -> values) for ``dist-info/variant.json``;
    ``variant_doc`` (a published index document) supplies that file's providers and priorities.
    ``corrupt`` makes a RECORD hash wrong so that installing it fails half way."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = canonicalize_name(name).replace("-", "_")
    stem = f"{dist}-{version}-{tag}" + (f"-{label}" if label else "")
    path = folder / f"{stem}.whl"
    dist_info = f"{dist}-{version}.dist-info"
    content: dict[str, bytes] = {}
    for rel, body in (files or {f"{dist}/__init__.py": f"VERSION = {version!r}\n"}).items():
        content[rel] = body.encode() if isinstance(body, str) else body
    for rel, body in (data_files or {}).items():
        content[f"{dist}-{version}.data/{rel}"] = body.encode() if isinstance(body, str) else body
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if requires_python:
        meta.append(f"Requires-Python: {requires_python}")
    for extra, reqs in (extras or {}).items():
        meta.append(f"Provides-Extra: {extra}")
        for req in reqs:
            marker = f'extra == "{extra}"'
            meta.append(
                f"Requires-Dist: {req}; {marker}"
                if ";" not in req
                else f"Requires-Dist: {req} and {marker}"
            )
    meta += [f"Requires-Dist: {r}" for r in requires]
    content[f"{dist_info}/METADATA"] = ("\n".join(meta) + "\n\n").encode()
    content[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: fwtestkit\nRoot-Is-Purelib: true\nTag: {tag}\n"
    ).encode()
    if entry_points:
        lines = ["[console_scripts]"] + [f"{k} = {v}" for k, v in entry_points.items()]
        content[f"{dist_info}/entry_points.txt"] = ("\n".join(lines) + "\n").encode()
    if label is not None:
        props = dict(variant or {})
        doc = dict(variant_doc) if variant_doc is not None else variant_info_json({label: props})
        doc["variants"] = {label: props}
        content[f"{dist_info}/variant.json"] = json.dumps(doc, indent=4).encode()
    record = []
    for rel, body in content.items():
        digest = _record_hash(body)
        if corrupt and rel.endswith("__init__.py"):
            digest = _record_hash(body + b"tampered")
        record.append(f"{rel},{digest},{len(body)}")
    record.append(f"{dist_info}/RECORD,,")
    content[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel, body in content.items():
            zf.writestr(rel, body)
    return path


def variant_info_json(
    variants: Mapping[str, Mapping[str, Mapping[str, Sequence[str]]]],
) -> dict[str, Any]:
    """A current-form (PEP 850 v0.2.0) variants document for ``variants`` (label -> properties)."""
    namespaces = sorted({ns for props in variants.values() for ns in props})
    return {
        "$schema": "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json",
        "default-priorities": {"namespace": namespaces or ["none"]},
        "providers": {ns: {"requires": [f"{ns}-provider"]} for ns in namespaces or ["none"]},
        "variants": {
            label: {ns: {f: list(v) for f, v in fs.items()} for ns, fs in props.items()}
            for label, props in variants.items()
        },
    }


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_simple_index(
    wheels: Path, out: Path, *, metadata_files: bool = True, yanked: Mapping[str, str] | None = None
) -> Path:
    """A static simple index of the wheels and variants.json files in ``wheels``.

    Each project folder gets ``index.html`` (PEP 503) and ``index.json`` (PEP 691); files are
    copied to ``out/files``. ``yanked`` maps filenames to a yank reason."""
    yanked = dict(yanked or {})
    files_dir = out / "files"
    files_dir.mkdir(parents=True, exist_ok=True)
    projects: dict[str, list[Path]] = {}
    for entry in sorted(wheels.iterdir()):
        if entry.name.endswith(".whl"):
            key = canonicalize_name(entry.name.split("-", 1)[0])
        elif entry.name.endswith("-variants.json"):
            key = canonicalize_name(entry.name.rsplit("-", 2)[0])
        else:
            continue
        shutil.copy2(entry, files_dir / entry.name)
        projects.setdefault(key, []).append(entry)
    root_links = []
    for key, entries in projects.items():
        anchors = []
        json_files = []
        for entry in entries:
            digest = sha256_of(entry)
            url = f"../../files/{entry.name}"
            attrs = ""
            file_json: dict[str, Any] = {
                "filename": entry.name,
                "url": url,
                "hashes": {"sha256": digest},
            }
            if entry.name.endswith(".whl") and metadata_files:
                with zipfile.ZipFile(entry) as zf:
                    meta_name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
                    meta = zf.read(meta_name)
                (files_dir / f"{entry.name}.metadata").write_bytes(meta)
                meta_hash = hashlib.sha256(meta).hexdigest()
                attrs += f' data-core-metadata="sha256={meta_hash}"'
                file_json["core-metadata"] = {"sha256": meta_hash}
            if entry.name in yanked:
                attrs += f' data-yanked="{html.escape(yanked[entry.name])}"'
                file_json["yanked"] = yanked[entry.name] or True
            anchors.append(f'<a href="{url}#sha256={digest}"{attrs}>{entry.name}</a><br/>')
            json_files.append(file_json)
        project = out / "simple" / key
        project.mkdir(parents=True, exist_ok=True)
        (project / "index.html").write_text(
            "<!DOCTYPE html><html><body>\n" + "\n".join(anchors) + "\n</body></html>\n"
        )
        (project / "index.json").write_text(
            json.dumps({"meta": {"api-version": "1.1"}, "name": key, "files": json_files})
        )
        root_links.append(f'<a href="{key}/">{key}</a>')
    (out / "simple").mkdir(parents=True, exist_ok=True)
    (out / "simple" / "index.html").write_text(
        "<html><body>" + "".join(root_links) + "</body></html>"
    )
    return out / "simple"


@dataclass
class ServerState:
    root: Path
    #: path -> status code forced for every request to it
    fail: dict[str, int] = field(default_factory=dict)
    #: path -> number of failures (503) before it succeeds
    flaky: dict[str, int] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    prefer_json: bool = True
    ranges: bool = True
    credentials: tuple[str, str] | None = None
    cache_control: str | None = None


class _Handler(BaseHTTPRequestHandler):
    server_version = "fwtestkit"
    state: ServerState

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _resolve(self) -> tuple[Path, str] | None:
        path = self.path.split("?", 1)[0].split("#", 1)[0]
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
        self.end_headers()
        if body_wanted:
            self.wfile.write(data)

    def do_GET(self) -> None:
        self._serve(True)

    def do_HEAD(self) -> None:
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
    (cert, key); yields (base URL, state)."""
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
        server.shutdown()
        server.server_close()


def make_venv(path: Path) -> Path:
    """A real virtual environment (uv when available: fast; else ``python -m venv``)."""
    uv = Path(sys.executable).with_name("uv")
    if uv.exists():
        subprocess.run(
            [str(uv), "venv", "-q", "--python", sys.executable, str(path)],
            check=True,
            env={**os.environ, "UV_NO_CONFIG": "1"},
        )
    else:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` with its sha256 (symlinks by target) — for before/after checks."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            if os.path.islink(full):
                out[rel] = "link:" + os.readlink(full)
            else:
                with open(full, "rb") as handle:
                    out[rel] = hashlib.sha256(handle.read()).hexdigest()
        for name in dirnames:
            full = os.path.join(dirpath, name)
            out.setdefault(os.path.relpath(full, root) + "/", "dir")
    return out


def clean_env(**extra: str) -> dict[str, str]:
    """os.environ without pip/fitwheel settings that would leak the host's configuration."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "FITWHEEL_", "VIRTUAL_ENV", "UV_"))
    }
    env["PIP_CONFIG_FILE"] = os.devnull
    env.update(extra)
    return env


def torch_like(
    root: Path,
    project: str = "torch",
    version: str = "2.9.0",
    *,
    variants_json: bool = True,
    deps: Sequence[str] = ("filelock",),
    extra_projects: bool = True,
) -> Path:
    """Stand-in wheels for every label of a published ``{project}-{version}-variants.json``
    (a real file from the fixtures), plus a plain wheel; CUDA builds depend on
    ``nvidia-runtime`` through a variant marker, and CUDA 13 builds on ``cuda13-extras``."""
    from fitwheel.variants.reading import loads_variant_info
    from fitwheel.variants.writing import to_json_dict

    published = (FIXTURES / f"{project}-{version}-variants.json").read_text()
    # each wheel carries the current form of the metadata (what a build tool writes today);
    # 817-era provider conditions have no place in it
    doc = to_json_dict(loads_variant_info(published, "fixture"), allow_lossy=True)
    for label, props in json.loads(published)["variants"].items():
        requires = list(deps)
        if label.startswith("cuda"):
            requires.append("nvidia-runtime; 'nvidia' in variant_namespaces")
            requires.append(
                "cuda13-extras; 'nvidia :: cuda_version_lower_bound :: 13.0' in variant_properties"
            )
        make_wheel(
            root,
            project,
            version,
            label=label,
            variant=props,
            variant_doc=doc,
            requires=requires,
            files={f"{project}/__init__.py": f"BUILD = {label!r}\n"},
        )
    make_wheel(
        root,
        project,
        version,
        requires=list(deps),
        files={f"{project}/__init__.py": "BUILD = 'plain'\n"},
    )
    if extra_projects:
        for name in ("filelock", "nvidia-runtime", "cuda13-extras"):
            if not list(root.glob(f"{name.replace('-', '_')}-*.whl")):
                make_wheel(root, name, "1.0")
    if variants_json:
        shutil.copy(FIXTURES / f"{project}-{version}-variants.json", root)
    return root


# -- profiles of two NVIDIA machines, as `fitwheel detect --json` would write them ------------

#: a current data-centre GPU: every CUDA 12 and 13 build runs
H100 = {
    "properties": {
        "nvidia": {
            "cuda_version_lower_bound": ["13.0", "12.9", "12.8", "12.6", "12.0"],
            "sm_arch": ["90_real", "90_virtual"],
        }
    },
    "devices": [
        {
            "vendor": "nvidia",
            "index": 0,
            "name": "NVIDIA H100",
            "properties": {"nvidia": {"sm_arch": ["90_real", "90_virtual"]}},
        }
    ],
    "sources": {"nvidia": "sysfs+nvml"},
}
#: a GPU too old for any CUDA 12 or 13 build
KEPLER = {
    "properties": {"nvidia": {"cuda_version_lower_bound": ["12.0"], "sm_arch": ["35_real"]}},
    "devices": [
        {
            "vendor": "nvidia",
            "index": 0,
            "name": "Tesla K40",
            "properties": {"nvidia": {"sm_arch": ["35_real"]}},
        }
    ],
}
