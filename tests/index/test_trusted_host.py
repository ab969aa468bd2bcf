"""pip's ``trusted-host``: an HTTPS index on a trusted host is used without checking its
certificate; every other host is still checked."""

import shutil
from pathlib import Path

import pytest

from fitwheel.index.config import IndexConfig, load_pip_settings
from fitwheel.index.finder import Finder
from fitwheel.index.http import Session, UnreachableError
from tests.kit import build_simple_index, make_wheel, self_signed_cert, serve


def test_a_trusted_host_from_pip_conf_skips_the_certificate_check(tmp_path: Path) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    make_wheel(tmp_path / "wheels", "beta", "2.0")
    build_simple_index(tmp_path / "wheels", tmp_path / "site")
    cert, key = self_signed_cert(tmp_path / "tls")
    with serve(tmp_path / "site", tls=(cert, key)) as (url, _):
        port = url.rsplit(":", 1)[1]
        env = {"SSL_CERT_FILE": "", "PIP_CERT": ""}
        with pytest.raises(UnreachableError, match="certificate"):
            Finder(IndexConfig(f"{url}/simple/"), Session(retries=0, env=env)).links("beta")
        for trusted in ("127.0.0.1", f"127.0.0.1:{port}"):
            conf = tmp_path / "pip.conf"
            conf.write_text(f"[global]\ntrusted-host = {trusted}\n")
            hosts = frozenset(load_pip_settings(env={}, files=[conf]).trusted_hosts)
            session = Session(retries=0, env=env, trusted_hosts=hosts)
            assert len(Finder(IndexConfig(f"{url}/simple/"), session).links("beta")) == 1
        other = Session(retries=0, env=env, trusted_hosts=frozenset({"127.0.0.1:1"}))
        with pytest.raises(UnreachableError, match="certificate"):
            Finder(IndexConfig(f"{url}/simple/"), other).links("beta")
