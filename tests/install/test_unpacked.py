import base64
import hashlib
import os
import random
import subprocess
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from fitwheel.errors import InvalidWheelError
from fitwheel.install.cache.unpacked import UnpackedCache
from fitwheel.install.env.interpreter import inspect_environment
from fitwheel.install.place.core import InstallError, WheelToInstall, install_wheels
from tests.kit import make_wheel, sha256_of, snapshot


def fresh(base: Path, where: Path) -> Path:
    subprocess.run(["cp", "-a", str(base), str(where)], check=True)
    return where


def wheel_of(path: Path) -> WheelToInstall:
    item = WheelToInstall.from_path(path)
    return WheelToInstall(item.path, item.name, item.version, sha256=sha256_of(path))


@pytest.mark.parametrize("mode", ["copy", "hardlink"])
def test_install_from_the_unpacked_cache(base_venv: Path, tmp_path: Path, mode: str) -> None:
    wheel = make_wheel(
        tmp_path / "w",
        "tool",
        "1.0",
        files={"tool/__init__.py": "V = 1\n"},
        entry_points={"tool": "tool:main"},
        data_files={"scripts/tool-sh": "#!python\nprint(1)\n"},
    )
    cache = UnpackedCache(tmp_path / "unpacked")
    results = []
    for n in range(2):
        venv = fresh(base_venv, tmp_path / f"venv{n}")
        env = inspect_environment(str(venv), {})
        install_wheels(env, [wheel_of(wheel)], unpacked=cache, link_mode=mode)
        site = Path(env.scheme["purelib"])
        installed = site / "tool" / "__init__.py"
        assert installed.read_text() == "V = 1\n"
        record = (site / "tool-1.0.dist-info" / "RECORD").read_text()
        assert "tool/__init__.py,sha256=" in record
        assert (venv / "bin" / "tool-sh").read_text().startswith(f"#!{env.python}")
        results.append(installed)
    (folder,) = [p for p in (tmp_path / "unpacked").glob("*/*") if p.is_dir()]
    cached = folder / "files" / "tool" / "__init__.py"
    linked = os.path.samefile(cached, results[0])
    assert linked == (mode == "hardlink")
    out = subprocess.run(
        [str(tmp_path / "venv0" / "bin" / "tool-sh")], capture_output=True, text=True, check=True
    )
    assert out.stdout == "1\n"


def test_a_changed_cache_entry_is_unpacked_again(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "w", "tool", "1.0", files={"tool/__init__.py": "V = 1\n"})
    first_cache = UnpackedCache(tmp_path / "unpacked")
    first = first_cache.get(wheel, sha256_of(wheel))
    member = first.folder / "files" / "tool" / "__init__.py"
    member.write_text("V = 'edited in place'\n")
    # every run checks the sizes: a file changed in place is noticed, the wheel unpacked afresh
    # (here into a private copy: the first cache still uses the entry)
    with UnpackedCache(tmp_path / "unpacked") as sized_cache:
        sized = sized_cache.get(wheel, sha256_of(wheel))
        assert (sized.folder / "files" / "tool" / "__init__.py").read_text() == "V = 1\n"
    first_cache.close()
    with UnpackedCache(tmp_path / "unpacked") as cache:
        entry = cache.get(wheel, sha256_of(wheel))  # now replaced in place
        assert entry.folder == cache.folder(sha256_of(wheel))
        assert (entry.folder / "files" / "tool" / "__init__.py").read_text() == "V = 1\n"
    member.write_text("V = 9\n")  # the same size: only hashing tells
    trusting = UnpackedCache(tmp_path / "unpacked").get(wheel, sha256_of(wheel))
    assert (trusting.folder / "files" / "tool" / "__init__.py").read_text() == "V = 9\n"
    # a verifying run (install --force-reinstall) hashes and unpacks afresh
    again = UnpackedCache(tmp_path / "unpacked", verify=True).get(wheel, sha256_of(wheel))
    assert (again.folder / "files" / "tool" / "__init__.py").read_text() == "V = 1\n"


def test_a_corrupt_wheel_is_refused_before_anything_changes(
    base_venv: Path, tmp_path: Path
) -> None:
    bad = make_wheel(tmp_path / "w", "bad", "1.0", corrupt=True)
    venv = fresh(base_venv, tmp_path / "venv")
    with pytest.raises(InstallError, match="Nothing was changed"):
        install_wheels(
            inspect_environment(str(venv), {}),
            [wheel_of(bad)],
            unpacked=UnpackedCache(tmp_path / "unpacked"),
        )
    assert not list((tmp_path / "unpacked").glob("*/*/fitwheel-unpacked.json"))


def _b64_sha256(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")


def _mixed_wheel(folder: Path) -> tuple[Path, dict[str, bytes]]:
    """A wheel with a member too big to inflate in one call, a stored (uncompressed) member, an
    executable and many small files: every path the unpacker takes."""
    folder.mkdir(parents=True, exist_ok=True)
    noise = random.Random(7)
    big = bytes(noise.getrandbits(8) for _ in range(1 << 16)) * 150  # ~9.8 MB, compresses
    content = {
        "mixed/big.bin": big,
        "mixed/stored.bin": b"stored as it is\n" * 1000,
        "mixed/tool": b"#!/bin/sh\necho hi\n",
        **{f"mixed/m{i}.py": f"X = {i}\n".encode() for i in range(300)},
        "mixed-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: mixed\nVersion: 1.0\n",
        "mixed-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = [f"{name},sha256={_b64_sha256(body)},{len(body)}" for name, body in content.items()]
    record.append("mixed-1.0.dist-info/RECORD,,")
    content["mixed-1.0.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    path = folder / "mixed-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, body in content.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_STORED if "stored" in name else zipfile.ZIP_DEFLATED
            info.external_attr = (0o100755 if name.endswith("/tool") else 0o100644) << 16
            archive.writestr(info, body)
    return path, content


@pytest.mark.parametrize("inflate", ["default", "zlib"])
def test_every_kind_of_member_is_unpacked_exactly(
    tmp_path: Path, inflate: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if inflate == "zlib":
        from fitwheel.wheel import inflate as inflate_module

        monkeypatch.setattr(inflate_module, "IMPL", zlib)
    wheel, content = _mixed_wheel(tmp_path / "w")
    source = UnpackedCache(tmp_path / "unpacked").get(wheel, sha256_of(wheel))
    files = source.folder / "files"
    for name, body in content.items():
        assert (files / name).read_bytes() == body, name
    assert os.access(files / "mixed" / "tool", os.X_OK)
    assert not os.access(files / "mixed" / "m1.py", os.X_OK)
    members = {m[0]: m for m in source.members}
    assert members["mixed/big.bin"][2] == _b64_sha256(content["mixed/big.bin"])
    assert members["mixed/big.bin"][3] == len(content["mixed/big.bin"])
    assert members["mixed/tool"][1] is True and members["mixed/m1.py"][1] is False


def test_a_damaged_archive_is_refused_and_nothing_is_cached(tmp_path: Path) -> None:
    wheel, _content = _mixed_wheel(tmp_path / "w")
    data = bytearray(wheel.read_bytes())
    # flip bytes inside the big member's compressed data (the central directory stays intact)
    start = data.find(b"mixed/big.bin") + 200
    data[start : start + 64] = bytes(b ^ 0xFF for b in data[start : start + 64])
    wheel.write_bytes(bytes(data))
    with pytest.raises(InvalidWheelError, match=r"mixed/big\.bin"):
        UnpackedCache(tmp_path / "unpacked").get(wheel, sha256_of(wheel))
    assert not list((tmp_path / "unpacked").glob("*/*/fitwheel-unpacked.json"))


def _rewrite_record(wheel: Path, edit: Callable[[str], str], extra: dict[str, bytes]) -> Path:
    """A copy of ``wheel`` with its RECORD passed through ``edit`` and ``extra`` members added."""
    out = wheel.parent / "edited" / wheel.name
    out.parent.mkdir(exist_ok=True)
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                data = edit(data.decode()).encode()
            dst.writestr(info, data)
        for name, data in extra.items():
            dst.writestr(name, data)
    return out


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.replace("sha256=", "sha256-", 1), "is not sha256, sha384 or sha512"),
        (lambda r: r.replace("sha256=", "whirlpool9=", 1), "is not sha256, sha384 or sha512"),
        (lambda r: r.replace("sha256=", "md5=", 1), "is not sha256, sha384 or sha512"),
        (
            lambda r: "\n".join(line.rsplit(",", 1)[0] + "," for line in r.splitlines()),
            "has a hash but no size",
        ),
        (lambda r: r + "only-a-path\n", "has 1 fields, not 3"),
        (lambda r: "\n".join(r.splitlines()[1:]), "has no hash in RECORD"),
    ],
)
def test_a_bad_record_is_refused_naming_the_wheel(
    tmp_path: Path, edit: Callable[[str], str], message: str
) -> None:
    wheel = make_wheel(tmp_path / "w", "tool", "1.0", files={"tool/__init__.py": "V = 1\n"})
    bad = _rewrite_record(wheel, edit, {})
    with pytest.raises(InvalidWheelError, match=message) as caught:
        UnpackedCache(tmp_path / "unpacked").get(bad, sha256_of(bad))
    assert "tool-1.0" in str(caught.value)
    assert not any((tmp_path / "unpacked").glob("*/*/fitwheel-unpacked.json"))


def test_record_signatures_need_no_record_entry(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "w", "tool", "1.0", files={"tool/__init__.py": "V = 1\n"})
    signed = _rewrite_record(wheel, lambda r: r, {"tool-1.0.dist-info/RECORD.jws": b"{}"})
    got = UnpackedCache(tmp_path / "unpacked").get(signed, sha256_of(signed))
    assert (got.folder / "files" / "tool-1.0.dist-info" / "RECORD.jws").read_bytes() == b"{}"


def test_a_cache_on_another_filesystem_is_copied_from(base_venv: Path, tmp_path: Path) -> None:
    import tempfile

    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second filesystem to put the cache on")
    wheel = make_wheel(
        tmp_path / "w",
        "tool",
        "1.0",
        files={f"tool/m{i}.py": f"X = {i}\n" for i in range(5)},
        entry_points={"tool": "tool.m0:main"},
    )
    with tempfile.TemporaryDirectory(dir=shm) as other:
        venv = fresh(base_venv, tmp_path / "venv")
        env = inspect_environment(str(venv), {})
        install_wheels(
            env, [wheel_of(wheel)], unpacked=UnpackedCache(Path(other)), link_mode="hardlink"
        )
        site = Path(env.scheme["purelib"])
        for i in range(5):
            installed = site / "tool" / f"m{i}.py"
            assert installed.read_text() == f"X = {i}\n"
            assert installed.stat().st_nlink == 1, "a copy, not a link across filesystems"
        assert os.access(venv / "bin" / "tool", os.X_OK)


def _metadata_of(entry_folder: Path) -> Path:
    (metadata,) = (entry_folder / "files").glob("*.dist-info/METADATA")
    return metadata


def test_the_cached_metadata_is_checked_without_reading_the_archive(
    base_venv: Path, tmp_path: Path
) -> None:
    from fitwheel.install.place.resolved import NotAsResolvedError, Resolved
    from fitwheel.wheel.metadata import parse_installable_metadata

    wheel = make_wheel(tmp_path / "w", "tool", "1.0", requires=["dep>=1"])
    item = wheel_of(wheel)
    with UnpackedCache(tmp_path / "unpacked") as cache:
        entry = cache.get(wheel, sha256_of(wheel))
        own = _metadata_of(entry.folder).read_bytes()
    # the archive is gone: an install from the cache reads the unpacked tree only
    wheel.write_bytes(b"not a zip any more")
    lying = parse_installable_metadata(own.replace(b"dep>=1", b"dep>=2"), "index")
    told = WheelToInstall(
        item.path, item.name, item.version, sha256=item.sha256, resolved=Resolved(lying, "index")
    )
    venv = fresh(base_venv, tmp_path / "venv")
    env = inspect_environment(str(venv), {})

    def view() -> dict[str, str]:
        return {k: v for k, v in snapshot(venv).items() if not k.startswith(".fitwheel")}

    before = view()
    with (
        UnpackedCache(tmp_path / "unpacked") as cache,
        pytest.raises(NotAsResolvedError, match="Requires-Dist differs"),
    ):
        install_wheels(env, [told], unpacked=cache)
    assert view() == before
    honest = parse_installable_metadata(own, "index")
    told = WheelToInstall(
        item.path, item.name, item.version, sha256=item.sha256, resolved=Resolved(honest, "index")
    )
    with UnpackedCache(tmp_path / "unpacked") as cache:
        install_wheels(env, [told], unpacked=cache, link_mode="hardlink")
    site = Path(env.scheme["purelib"])
    assert (site / "tool-1.0.dist-info" / "METADATA").read_bytes() == own


@pytest.mark.parametrize("member", ["METADATA", "entry_points.txt"])
def test_a_cached_dist_info_file_changed_at_its_size_is_unpacked_again(
    base_venv: Path, tmp_path: Path, member: str
) -> None:
    wheel = make_wheel(
        tmp_path / "w", "tool", "1.0", requires=["dep>=1"], entry_points={"tool": "tool:main"}
    )
    with UnpackedCache(tmp_path / "unpacked") as cache:
        folder = cache.get(wheel, sha256_of(wheel)).folder
    target = _metadata_of(folder).with_name(member)
    original = target.read_bytes()
    changed = original.replace(b"dep>=1", b"dep>=9").replace(b"tool:main", b"tool:evil")
    assert changed != original and len(changed) == len(original)
    target.write_bytes(changed)  # as through a hard link from an environment: same size
    venv = fresh(base_venv, tmp_path / "venv")
    env = inspect_environment(str(venv), {})
    with UnpackedCache(tmp_path / "unpacked") as cache:
        install_wheels(env, [wheel_of(wheel)], unpacked=cache, link_mode="hardlink")
    site = Path(env.scheme["purelib"])
    assert (site / "tool-1.0.dist-info" / member).read_bytes() == original
    assert "from tool import main" in (venv / "bin" / "tool").read_text()
    assert target.read_bytes() == original  # the entry was unpacked afresh


def test_a_cached_metadata_too_large_to_read_is_checked_in_the_archive(
    base_venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fitwheel.install.cache import unpacked

    wheel = make_wheel(tmp_path / "w", "tool", "1.0")
    with UnpackedCache(tmp_path / "unpacked") as cache:
        cache.get(wheel, sha256_of(wheel))
    item = wheel_of(wheel)
    wheel.write_bytes(b"not a zip any more")
    env = inspect_environment(str(fresh(base_venv, tmp_path / "venv")), {})
    # the limit the wheel reader puts on a text member, made small: the archive is read then
    monkeypatch.setattr(unpacked, "TEXT_LIMIT", 10)
    with UnpackedCache(tmp_path / "unpacked") as cache, pytest.raises(InstallError, match="zip"):
        install_wheels(env, [item], unpacked=cache)
    monkeypatch.undo()
    with UnpackedCache(tmp_path / "unpacked") as cache:
        install_wheels(env, [item], unpacked=cache)
    assert (Path(env.scheme["purelib"]) / "tool-1.0.dist-info" / "METADATA").is_file()
