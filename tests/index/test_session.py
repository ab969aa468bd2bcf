""":func:`fitwheel.index.session.open_session`: the one way a command makes its HTTP session,
pip's configuration under the flags."""

from __future__ import annotations

from pathlib import Path

from fitwheel.index.http import DEFAULT_RETRIES, DEFAULT_TIMEOUT
from fitwheel.index.session import open_session
from fitwheel.options import SourceOptions
from fitwheel.paths import CacheLayout


def _env(tmp_path: Path, conf: str) -> dict[str, str]:
    path = tmp_path / "pip.conf"
    path.write_text(f"[global]\n{conf}\n")
    home = str(tmp_path / "home")
    return {"PIP_CONFIG_FILE": str(path), "HOME": home, "XDG_CONFIG_DIRS": home}


def test_pips_settings_reach_the_session(tmp_path: Path) -> None:
    env = _env(
        tmp_path, "timeout = 7\nretries = 1\ntrusted-host = a.test b.test:8443\ncert = ca.pem"
    )
    session = open_session(SourceOptions(), env)
    assert session.timeout == 7.0 and session.retries == 1
    assert session.trusted_hosts == frozenset({"a.test", "b.test:8443"})
    assert session.cafile == "ca.pem"
    assert session.cache is None and not session.revalidate


def test_flags_win_over_pips_settings_and_trusted_hosts_add(tmp_path: Path) -> None:
    env = _env(tmp_path, "timeout = 7\nretries = 1\ntrusted-host = a.test\ncert = ca.pem")
    sources = SourceOptions(
        timeout=2.5, retries=0, trusted_hosts=("c.test",), cert="mine.pem", refresh=True
    )
    session = open_session(sources, env, layout=CacheLayout(tmp_path / "cache"))
    assert session.timeout == 2.5 and session.retries == 0
    assert session.trusted_hosts == frozenset({"a.test", "c.test"})
    assert session.cafile == "mine.pem"
    assert session.cache is not None and session.revalidate


def test_without_settings_the_defaults_hold(tmp_path: Path) -> None:
    session = open_session(SourceOptions(), {"PIP_CONFIG_FILE": "/dev/null"})
    assert session.timeout == DEFAULT_TIMEOUT and session.retries == DEFAULT_RETRIES
    assert session.trusted_hosts == frozenset() and session.cafile is None
