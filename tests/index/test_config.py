import os
from pathlib import Path

import pytest

from fitwheel.index.config import (
    ConfigError,
    PipSettings,
    default_index_url,
    load_index_config,
    load_pip_settings,
    pip_config_files,
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_cli_beats_env_beats_files(tmp_path: Path) -> None:
    conf = write(
        tmp_path / "pip.conf",
        "[global]\nindex-url = http://file/simple\n"
        "extra-index-url = http://e1/simple\n  http://e2/simple\n",
    )
    env = {"PIP_CONFIG_FILE": str(conf)}
    cfg = load_index_config(env=env, files=[conf])
    assert cfg.index_url == "http://file/simple"
    assert cfg.extra_index_urls == ("http://e1/simple", "http://e2/simple")
    assert cfg.origins["index-url"].startswith(str(conf))

    env["PIP_INDEX_URL"] = "http://env/simple"
    cfg = load_index_config(env=env, files=[conf])
    assert cfg.index_url == "http://env/simple"
    assert cfg.origins["index-url"] == "PIP_INDEX_URL"

    cfg = load_index_config(index_url="http://cli/simple", env=env, files=[conf])
    assert cfg.index_url == "http://cli/simple"
    assert cfg.index_urls == ("http://cli/simple", "http://e1/simple", "http://e2/simple")


def test_install_section_overrides_global_and_later_files_win(tmp_path: Path) -> None:
    user = write(tmp_path / "user.conf", "[global]\nindex-url = http://user/simple\n")
    site = write(
        tmp_path / "site.conf",
        "[global]\nindex-url = http://site/simple\n[install]\nfind-links = /wheels\n",
    )
    cfg = load_index_config(env={}, files=[user, site])
    assert cfg.index_url == "http://site/simple"
    assert cfg.find_links == ("/wheels",)
    both = write(
        tmp_path / "both.conf",
        "[install]\nindex-url = http://install/simple\n"
        "[global]\nindex-url = http://global/simple\n",
    )
    assert load_index_config(env={}, files=[both]).index_url == "http://install/simple"


def test_no_index_keeps_find_links(tmp_path: Path) -> None:
    cfg = load_index_config(
        no_index=True, find_links=["/w"], env={"PIP_INDEX_URL": "http://x/"}, files=[]
    )
    assert cfg.index_url is None and cfg.index_urls == ()
    assert cfg.find_links == ("/w",)
    cfg = load_index_config(env={"PIP_NO_INDEX": "true", "PIP_FIND_LINKS": "/a /b"}, files=[])
    assert cfg.index_urls == () and cfg.find_links == ("/a", "/b")


def test_default_index_comes_from_installed_pip() -> None:
    pip_models = pytest.importorskip("pip._internal.models.index")
    cfg = load_index_config(env={}, files=[])
    assert cfg.index_url == pip_models.PyPI.simple_url == default_index_url()
    assert cfg.origins["index-url"] == "pip's default"


def test_config_file_order_is_pips(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "XDG_CONFIG_DIRS": "/etc/xdg", "PIP_CONFIG_FILE": "/x/pip.conf"}
    files = pip_config_files(env, site_prefix="/venv")
    assert files == [
        Path("/etc/xdg/pip/pip.conf"),
        Path("/etc/pip.conf"),
        tmp_path / ".pip" / "pip.conf",
        tmp_path / ".config" / "pip" / "pip.conf",
        Path("/venv/pip.conf"),
        Path("/x/pip.conf"),
    ]
    assert pip_config_files({"PIP_CONFIG_FILE": os.devnull}) == []


def test_unreadable_config_is_a_clean_error(tmp_path: Path) -> None:
    bad = write(tmp_path / "pip.conf", "index-url = no section\n")
    with pytest.raises(ConfigError, match=r"pip\.conf"):
        load_index_config(env={}, files=[bad])


def test_cert_setting_follows_the_same_precedence(tmp_path: Path) -> None:
    conf = write(tmp_path / "pip.conf", "[global]\ncert = /file/ca.pem\n")
    assert load_index_config(no_index=True, env={}, files=[conf]).cert == "/file/ca.pem"
    env = {"PIP_CERT": "/env/ca.pem"}
    assert load_index_config(no_index=True, env=env, files=[conf]).cert == "/env/ca.pem"
    cli = load_index_config(no_index=True, env=env, files=[conf], cert="/cli/ca.pem")
    assert cli.cert == "/cli/ca.pem"
    assert load_index_config(no_index=True, env={}, files=[]).cert is None


def test_install_settings_come_from_files_and_the_environment(tmp_path: Path) -> None:
    conf = write(
        tmp_path / "pip.conf",
        "[global]\nconstraint = /c/one.txt /c/two.txt\ntimeout = 5\n"
        "[install]\nno-binary = :all:\nonly_binary = numpy,scipy\npre = yes\n"
        "default-timeout = 12\nretries = 1\ntrusted-host = a.example\n  b.example:8443\n"
        "require-hashes = true\nno-deps = 1\n",
    )
    settings = load_pip_settings(env={}, files=[conf])
    assert settings.constraint_files == ("/c/one.txt", "/c/two.txt")
    assert settings.no_binary == (":all:",)
    assert settings.only_binary == ("numpy", "scipy")
    assert settings.pre and settings.require_hashes and settings.no_deps
    assert settings.timeout == 12.0 and settings.retries == 1
    assert settings.trusted_hosts == ("a.example", "b.example:8443")
    assert settings.origins["constraint"] == f"{conf} [global]"
    env = {"PIP_CONSTRAINT": "/env/c.txt", "PIP_DEFAULT_TIMEOUT": "180", "PIP_PRE": "no"}
    settings = load_pip_settings(env=env, files=[conf])
    assert settings.constraint_files == ("/env/c.txt",)
    assert settings.origins["constraint"] == "PIP_CONSTRAINT"
    assert settings.timeout == 180.0 and not settings.pre
    assert load_pip_settings(env={}, files=[]) == PipSettings()


def test_user_and_bad_values_are_refused_naming_the_setting(tmp_path: Path) -> None:
    conf = write(tmp_path / "pip.conf", "[install]\nuser = true\n")
    with pytest.raises(ConfigError, match=rf"'user' setting \({conf} \[install\]\)"):
        load_pip_settings(env={}, files=[conf])
    assert not load_pip_settings(env={"PIP_USER": "0"}, files=[conf]).require_hashes
    bad = write(tmp_path / "bad.conf", "[global]\nretries = many\npre = perhaps\n")
    with pytest.raises(ConfigError, match=r"'retries' setting .* 'many', not a whole number"):
        load_pip_settings(env={"PIP_PRE": "1"}, files=[bad])
    with pytest.raises(ConfigError, match=r"'pre' setting .* not a yes/no value"):
        load_pip_settings(env={"PIP_RETRIES": "2"}, files=[bad])


def test_command_line_indexes_are_searched_first_each_with_its_origin(tmp_path: Path) -> None:
    conf = write(
        tmp_path / "pip.conf",
        "[global]\nindex-url = http://main/simple\nextra-index-url = http://mirror/simple\n",
    )
    cfg = load_index_config(env={}, files=[conf])
    assert cfg.search_order() == ("http://mirror/simple", "http://main/simple")
    assert cfg.origin_of("http://main/simple") == f"{conf} [global]"
    cfg = load_index_config(
        index_url="http://cli/simple", extra_index_urls=["http://cli-extra/simple"],
        env={}, files=[conf],
    )  # fmt: skip
    # as pip does, --extra-index-url adds to the configured extra indexes; --index-url
    # replaces the configured main one; the command line's come first
    assert cfg.searched == (
        ("http://cli-extra/simple", "--extra-index-url"),
        ("http://cli/simple", "--index-url"),
        ("http://mirror/simple", f"{conf} [global]"),
    )
    assert cfg.describe_indexes() == (
        "http://cli-extra/simple (--extra-index-url), http://cli/simple (--index-url), "
        f"http://mirror/simple ({conf} [global])"
    )
    env = {"PIP_EXTRA_INDEX_URL": "http://env/simple"}
    cfg = load_index_config(index_url="http://cli/simple", env=env, files=[conf])
    assert cfg.searched == (
        ("http://cli/simple", "--index-url"),
        ("http://env/simple", "PIP_EXTRA_INDEX_URL"),
    )


def test_what_requirements_files_add_keeps_its_file_and_line(tmp_path: Path) -> None:
    conf = write(
        tmp_path / "pip.conf",
        "[global]\nindex-url = http://main/simple\nextra-index-url = http://mirror/simple\n",
    )
    cfg = load_index_config(
        extra_index_urls=["http://cli-extra/simple", "http://cu128/simple"],
        find_links=["/wheels"],
        origins=[("http://cu128/simple", "req.txt:1"), ("/wheels", "req.txt:2")],
        env={}, files=[conf],
    )  # fmt: skip
    # a file's extra indexes come after the command line's, before the configured ones
    assert cfg.searched == (
        ("http://cli-extra/simple", "--extra-index-url"),
        ("http://cu128/simple", "req.txt:1"),
        ("http://mirror/simple", f"{conf} [global]"),
        ("http://main/simple", f"{conf} [global]"),
    )
    assert cfg.origins["find-links"] == "req.txt:2"
    # a file's -i replaces the configured indexes too, as pip's finder does
    cfg = load_index_config(
        index_url="http://file/simple", extra_index_urls=["http://x/simple"],
        index_url_origin="req.txt:3", origins=[("http://x/simple", "req.txt:4")],
        env={}, files=[conf],
    )  # fmt: skip
    assert cfg.searched == (("http://x/simple", "req.txt:4"), ("http://file/simple", "req.txt:3"))
    assert cfg.origin_of("http://file/simple") == "req.txt:3"
    cfg = load_index_config(
        no_index=True, origins=[("--no-index", "req.txt:5")], env={}, files=[conf]
    )
    assert cfg.index_url is None and cfg.origins["no-index"] == "req.txt:5"
