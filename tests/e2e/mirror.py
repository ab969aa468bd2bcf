"""A local mirror of real distributions: a fixed, pinned tree of pure-Python and manylinux wheels,
downloaded once from the package index pip is configured with, then served as a static simple
index (built by ``fitwheel index build``) on 127.0.0.1.

The download lands in ``$FITWHEEL_TEST_MIRROR_CACHE`` (default: the user cache folder), in a
folder keyed by the interpreter, the platform and the pins; a manifest written at download time
records every wheel's sha256, and each later use checks the cached wheels against it (a damaged
cache is downloaded again). ``MirrorUnavailable`` means the index could not be reached, the one
reason a caller may skip.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator, Mapping
from functools import partial
from pathlib import Path

from packaging.utils import canonicalize_name, parse_wheel_filename

from tests.kit import serve_static

#: What a user asks for (one with an extra, several with console scripts, several compiled).
TOP_LEVEL: tuple[str, ...] = (
    "flask==3.1.0",
    "requests[socks]==2.32.3",
    "rich==13.9.4",
    "pydantic==2.10.4",
    "httpx==0.28.1",
    "attrs==24.3.0",
    "pyyaml==6.0.2",
    "python-dateutil==2.9.0.post0",
    "jsonschema==4.23.0",
    "msgpack==1.1.0",
    "packaging==24.2",
)

#: The whole closure of TOP_LEVEL, pinned, so the tree never drifts with new releases.
CLOSURE: Mapping[str, str] = {
    "annotated-types": "0.8.0",
    "anyio": "4.16.0",
    "attrs": "24.3.0",
    "blinker": "1.9.0",
    "certifi": "2026.10.19.post1",
    "charset-normalizer": "3.5.3",
    "click": "8.5.1",
    "flask": "3.1.0",
    "h11": "0.16.0",
    "httpcore": "1.0.9",
    "httpx": "0.28.1",
    "idna": "3.20",
    "itsdangerous": "2.2.0",
    "jinja2": "3.1.6",
    "jsonschema": "4.23.0",
    "jsonschema-specifications": "2025.9.1",
    "markdown-it-py": "4.3.0",
    "markupsafe": "3.0.4",
    "mdurl": "0.1.2",
    "msgpack": "1.1.0",
    "packaging": "24.2",
    "pydantic": "2.10.4",
    "pydantic-core": "2.27.2",
    "pygments": "2.21.0",
    "pysocks": "1.7.1",
    "python-dateutil": "2.9.0.post0",
    "pyyaml": "6.0.2",
    "referencing": "0.37.0",
    "requests": "2.32.3",
    "rich": "13.9.4",
    "rpds-py": "2026.9.1",
    "six": "1.17.0",
    "typing-extensions": "4.16.0",
    "urllib3": "2.8.0",
    "werkzeug": "3.1.9",
}

#: Modules and console scripts that the installed tree must provide.
IMPORTS: tuple[str, ...] = (
    "flask",
    "requests",
    "rich",
    "pydantic",
    "pydantic_core",
    "httpx",
    "yaml",
    "jsonschema",
    "msgpack",
    "dateutil",
    "socks",
    "markupsafe",
    "charset_normalizer",
    "rpds",
)
SCRIPTS: Mapping[str, tuple[str, ...]] = {
    "flask": ("--version",),
    "pygmentize": ("-V",),
    "normalizer": ("--version",),
    "markdown-it": ("--help",),
}

MANIFEST = "manifest.json"

# pip's words when it could not reach the index (as opposed to a wrong pin or a broken mirror).
_OFFLINE = re.compile(
    r"NewConnectionError|ConnectTimeout|ConnectionError|Temporary failure in name resolution|"
    r"Name or service not known|Network is unreachable|ProxyError|ReadTimeout|"
    r"No route to host|Connection refused"
)


class MirrorUnavailable(Exception):
    """The pinned wheels are not cached and the package index cannot be reached."""


class MirrorError(Exception):
    """The download worked but does not give the pinned tree (a real failure, not a skip)."""


def cache_root() -> Path:
    configured = os.environ.get("FITWHEEL_TEST_MIRROR_CACHE")
    if configured:
        return Path(configured)
    import platformdirs

    return Path(platformdirs.user_cache_dir("fitwheel-tests")) / "mirror"


def mirror_key() -> str:
    """The cached download is only valid for this interpreter, platform and pin set."""
    ident = json.dumps(
        {
            "python": f"{sys.implementation.name}{sys.version_info[0]}{sys.version_info[1]}",
            "platform": sysconfig.get_platform(),
            "top": TOP_LEVEL,
            "closure": sorted(CLOSURE.items()),
        },
        sort_keys=True,
    )
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(partial(fh.read, 1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def wheel_versions(folder: Path) -> dict[str, str]:
    """name -> version of every wheel in ``folder`` (names canonical)."""
    out: dict[str, str] = {}
    for path in folder.glob("*.whl"):
        name, version, _build, _tags = parse_wheel_filename(path.name)
        out[str(name)] = str(version)
    return out


def _verify(folder: Path) -> bool:
    """True when the manifest exists and every wheel it names is there with its sha256."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        files: dict[str, str] = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    present = {p.name for p in folder.glob("*.whl")}
    if present != set(files):
        return False
    return all(sha256_file(folder / name) == digest for name, digest in files.items())


def _pip_download(dest: Path, timeout: int) -> None:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--timeout",
        str(timeout),
        "--retries",
        "2",
        "-d",
        str(dest),
        *TOP_LEVEL,
        *(f"{name}=={version}" for name, version in CLOSURE.items()),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        output = proc.stdout + proc.stderr
        if _OFFLINE.search(output):
            raise MirrorUnavailable(
                f"cannot download the pinned wheels (no network?): {output.strip()[-600:]}"
            )
        raise MirrorError(f"pip download failed ({proc.returncode}):\n{output[-3000:]}")


def ensure_wheels(root: Path | None = None, *, timeout: int = 30) -> Path:
    """The folder of the pinned wheels, downloaded the first time and verified every time."""
    root = cache_root() if root is None else root
    root.mkdir(parents=True, exist_ok=True)
    folder = root / mirror_key()
    with (root / f"{folder.name}.lock").open("w") as lock:
        # Several test processes (or users of one cache) may start at once: one downloads.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _verify(folder):
            return folder
        staging = Path(tempfile.mkdtemp(prefix=f"{folder.name}.", dir=root))
        try:
            _pip_download(staging, timeout)
            got = wheel_versions(staging)
            want = {str(canonicalize_name(n)): v for n, v in CLOSURE.items()}
            if got != want:
                missing = sorted(set(want.items()) - set(got.items()))
                extra = sorted(set(got.items()) - set(want.items()))
                raise MirrorError(
                    f"the download is not the pinned closure: missing {missing}, extra {extra}"
                )
            manifest = {
                "top_level": list(TOP_LEVEL),
                "python": sys.version.split()[0],
                "platform": sysconfig.get_platform(),
                "files": {p.name: sha256_file(p) for p in sorted(staging.glob("*.whl"))},
            }
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
            if folder.exists():
                shutil.rmtree(folder)
            staging.rename(folder)
        finally:
            if staging.exists():
                shutil.rmtree(staging)
        return folder


def build_index(wheels: Path, out: Path, *, copy: bool = False) -> Path:
    """A static simple index of ``wheels`` under ``out`` (by ``fitwheel index build``); returns
    the folder to serve (its ``simple/`` is the index)."""
    cmd = [sys.executable, "-m", "fitwheel", "index", "build", str(wheels), "-o", str(out)]
    if copy:
        cmd.append("--copy")
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise MirrorError(f"fitwheel index build failed:\n{proc.stderr[-3000:]}")
    return out


@contextlib.contextmanager
def serve(root: Path) -> Iterator[str]:
    """Serve ``root`` as static files on 127.0.0.1; yields the simple index URL."""
    with serve_static(root) as url:
        yield f"{url}/simple/"


@contextlib.contextmanager
def mirror(work: Path) -> Iterator[str]:
    """Ensure the wheels, build the index under ``work`` and serve it; yields the index URL."""
    wheels = ensure_wheels()
    with serve(build_index(wheels, work / "index")) as url:
        yield url
