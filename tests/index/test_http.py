import os
import socket
from pathlib import Path

import pytest

from fitwheel.index.auth import redact
from fitwheel.index.config import IndexConfig
from fitwheel.index.finder import Finder
from fitwheel.index.http import HttpError, Session, UnreachableError
from fitwheel.index.httpcache import HttpCache
from fitwheel.index.metadata import fetch_member, fetch_metadata
from tests.kit import build_simple_index, make_wheel, serve


@pytest.fixture
def index_root(tmp_path: Path) -> Path:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "alpha", "1.0", requires=["beta>=2"])
    make_wheel(wheels, "alpha", "1.1", requires=["beta>=3"], requires_python=">=3.99")
    make_wheel(wheels, "beta", "2.0")
    build_simple_index(wheels, tmp_path / "site", yanked={"alpha-1.1-py3-none-any.whl": "oops"})
    return tmp_path / "site"


def session(tmp_path: Path, **kw: object) -> Session:
    return Session(retries=2, backoff=0.0, timeout=5.0, env={}, **kw)  # type: ignore[arg-type]


def test_json_page_is_preferred_and_links_resolve(index_root: Path, tmp_path: Path) -> None:
    with serve(index_root) as (url, state):
        finder = Finder(IndexConfig(f"{url}/simple/"), session(tmp_path))
        links = finder.links("Alpha")
        assert sorted(link.filename for link in links) == [
            "alpha-1.0-py3-none-any.whl",
            "alpha-1.1-py3-none-any.whl",
        ]
        assert state.requests[0][2]["accept"].startswith("application/vnd.pypi.simple.v1+json")
        by_name = {link.filename: link for link in links}
        assert by_name["alpha-1.1-py3-none-any.whl"].yanked == "oops"
        body = finder.read(by_name["alpha-1.0-py3-none-any.whl"])
        assert body[:2] == b"PK"


def test_html_page_when_server_has_no_json(index_root: Path, tmp_path: Path) -> None:
    with serve(index_root, prefer_json=False) as (url, _):
        links = Finder(IndexConfig(f"{url}/simple/"), session(tmp_path)).links("beta")
        assert [link.filename for link in links] == ["beta-2.0-py3-none-any.whl"]
        assert links[0].metadata_hashes and "sha256" in links[0].metadata_hashes


@pytest.mark.parametrize("status", [403, 401, 500])
def test_error_status_of_an_index_names_the_url(
    index_root: Path, tmp_path: Path, status: int
) -> None:
    with serve(index_root, fail={"/simple/alpha/": status}) as (url, _):
        finder = Finder(IndexConfig(f"{url}/simple/"), session(tmp_path))
        with pytest.raises(HttpError) as info:
            finder.links("alpha")
        assert info.value.status == status
        assert f"{url}/simple/alpha/" in str(info.value)


def test_missing_index_is_an_error_not_a_fallback(index_root: Path, tmp_path: Path) -> None:
    with serve(index_root) as (url, _):
        # a typo in the index path: the project 404s and so does the index itself
        finder = Finder(IndexConfig(f"{url}/simple/", (f"{url}/simpel/",)), session(tmp_path))
        with pytest.raises(HttpError, match="simpel") as info:
            finder.links("alpha")
        assert info.value.status == 404
        # a project an existing index simply lacks is not an error
        assert Finder(IndexConfig(f"{url}/simple/"), session(tmp_path)).links("gamma") == []


def test_unreachable_index_is_a_clean_error(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    finder = Finder(IndexConfig(f"http://127.0.0.1:{port}/simple/"), session(tmp_path))
    with pytest.raises(UnreachableError, match=f"127.0.0.1:{port}"):
        finder.links("alpha")


def test_5xx_is_retried_then_succeeds(index_root: Path, tmp_path: Path) -> None:
    with serve(index_root, flaky={"/simple/beta/": 2}) as (url, state):
        links = Finder(IndexConfig(f"{url}/simple/"), session(tmp_path)).links("beta")
        assert len(links) == 1
        assert sum(1 for r in state.requests if r[1] == "/simple/beta/") == 3


def test_5xx_past_the_retries_fails(index_root: Path, tmp_path: Path) -> None:
    with serve(index_root, flaky={"/simple/beta/": 10}) as (url, _):
        with pytest.raises(HttpError) as info:
            Finder(IndexConfig(f"{url}/simple/"), session(tmp_path)).links("beta")
        assert info.value.status == 503


def test_credentials_from_url_and_netrc(index_root: Path, tmp_path: Path) -> None:
    with serve(index_root, credentials=("user", "s3cret")) as (url, _):
        plain = Finder(IndexConfig(f"{url}/simple/"), session(tmp_path))
        with pytest.raises(HttpError) as info:
            plain.links("beta")
        assert info.value.status == 401

        s = session(tmp_path)
        host_url = url.replace("http://", "http://user:s3cret@")
        clean = s.add_credentials(f"{host_url}/simple/")
        assert "s3cret" not in clean
        assert len(Finder(IndexConfig(clean), s).links("beta")) == 1

        netrc = tmp_path / "netrc"
        netrc.write_text("machine 127.0.0.1 login user password s3cret\n")
        netrc.chmod(0o600)
        s2 = Session(retries=0, env={"NETRC": str(netrc)})
        assert len(Finder(IndexConfig(f"{url}/simple/"), s2).links("beta")) == 1


def test_redact_hides_password() -> None:
    assert redact("https://u:pw@h:8080/simple") == "https://u:****@h:8080/simple"
    assert redact("https://h/simple") == "https://h/simple"
    # a user name alone is often a token: masked as pip masks it, but for ssh's git@
    assert redact("https://tok3n@h/simple") == "https://****@h/simple"
    assert redact("ssh://git@h/r.git") == "ssh://git@h/r.git"


def test_cache_revalidates_with_etag_and_honours_max_age(index_root: Path, tmp_path: Path) -> None:
    cache = HttpCache(tmp_path / "cache")
    with serve(index_root) as (url, state):
        s = session(tmp_path, cache=cache)
        first = s.get(f"{url}/simple/beta/")
        second = s.get(f"{url}/simple/beta/")
        assert first is not None and second is not None
        assert second.body == first.body and second.from_cache
        assert state.requests[-1][2].get("if-none-match")
        assert len(state.requests) == 2  # stale (no max-age): revalidated, answered 304
    with serve(index_root, cache_control="max-age=600") as (url, state):
        s = session(tmp_path, cache=cache)
        s.get(f"{url}/simple/alpha/")
        again = s.get(f"{url}/simple/alpha/")
        assert again is not None and again.from_cache
        assert len(state.requests) == 1  # fresh: not asked again
    with serve(index_root, cache_control="no-store") as (url, state):
        s = session(tmp_path, cache=cache)
        s.get(f"{url}/simple/")
        s.get(f"{url}/simple/")
        assert all("if-none-match" not in r[2] for r in state.requests)


def test_metadata_from_pep658_file_is_hash_checked(index_root: Path, tmp_path: Path) -> None:
    with serve(index_root) as (url, state):
        finder = Finder(IndexConfig(f"{url}/simple/"), session(tmp_path))
        link = next(link for link in finder.links("alpha") if "1.0" in link.filename)
        meta = fetch_metadata(link, finder.session)
        assert b"Requires-Dist: beta>=2" in meta
        assert state.requests[-1][1].endswith(".whl.metadata")
        tampered = index_root / "files" / f"{link.filename}.metadata"
        tampered.write_bytes(meta + b"Requires-Dist: evil\n")
        with pytest.raises(Exception, match="hash"):
            fetch_metadata(link, Session(retries=0, env={}))


def test_metadata_by_range_requests_and_whole_wheel(index_root: Path, tmp_path: Path) -> None:
    big = tmp_path / "big"
    wheel = make_wheel(
        big, "gamma", "1.0", requires=["alpha"], files={"gamma/blob.bin": os.urandom(400_000)}
    )
    build_simple_index(big, tmp_path / "bigsite", metadata_files=False)
    with serve(tmp_path / "bigsite") as (url, state):
        s = session(tmp_path)
        (link,) = Finder(IndexConfig(f"{url}/simple/"), s).links("gamma")
        assert link.metadata_hashes is None
        assert b"Requires-Dist: alpha" in fetch_metadata(link, s)
        ranged = [r for r in state.requests if "range" in r[2]]
        assert ranged and all(r[0] == "GET" for r in ranged)
        fetched = sum(
            int(r[2]["range"].split("-")[1]) - int(r[2]["range"][6:].split("-")[0]) + 1
            for r in ranged
        )
        assert fetched < wheel.stat().st_size
    with serve(tmp_path / "bigsite", ranges=False) as (url, state):
        s = session(tmp_path)
        (link,) = Finder(IndexConfig(f"{url}/simple/"), s).links("gamma")
        assert fetch_member(link, s, "METADATA", required=True) is not None
        assert not any("range" in r[2] for r in state.requests)


def test_cert_bundle_that_does_not_exist_is_a_clean_error(tmp_path: Path) -> None:
    from fitwheel.errors import FitwheelError
    from fitwheel.index.pools import ssl_context

    with pytest.raises(FitwheelError, match="PIP_CERT"):
        ssl_context({"PIP_CERT": str(tmp_path / "missing.pem")})
    assert ssl_context({}).verify_mode.name == "CERT_REQUIRED"


def test_https_trusts_the_configured_bundle_only(index_root: Path, tmp_path: Path) -> None:
    import shutil

    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    from tests.kit import self_signed_cert

    cert, key = self_signed_cert(tmp_path / "tls")
    with serve(index_root, tls=(cert, key)) as (url, _):
        assert url.startswith("https://")
        trusting = Session(retries=0, env={}, cafile=str(cert))
        assert len(Finder(IndexConfig(f"{url}/simple/"), trusting).links("beta")) == 1
        via_env = Session(retries=0, env={"PIP_CERT": str(cert)})
        assert len(Finder(IndexConfig(f"{url}/simple/"), via_env).links("beta")) == 1
        system = Session(retries=0, env={"SSL_CERT_FILE": "", "PIP_CERT": ""})
        with pytest.raises(UnreachableError, match="certificate") as info:
            Finder(IndexConfig(f"{url}/simple/"), system).links("beta")
        assert url in str(info.value)


def test_hashed_files_come_from_the_cache_without_asking(index_root: Path, tmp_path: Path) -> None:
    cache = HttpCache(tmp_path / "cache")
    with serve(index_root) as (url, state):
        finder = Finder(IndexConfig(f"{url}/simple/"), session(tmp_path, cache=cache))
        link = next(link for link in finder.links("alpha") if "1.0" in link.filename)
        assert link.metadata_hashes
        first = fetch_metadata(link, finder.session)
        asked = len(state.requests)
        # the index publishes the file's hash: a cached copy with it needs no round trip
        assert fetch_metadata(link, finder.session) == first
        assert len(state.requests) == asked
    # not even a server
    assert fetch_metadata(link, session(tmp_path, cache=cache)) == first
    # a cached copy without the published hash (an older file under the same name) is not
    # used, nor revalidated into use: the server is asked for the file itself
    import hashlib
    import json

    for entry in (p for p in (tmp_path / "cache").rglob("*") if p.is_file()):
        head, _, _body = entry.read_bytes().partition(b"\n")
        meta_data = json.loads(head)
        if meta_data["url"] == link.metadata_url:
            stale = first + b"Requires-Dist: evil\n"
            meta_data["sha256"] = hashlib.sha256(stale).hexdigest()
            entry.write_bytes(json.dumps(meta_data).encode() + b"\n" + stale)
            break
    else:
        raise AssertionError("the metadata was not cached")
    with serve(index_root, port=int(url.rsplit(":", 1)[1])) as (_url, state2):
        assert fetch_metadata(link, session(tmp_path, cache=cache)) == first
        assert [r for r in state2.requests if "if-none-match" not in r[2]]


def test_a_hashed_file_that_differs_from_its_hash_is_refused(
    index_root: Path, tmp_path: Path
) -> None:
    from fitwheel.integrity import HashMismatchError

    target = index_root / "simple" / "beta" / "index.html"
    body = target.read_bytes()
    digest = __import__("hashlib").sha256(body + b"x").hexdigest()
    with serve(index_root) as (url, _state):
        s = session(tmp_path, cache=HttpCache(tmp_path / "cache"))
        with pytest.raises(HashMismatchError, match="does not have the hash"):
            s.get(f"{url}/simple/beta/index.html", hashes={"sha256": digest})
        good = __import__("hashlib").sha256(body).hexdigest()
        got = s.get(f"{url}/simple/beta/index.html", hashes={"sha256": good})
        assert got is not None and got.body == body


def test_a_torn_cache_entry_is_a_miss_and_a_304_rewrites_nothing(
    index_root: Path, tmp_path: Path
) -> None:
    cache = HttpCache(tmp_path / "cache")
    with serve(index_root) as (url, state):
        s = session(tmp_path, cache=cache)
        first = s.get(f"{url}/simple/beta/")
        assert first is not None
        (entry,) = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
        stamp = entry.stat().st_mtime_ns, entry.stat().st_ino
        again = s.get(f"{url}/simple/beta/")
        assert again is not None and again.from_cache
        assert state.requests[-1][2].get("if-none-match")
        # revalidated, nothing new to keep: the entry is left alone
        assert (entry.stat().st_mtime_ns, entry.stat().st_ino) == stamp
        # half an entry (a writer that died): not used; asked afresh and written whole
        entry.write_bytes(entry.read_bytes()[:-10])
        asked = len(state.requests)
        third = s.get(f"{url}/simple/beta/")
        assert third is not None and third.body == first.body
        assert len(state.requests) == asked + 1
        assert "if-none-match" not in state.requests[-1][2]
        assert cache.load(f"{url}/simple/beta/") is not None
