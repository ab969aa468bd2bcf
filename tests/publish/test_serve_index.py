"""The built index, served as plain static files (http.server and nginx), used by real clients:
uv 0.13.8 (variant-aware), pip (plain wheels) and fitwheel's own index reader."""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from fitwheel.index.simple import parse_page
from fitwheel.publish.config import VariantConfig
from fitwheel.publish.index_build import build_index
from fitwheel.publish.make import make_variant
from fitwheel.variants.model import VariantProperty
from tests.kit import (
    UV,
    installed_build,
    make_venv,
    make_wheel,
    nginx_binary,
    offline_env,
    serve_nginx,
    serve_static,
)

JSON_ACCEPT = (
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.1, "
    "text/html;q=0.01"
)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """demo_pkg 1.0: plain, cu12, cu13 and null builds made by ``variant make``; other.pkg 2.0."""
    from fitwheel.publish.config import parse_config
    from tests.kit import UV_NVIDIA

    config: VariantConfig = parse_config(
        {"default-priorities": {"namespace": ["nvidia"]}, "providers": {"nvidia": UV_NVIDIA}},
        source="serve-test",
    )
    base = tmp_path_factory.mktemp("serve")
    wheels = base / "wheels"
    plain = make_wheel(base / "plain", files={"demo_pkg/__init__.py": b"BUILD = 'plain'\n"})
    builds = {
        "cu12": ["nvidia :: cuda_version_lower_bound :: 12.0", "nvidia :: sm_arch :: 90_real"],
        "cu13": ["nvidia :: cuda_version_lower_bound :: 13.0", "nvidia :: sm_arch :: 90_real"],
    }
    for label, props in builds.items():
        src = make_wheel(
            base / label, files={"demo_pkg/__init__.py": f"BUILD = {label!r}\n".encode()}
        )
        make_variant(
            src, [VariantProperty.parse(p) for p in props], config, label=label, out_dir=wheels
        )
    null_src = make_wheel(base / "null", files={"demo_pkg/__init__.py": b"BUILD = 'null'\n"})
    make_variant(null_src, [], config, null=True, out_dir=wheels)
    (wheels / plain.name).write_bytes(plain.read_bytes())
    make_wheel(
        wheels,
        name="other_pkg",
        version="2.0",
        files={"other_pkg/__init__.py": b"BUILD = 'other'\n"},
    )
    out = base / "index"
    build_index(wheels, out)
    return out


def _uv_install(url: str, target: Path, driver: str, sm: str) -> str:
    python = make_venv(target) / "bin" / "python"
    env = offline_env(
        NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION=driver,
        NV_VARIANT_PROVIDER_FORCE_SM_ARCH=sm,
    )
    subprocess.run(
        [
            str(UV),
            "pip",
            "install",
            "--python",
            str(python),
            "--no-cache",
            "--preview-features",
            "wheel-variants",
            "--index-url",
            f"{url}/simple/",
            "demo_pkg",
        ],
        check=True,
        capture_output=True,
        env=env,
    )
    return installed_build(python, "demo_pkg")


H100 = Path(__file__).resolve().parents[1] / "data" / "profiles" / "h100.json"
has_fitwheel_install = importlib.util.find_spec("fitwheel.cli.install_cmd") is not None


def _fitwheel_install(url: str, target: Path) -> str:
    """Install demo_pkg with fitwheel for an H100 profile."""
    python = make_venv(target) / "bin" / "python"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fitwheel",
            "install",
            "demo_pkg",
            "--index-url",
            f"{url}/simple/",
            "--python",
            str(python),
            "--profile",
            str(H100),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return installed_build(python, "demo_pkg")


def _pip_install(url: str, target: Path, package: str) -> Path:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--isolated",
            "--no-deps",
            "--no-cache-dir",
            "--index-url",
            f"{url}/simple/",
            "--target",
            str(target),
            package,
        ],
        check=True,
        capture_output=True,
    )
    return target


def test_uv_picks_the_variant_for_the_driver(index: Path, tmp_path: Path) -> None:
    with serve_static(index) as url:
        assert _uv_install(url, tmp_path / "a", "13.0", "9.0") == "cu13"
        assert _uv_install(url, tmp_path / "b", "12.8", "9.0") == "cu12"
        # No variant fits an sm 7.0 card: uv falls back to the null variant.
        assert _uv_install(url, tmp_path / "c", "13.0", "7.0") == "null"


def test_pip_installs_plain_wheels(index: Path, tmp_path: Path) -> None:
    with serve_static(index) as url:
        target = _pip_install(url, tmp_path / "t", "demo_pkg")
    # pip ignores variant wheels (their names are invalid to it) and takes the plain one.
    assert (target / "demo_pkg" / "__init__.py").read_text() == "BUILD = 'plain'\n"


def _fetch(url: str, accept: str) -> tuple[bytes, str]:
    request = urllib.request.Request(url, headers={"Accept": accept})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read(), response.headers.get_content_type()


def _check_links(page_url: str, body: bytes, content_type: str) -> None:
    links = {link.filename: link for link in parse_page(body, content_type, page_url)}
    assert "demo_pkg-1.0-variants.json" in links
    assert "demo_pkg-1.0-py3-none-any-cu13.whl" in links
    for link in links.values():
        data, _ = _fetch(link.url.split("#")[0], "*/*")
        assert hashlib.sha256(data).hexdigest() == link.sha256
        if link.is_wheel:
            assert link.metadata_hashes is not None
            meta, _ = _fetch(link.metadata_url, "*/*")
            assert hashlib.sha256(meta).hexdigest() == link.metadata_hashes["sha256"]


needs_nginx = pytest.mark.skipif(
    nginx_binary() is None,
    reason="nginx is not installed (Debian: apt-get install -y nginx-light)",
)


@needs_nginx
def test_nginx_plain_static_hosting(index: Path, tmp_path: Path) -> None:
    with serve_nginx(index, tmp_path / "nginx", negotiate=False) as url:
        page_url = f"{url}/simple/demo-pkg/"
        body, content_type = _fetch(page_url, JSON_ACCEPT)
        # Without negotiation every client gets the HTML page, which is all they need.
        assert content_type == "text/html"
        _check_links(page_url, body, content_type)
        assert _uv_install(url, tmp_path / "uv", "13.0", "9.0") == "cu13"
        if has_fitwheel_install:
            assert _fitwheel_install(url, tmp_path / "fw") == "cu13"
        target = _pip_install(url, tmp_path / "pip", "other-pkg")
        assert (target / "other_pkg" / "__init__.py").read_text() == "BUILD = 'other'\n"


@needs_nginx
def test_nginx_with_content_negotiation(index: Path, tmp_path: Path) -> None:
    with serve_nginx(index, tmp_path / "nginx", negotiate=True) as url:
        page_url = f"{url}/simple/demo-pkg/"
        body, content_type = _fetch(page_url, JSON_ACCEPT)
        assert content_type == "application/vnd.pypi.simple.v1+json"
        _check_links(page_url, body, content_type)
        html_body, html_type = _fetch(page_url, "text/html")
        assert html_type == "text/html" and html_body.startswith(b"<!DOCTYPE html>")
        _check_links(page_url, html_body, html_type)
        root, root_type = _fetch(f"{url}/simple/", JSON_ACCEPT)
        assert root_type == "application/vnd.pypi.simple.v1+json" and b"demo-pkg" in root
        assert _uv_install(url, tmp_path / "uv", "12.8", "9.0") == "cu12"
        if has_fitwheel_install:
            assert _fitwheel_install(url, tmp_path / "fw") == "cu13"
        target = _pip_install(url, tmp_path / "pip", "demo-pkg")
        assert (target / "demo_pkg" / "__init__.py").read_text() == "BUILD = 'plain'\n"
