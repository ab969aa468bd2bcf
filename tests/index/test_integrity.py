"""One hash policy for index pages, metadata files and downloads; TLS trust for every request."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from fitwheel.errors import FitwheelError, IntegrityError
from fitwheel.index.config import IndexConfig
from fitwheel.index.finder import Finder
from fitwheel.index.http import Session, UnreachableError
from fitwheel.index.metadata import fetch_metadata
from fitwheel.index.simple import Link
from fitwheel.install.fetch.download import Downloader, DownloadItem
from fitwheel.integrity import Hashes, HashMismatchError, HashRequiredError, verify
from tests.kit import make_wheel, serve, sha256_of


@pytest.fixture
def wheel(tmp_path: Path) -> Path:
    return make_wheel(tmp_path / "files", "gamma", "1.0")


def _session(**kw: object) -> Session:
    return Session(retries=0, backoff=0.0, timeout=5.0, env={}, **kw)  # type: ignore[arg-type]


def test_https_after_http_still_trusts_the_configured_bundle(tmp_path: Path, wheel: Path) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    from tests.kit import self_signed_cert

    cert, key = self_signed_cert(tmp_path / "tls")
    root = wheel.parent
    with serve(root) as (plain, _), serve(root, tls=(cert, key)) as (secure, _):
        assert secure.startswith("https://")
        trusting = _session(cafile=str(cert))
        assert trusting.get(f"{plain}/{wheel.name}", use_cache=False) is not None
        got = trusting.get(f"{secure}/{wheel.name}", use_cache=False)
        assert got is not None and got.body == wheel.read_bytes()
        via_env = Session(retries=0, env={"PIP_CERT": str(cert)})
        assert via_env.get(f"{plain}/{wheel.name}", use_cache=False) is not None
        assert via_env.get(f"{secure}/{wheel.name}", use_cache=False) is not None
        untrusting = _session()
        assert untrusting.get(f"{plain}/{wheel.name}", use_cache=False) is not None
        with pytest.raises(UnreachableError, match="certificate") as info:
            untrusting.get(f"{secure}/{wheel.name}", use_cache=False)
        assert secure in str(info.value)


def _json_page(tmp_path: Path, wheel: Path, hashes: dict[str, str]) -> Path:
    """A PEP 691 index whose one file is offered with ``hashes`` (and a metadata file too)."""
    site = tmp_path / "site"
    (site / "simple" / "gamma").mkdir(parents=True)
    (site / "files").mkdir()
    shutil.copy(wheel, site / "files" / wheel.name)
    (site / "files" / f"{wheel.name}.metadata").write_bytes(b"Name: gamma\nVersion: 1.0\n")
    entry = {
        "filename": wheel.name,
        "url": f"../../files/{wheel.name}",
        "hashes": hashes,
        "core-metadata": hashes,
    }
    page = {"meta": {"api-version": "1.1"}, "name": "gamma", "files": [entry]}
    (site / "simple" / "gamma" / "index.json").write_text(json.dumps(page))
    return site


def test_an_unknown_hash_algorithm_from_an_index_is_a_clean_error(
    tmp_path: Path, wheel: Path
) -> None:
    site = _json_page(tmp_path, wheel, {"blake9": "00ff"})
    with serve(site) as (url, state):
        (link,) = Finder(IndexConfig(f"{url}/simple/"), _session()).links("gamma")
        assert dict(link.hashes) == {"blake9": "00ff"}
        hashes = {a: frozenset({h}) for a, h in link.hashes.items()}
        item = DownloadItem(link.filename, link.url, hashes)
        asked = len(state.requests)
        with pytest.raises(FitwheelError, match="blake9") as info:
            Downloader(_session(), tmp_path / "cache").fetch(item)
        assert url in str(info.value)
        assert len(state.requests) == asked  # refused before downloading anything
        # the metadata file, announced with only an unknown algorithm, is refused too
        assert link.metadata_hashes == {"blake9": "00ff"}
        with pytest.raises(FitwheelError, match="blake9"):
            fetch_metadata(link, _session())


def test_md5_alone_is_no_usable_hash(tmp_path: Path, wheel: Path) -> None:
    md5 = hashlib.md5(wheel.read_bytes()).hexdigest()
    item = DownloadItem(wheel.name, wheel.as_uri(), {"md5": frozenset({md5})})
    with pytest.raises(HashRequiredError, match="md5"):
        Downloader(None, tmp_path / "cache").fetch(item)


def test_the_strongest_algorithm_offered_is_the_one_checked(tmp_path: Path, wheel: Path) -> None:
    data = wheel.read_bytes()
    sha256 = hashlib.sha256(data).hexdigest()
    wrong_md5 = hashlib.md5(b"another file").hexdigest()
    with serve(wheel.parent) as (url, _):
        item = DownloadItem(
            wheel.name,
            f"{url}/{wheel.name}",
            {"md5": frozenset({wrong_md5}), "sha256": frozenset({sha256})},
        )
        done = Downloader(_session(), tmp_path / "cache").fetch(item)
        assert done.sha256 == sha256_of(wheel)
    offered = Hashes.of({"md5": hashlib.md5(data).hexdigest(), "sha256": "0" * 64})
    assert offered.algorithm == "sha256"
    with pytest.raises(HashMismatchError, match="sha256"):
        verify(data, offered, "file.whl")
    both = Hashes.of({"sha256": "0" * 64, "sha512": hashlib.sha512(data).hexdigest()})
    assert verify(data, both, "file.whl") == "sha512"


def test_a_mismatch_is_the_one_error_naming_the_url(tmp_path: Path, wheel: Path) -> None:
    wrong = "0" * 64
    with serve(wheel.parent) as (url, _):
        file_url = f"{url}/{wheel.name}"
        errors = []
        with pytest.raises(HashMismatchError) as info:
            _session().get(file_url, hashes={"sha256": wrong})
        errors.append(info.value)
        (wheel.parent / f"{wheel.name}.metadata").write_bytes(b"Name: gamma\n")
        link = Link(wheel.name, file_url, metadata_hashes={"sha256": wrong})
        with pytest.raises(HashMismatchError) as info:
            fetch_metadata(link, _session())
        errors.append(info.value)
        item = DownloadItem(wheel.name, file_url, {"sha256": frozenset({wrong})})
        with pytest.raises(HashMismatchError) as info:
            Downloader(_session(), tmp_path / "cache").fetch(item)
        errors.append(info.value)
    for error in errors:
        assert isinstance(error, IntegrityError)
        assert url in str(error) and wrong in str(error)


def test_proxies_and_their_bypass_come_from_the_environment() -> None:
    import urllib3

    env = {
        "HTTP_PROXY": "http://127.0.0.1:9",
        "http_proxy": "http://127.0.0.1:8",
        "no_proxy": "internal.example, .corp.example",
    }
    s = Session(retries=0, env=env)
    through = s._pool_for("http://files.example/x.whl")
    assert isinstance(through, urllib3.ProxyManager)
    assert through.proxy is not None and through.proxy.port == 8  # lower case wins
    for direct in ("http://internal.example/x", "http://a.corp.example/x", "http://127.0.0.1/x"):
        assert not isinstance(s._pool_for(direct), urllib3.ProxyManager), direct
    assert not isinstance(s._pool_for("https://files.example/x"), urllib3.ProxyManager)
